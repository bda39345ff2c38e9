"""notebooks/teaching/: each lesson executed offline, its printed numbers checked.

The lessons print what their text says; these tests read those numbers from
the executed page, so a lesson whose claim stops being true fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_notebook import Run, ok, outside_urls, run_notebook

TEACHING = Path(__file__).resolve().parent.parent / "notebooks" / "teaching"
LESSONS = {
    "scratch": "01_attention_from_scratch.ipynb",
    "seq2seq": "02_classic_seq2seq_alignments.ipynb",
    "heads": "03_heads_and_layers.ipynb",
    "explain": "04_from_attention_to_explanation.ipynb",
    "lab": "05_is_attention_explanation.ipynb",
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("teaching")
    runs: dict[str, Run] = {
        key: run_notebook(TEACHING / name, out / f"{key}.html") for key, name in LESSONS.items()
    }
    return {key: ok(run) for key, run in runs.items()}


def floats(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", text)]


def test_every_lesson_runs_offline(pages: dict[str, str]) -> None:
    for key, page in pages.items():
        assert outside_urls(page) == [], key


def test_lesson_1_prints_what_it_explains(pages: dict[str, str]) -> None:
    page = pages["scratch"]
    dot = re.search(r"dot: scores \[2\. 0\. 1\.\] -&gt; weights \[([^\]]+)\]", page)
    general = re.search(r"general: scores \[2\. 0\. 1\.\] -&gt; weights \[([^\]]+)\]", page)
    assert dot and general and dot.group(1) == general.group(1)  # qᵀIk = q·k
    largest = [float(x) for x in re.findall(r"largest (\d\.\d{3})", page)]
    assert len(largest) == 3 and largest[0] > largest[1] > largest[2]  # T sharpens/flattens
    assert 'data-attnwidget-view="calculator"' in page


def test_lesson_2_measures_every_score_function(pages: dict[str, str]) -> None:
    page = pages["seq2seq"]
    rows = re.findall(r"([\w-]+): exact match (\d+)%, largest weight on the mirrored input", page)
    kinds = [kind for kind, _ in rows]
    assert kinds == ["dot", "general", "additive", "location", "scaled_dot", "cosine", "local-p"]
    # The shipped models' promise. Measured here: 98-100 of the 100 (cosine and local-p
    # 98). The weakest on 1,000 (demo-models page) is scaled_dot at 98.5 %: 1.5 ± 1.2 errors of
    # 100 (binomial sd) against the 5 that 95 allows, 2.9 sd away.
    assert all(int(exact) >= 95 for _, exact in rows), rows
    nonzero = re.search(r"nonzero weights per step: \[([\d ]+)\]", page)
    assert nonzero and max(floats(nonzero.group(1))) <= 5  # window 2D + 1 = 5
    assert 'data-attnwidget-view="alignment"' in page


def test_lesson_3_neuron_view_equals_the_model(pages: dict[str, str]) -> None:
    page = pages["heads"]
    ours = re.search(r"weights over the keys: \[([^\]]+)\]", page)
    model = re.search(r"from output_attentions: \[([^\]]+)\]", page)
    assert ours and model and floats(ours.group(1)) == floats(model.group(1))
    for view in ("neuron", "head", "model"):
        assert f'data-attnwidget-view="{view}"' in page, view


def test_lesson_4_compares_the_methods(pages: dict[str, str]) -> None:
    shares = dict(re.findall(r"(\w+): top word is the subject in (\d+)% of 50", pages["explain"]))
    assert set(shares) == {"raw", "rollout", "lrp", "chefer2021"}
    assert int(shares["rollout"]) > int(shares["raw"])  # what the lesson's text claims


def test_lesson_5_runs_the_lab(pages: dict[str, str]) -> None:
    page = pages["lab"]
    assert "Kendall τ" in page and "Uniform attention in layers 0, 1, 2, 3" in page
    erase = re.search(
        r"flip rate \(top attention\)\s+([\d.]+)\s+flip rate \(random word\)\s+([\d.e-]+)", page
    )
    assert erase and float(erase.group(1)) > float(erase.group(2))
    gaps = [float(x) for x in re.findall(r"largest \|raw - effective\| = ([\d.]+)", page)]
    assert len(gaps) == 2 and gaps[0] < 1e-4 < gaps[1]  # empty null space, then not
    rows = dict(
        re.findall(r"(sva-\w+): accuracy [\d.]+%; top word is the subject: raw (\d+)%", page)
    )
    assert int(rows["sva-deceptive"]) < int(rows["sva-encoder"])
    adversarial = re.search(r"Adversarial attention.*?mean JSD\s+([\d.]+)", page, re.S)
    # Beyond the seeds' spread: 0.095 is the mean last-layer JSD between sva-encoder and
    # two retrains (bench/seeds.py, README), the baseline Wiegreffe & Pinter (2019) ask an
    # adversary to beat. Measured here: mean 0.510 over the 4 sentences (each 0.48-0.56;
    # 0.53 on 20, README), five times the bound; ln 2 ≈ 0.693 is the ceiling.
    assert adversarial and float(adversarial.group(1)) > 0.095
    guided = dict(re.findall(r"accuracy, (\w+) weights\s+([\d.]+)", page))
    assert float(guided["frozen"]) > float(guided["uniform"]), guided
