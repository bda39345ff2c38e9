"""attnwidget.evaluate on the shipped demo encoder: values recomputed by hand from the
model, the summary's intervals, refusals, data forms, rationales, resuming."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import attnwidget
from attnwidget import demo
from attnwidget.annotations import Store
from attnwidget.errors import InputError, UnknownMethodError
from attnwidget.evaluation import FAITHFULNESS, PLAUSIBILITY, evaluate, executors
from attnwidget.evaluation.results_file import ResultsFile

METHODS = ["rollout", "input_x_gradient"]
ALL_METRICS = [*FAITHFULNESS, *PLAUSIBILITY]


@pytest.fixture(scope="module")
def encoder():
    return demo.load("sva-encoder")


@pytest.fixture(scope="module")
def sentences():
    return demo.sentences(6, seed=3)


def _data(sentences):
    return [{"id": f"s{i}", "text": s.text, "label": s.label} for i, s in enumerate(sentences)]


def _subject_words(sentences):
    """One word rationale per sentence: its subject's head noun ([CLS] is token 0)."""
    out = []
    for s in sentences:
        words = np.zeros(len(s.text.split()), dtype=int)
        words[s.subject_index - 1] = 1
        out.append(words)
    return out


@pytest.fixture(scope="module")
def full(encoder, sentences):
    model, tokenizer = encoder
    return evaluate(
        model,
        tokenizer,
        _data(sentences),
        methods=METHODS,
        metrics=ALL_METRICS,
        rationales=_subject_words(sentences),
        batch_size=4,
        progress=False,
    )


# -- by hand -----------------------------------------------------------------


def _probabilities(model, rows):
    with torch.no_grad():
        return model(input_ids=torch.as_tensor(np.asarray(rows))).logits.softmax(-1).numpy()


def _trapezoid(values):
    x = np.arange(len(values)) / 10
    return float(sum((values[i] + values[i + 1]) / 2 * (x[i + 1] - x[i]) for i in range(9)) * 100)


def test_every_metric_of_one_example_by_hand(encoder, sentences, full) -> None:
    model, tokenizer = encoder
    sentence = sentences[1]
    ids = np.array(tokenizer(sentence.text)["input_ids"])
    n = ids.size
    words = list(range(1, n - 1))  # not [CLS], not [SEP]
    target = int(_probabilities(model, [ids])[0].argmax())
    unk = tokenizer.unk_token_id
    human = np.zeros(n, dtype=bool)
    human[sentence.subject_index] = True
    for method in METHODS:
        scores = full.scores("s1")[method].astype(np.float64)
        row = full.per_example.query("id == 's1' and method == @method").iloc[0]
        assert row["target"] == model.config.id2label[target]
        ranked = sorted(words, key=lambda j: (-scores[j], j))  # highest first, ties by position

        def prob(removed, *, ids=ids):
            blanked = ids.copy()
            blanked[list(removed)] = unk
            return float(_probabilities(model, [blanked])[0, target])

        full_p = prob([])
        comp, suff = [], []
        for fraction in (0.01, 0.05, 0.1, 0.2, 0.5):
            top = ranked[: math.ceil(round(fraction * len(words), 9))]
            comp.append(full_p - prob(top))
            suff.append(full_p - prob([j for j in words if j not in top]))
        assert row["comprehensiveness_aopc"] == pytest.approx(np.mean(comp), abs=2e-6)
        assert row["sufficiency_aopc"] == pytest.approx(np.mean(suff), abs=2e-6)

        for order, name in ((ranked, "pos"), (sorted(words, key=lambda j: (scores[j], j)), "neg")):
            kept, probability = [], []
            for step in range(10):
                blanked = ids.copy()
                blanked[order[: round(step / 10 * len(words))]] = unk
                p = _probabilities(model, [blanked])[0]
                kept.append(float(p.argmax() == target))
                probability.append(float(p[target]))
            assert row[f"perturbation_auc_{name}"] == pytest.approx(_trapezoid(kept), abs=1e-9)
            assert row[f"perturbation_prob_auc_{name}"] == pytest.approx(
                _trapezoid(probability), abs=1e-4
            )

        # Plausibility: k = 1 (every human rationale is one token); the top positive word.
        top = ranked[0] if scores[ranked[0]] > 0 else None
        hit = top == sentence.subject_index
        assert row["token_f1"] == (1.0 if hit else 0.0)
        assert row["iou_f1"] == (1.0 if hit else 0.0)
        # One human token: AP is 1 / (its rank), the rank of a tie group being its last place.
        subject = scores[sentence.subject_index]
        rank = sum(scores[j] >= subject for j in words)
        assert row["auprc"] == pytest.approx(1 / rank)


def test_summary_is_the_mean_with_an_interval_around_it(full) -> None:
    summary = full.summary
    assert list(summary.index.names) == ["method", "metric"]
    assert len(summary) == len(METHODS) * len(ALL_METRICS)
    means = full.per_example.groupby("method")[ALL_METRICS].mean()
    for (method, metric), row in summary.iterrows():
        assert row["low"] <= row["mean"] <= row["high"]
        assert row["count"] + row["dropped"] == 6
        assert row["mean"] == pytest.approx(means.loc[method, metric])
    assert full.table().shape == (len(METHODS), len(ALL_METRICS))
    assert list(full.per_example.columns[:4]) == ["id", "method", "target", "probability"]
    assert len(full.per_example) == 6 * len(METHODS)


def test_unknown_names_are_refused_with_the_valid_ones(encoder) -> None:
    model, tokenizer = encoder
    with pytest.raises(InputError, match="valid metrics: comprehensiveness_aopc"):
        evaluate(model, tokenizer, ["the keys"], methods=["raw"], metrics=["compre"])
    with pytest.raises(UnknownMethodError):
        evaluate(model, tokenizer, ["the keys"], methods=["rawr"], metrics=["auprc"])
    with pytest.raises(InputError, match="rationales="):
        evaluate(model, tokenizer, ["the keys"], methods=["raw"], metrics=["token_f1"])
    with pytest.raises(InputError, match="executor"):
        evaluate(
            model,
            tokenizer,
            ["the keys"],
            methods=["raw"],
            metrics=["sufficiency_aopc"],
            executor="x",
        )
    with pytest.raises(InputError, match="rationale_k"):
        evaluate(
            model,
            tokenizer,
            ["the keys"],
            methods=["raw"],
            metrics=["token_f1"],
            rationales=[[0, 1]],
            rationale_k=-1,
        )
    with pytest.raises(InputError, match="share the id"):
        evaluate(
            model,
            tokenizer,
            [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}],
            methods=["raw"],
            metrics=["sufficiency_aopc"],
        )


def test_data_forms_give_the_same_numbers(encoder, sentences) -> None:
    datasets = pytest.importorskip("datasets")
    model, tokenizer = encoder
    rows = _data(sentences[:3])
    options = {"methods": ["raw"], "metrics": ["comprehensiveness_aopc"], "progress": False}
    frames = [
        evaluate(model, tokenizer, data, **options).per_example
        for data in (rows, pd.DataFrame(rows), datasets.Dataset.from_list(rows))
    ]
    texts = evaluate(model, tokenizer, [r["text"] for r in rows], **options).per_example
    assert list(texts["id"]) == ["0", "1", "2"]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0], check_exact=True)
    metric = "comprehensiveness_aopc"
    assert texts[metric].tolist() == frames[0][metric].tolist()


def test_label_target_and_store_rationales(encoder, sentences, full, tmp_path) -> None:
    model, tokenizer = encoder
    with Store(tmp_path / "rationales.sqlite") as store:
        store.add_items(_data(sentences))
        for i, s in enumerate(sentences):
            store.save(f"s{i}", annotator="ana", spans=[(s.subject_index - 1, s.subject_index)])
        from_store = evaluate(
            model,
            tokenizer,
            store,
            methods=METHODS,
            metrics=list(PLAUSIBILITY),
            rationales=(store, "ana"),
            batch_size=4,
            target="label",
            progress=False,
        )
    # The demo model gets these right, so the label is the prediction.
    assert from_store.per_example["target"].tolist() == full.per_example["target"].tolist()
    for metric in PLAUSIBILITY:
        assert from_store.per_example[metric].tolist() == full.per_example[metric].tolist()


def test_explanations_from_stored_scores_or_the_model(full) -> None:
    stored = full.explanation("s2", reexplain=False)
    assert stored.num_layers == 0
    for method in METHODS:
        np.testing.assert_array_equal(stored.scores[method], full.scores("s2")[method])
    again = full.explanation("s2")
    assert again.num_layers == 4 and again.tokens == stored.tokens
    for method in METHODS:
        np.testing.assert_allclose(again.scores[method], stored.scores[method], atol=1e-5)
    worst = full.examples_for("rollout", "comprehensiveness_aopc")
    assert worst["comprehensiveness_aopc"].is_monotonic_increasing


def test_progress_bars_can_be_silenced(encoder, capsys) -> None:
    model, tokenizer = encoder
    options = {"methods": ["raw"], "metrics": ["sufficiency_aopc"]}
    evaluate(model, tokenizer, ["the keys to the cabinet"], progress=False, **options)
    assert capsys.readouterr().err == ""
    evaluate(model, tokenizer, ["the keys to the cabinet"], progress=True, **options)
    assert "evaluate" in capsys.readouterr().err


# -- resuming ------------------------------------------------------------------

RESUME = {"methods": METHODS, "metrics": list(FAITHFULNESS), "batch_size": 2, "progress": False}


def _counting(monkeypatch):
    computed = []
    original = executors.compute_chunk

    def counting(model, tokenizer, plan, task):
        computed.append(task.index)
        return original(model, tokenizer, plan, task)

    monkeypatch.setattr(executors, "compute_chunk", counting)
    return computed


def test_an_interrupted_run_resumes_with_the_rest(encoder, sentences, tmp_path, monkeypatch):
    model, tokenizer = encoder
    data = _data(sentences)
    uninterrupted = evaluate(model, tokenizer, data, **RESUME)
    path = tmp_path / "results.sqlite"
    original = ResultsFile.write
    writes = []

    def write_then_stop(self, result, digests):
        original(self, result, digests)
        writes.append(result.index)
        if len(writes) == 2:
            raise KeyboardInterrupt  # as a user interrupting the kernel

    monkeypatch.setattr(ResultsFile, "write", write_then_stop)
    with pytest.raises(KeyboardInterrupt):
        evaluate(model, tokenizer, data, store=path, **RESUME)
    monkeypatch.setattr(ResultsFile, "write", original)
    computed = _counting(monkeypatch)
    resumed = evaluate(model, tokenizer, data, store=path, **RESUME)
    assert (resumed.n_loaded, resumed.n_computed) == (4, 2)
    assert computed == [2]  # chunks 0 and 1 came from the file
    pd.testing.assert_frame_equal(resumed.per_example, uninterrupted.per_example, check_exact=True)
    pd.testing.assert_frame_equal(resumed.summary, uninterrupted.summary, check_exact=True)
    computed.clear()
    again = evaluate(model, tokenizer, data, store=path, **RESUME)
    assert computed == [] and again.n_loaded == 6
    pd.testing.assert_frame_equal(again.per_example, uninterrupted.per_example, check_exact=True)
    with pytest.raises(InputError, match="differs in: methods"):
        evaluate(model, tokenizer, data, store=path, **{**RESUME, "methods": ["raw"]})
    changed = [dict(d) for d in data]
    changed[0]["text"] = "the keys to the cabinet"
    with pytest.raises(InputError, match="changed"):
        evaluate(model, tokenizer, changed, store=path, **RESUME)


KILLED = """
import os, signal
from attnwidget import demo
from attnwidget.evaluation import FAITHFULNESS, evaluate
from attnwidget.evaluation.results_file import ResultsFile

original, writes = ResultsFile.write, []

def write_then_die(self, result, digests):
    original(self, result, digests)
    writes.append(result.index)
    if len(writes) == 2:
        os.kill(os.getpid(), signal.SIGKILL)

ResultsFile.write = write_then_die
model, tokenizer = demo.load("sva-encoder")
data = [{{"id": f"s{{i}}", "text": s.text, "label": s.label}}
        for i, s in enumerate(demo.sentences(6, seed=3))]
evaluate(model, tokenizer, data, store={path!r}, methods={methods!r},
         metrics=list(FAITHFULNESS), batch_size=2, progress=False)
"""


def test_a_killed_process_resumes_with_the_rest(encoder, sentences, tmp_path, monkeypatch):
    model, tokenizer = encoder
    data = _data(sentences)
    path = tmp_path / "killed.sqlite"
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(KILLED.format(path=str(path), methods=METHODS)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, timeout=300)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    computed = _counting(monkeypatch)
    resumed = evaluate(model, tokenizer, data, store=path, **RESUME)
    assert (resumed.n_loaded, resumed.n_computed) == (4, 2) and computed == [2]
    uninterrupted = evaluate(model, tokenizer, data, **RESUME)
    pd.testing.assert_frame_equal(resumed.per_example, uninterrupted.per_example, check_exact=True)


def test_lazy_top_level_names() -> None:
    assert attnwidget.evaluate is evaluate
    assert attnwidget.EvaluationResult.__name__ == "EvaluationResult"
    assert Path(attnwidget.evaluation.__file__).name == "__init__.py"
