"""The README's screenshots: the script draws every view, and the README shows each."""

from __future__ import annotations

import importlib.util
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts/screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_readme_shows_a_committed_screenshot_of_every_view() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\((docs/images/[a-z_]+\.png)\)", readme))
    expected = {f"docs/images/{name}_view.png" for name in _script().VIEWS}
    assert expected <= shown, f"README lacks {sorted(expected - shown)}"
    for relative in expected:
        width, height = _png_size(ROOT / relative)
        assert width >= 300 and height >= 100, f"{relative} is {width}×{height}"


@pytest.mark.parametrize("name", ["saliency", "flow"])
def test_script_draws_a_view_from_the_demo_models(tmp_path: Path, name: str) -> None:
    from PIL import Image

    # In its own process, as a user runs it: Playwright's sync API refuses to
    # start inside the event loop that the browser tests' fixtures keep running.
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/screenshots.py"), "--only", name, "--out", tmp_path],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = sorted(tmp_path.glob("*.png"))
    assert written == [tmp_path / f"{name}_view.png"], done.stdout
    pixels = np.asarray(Image.open(written[0]).convert("RGB"), dtype=np.int16)
    # A drawn view, not a blank box: many colours, and the viridis/orange marks.
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
    assert pixels.std() > 20
