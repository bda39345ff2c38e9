"""notebooks/images.ipynb, the images tour: executed offline, every view drawn in the page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_notebook import Run, ok, outside_urls, run_notebook

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "notebooks" / "images.ipynb"


@pytest.fixture(scope="module")
def images_tour(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_notebook(IMAGES, tmp_path_factory.mktemp("images") / "images.html")


def _outputs(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_the_tour_runs_offline_and_prints_what_it_measures(images_tour: Run) -> None:
    page = ok(images_tour)
    assert outside_urls(page) == []
    # The numbers the text promises are printed: the prediction, each method's
    # share of top pixels on the target, the segmentation scores.
    assert re.search(r"predicted: \w+ \(p = [01]\.\d{3}\)", page)
    assert len(re.findall(r"top-10% pixels on the target: \d+%", page)) == 9
    assert len(re.findall(r"pixel acc \d+\.\d%  mIoU \d+\.\d%  mAP \d+\.\d%", page)) == 3
    assert 'demo.load("shapes-vit")' in _outputs(IMAGES)


@pytest.mark.browser
def test_the_tour_page_draws_its_image_view_offline(images_tour: Run, open_page: Any) -> None:
    page_text = ok(images_tour)
    assert page_text.count('data-attnwidget-view="image"') == 1
    watch = open_page(images_tour.out)
    page = watch.page
    page.locator(".attnw-imageview[data-state=ready]").first.wait_for(timeout=30_000)
    # The notebook set method and selected patch after showing the view.
    root = page.locator(".attnw-imageview").first
    assert root.get_attribute("data-method") == "chefer2021"
    assert page.locator(".attnw-error").count() == 0
    watch.assert_clean()
