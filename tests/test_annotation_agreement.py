"""attnwidget.annotations.agreement: annotators' agreement over a real SQLite Store.

Hand-computed cases (the arithmetic in the comments), then the same figures
against scikit-learn's ``cohen_kappa_score`` / ``f1_score`` and
``krippendorff.alpha`` called directly here, then the bootstrap, the
filters and the refusals.
"""

from __future__ import annotations

import inspect
import itertools
import math
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from attnwidget.annotations import Store, agreement
from attnwidget.annotations.annotator_agreement import _from_counts
from attnwidget.errors import InputError
from attnwidget.metrics import cohen_kappa, token_prf


def save(store: Store, item: str, who: str, spans: list, label: str | None = None, **extra) -> None:
    """A save through the public API; an empty rationale is explicit no-evidence where
    the store asks for it (schema 3 on)."""
    if not spans and "no_evidence" in inspect.signature(store.save).parameters:
        extra["no_evidence"] = True
    store.save(item, annotator=who, spans=spans, label=label, **extra)


@pytest.fixture
def two(tmp_path: Path) -> Store:
    s = Store(tmp_path / "two.sqlite")
    s.add_items([{"id": "i1", "text": "a b c d"}, {"id": "i2", "text": "e f g h"}])
    save(s, "i1", "ana", [(0, 2)], "pos")  # 1 1 0 0
    save(s, "i1", "ben", [(1, 3)], "pos")  # 0 1 1 0
    save(s, "i2", "ana", [(2, 4)], "pos")  # 0 0 1 1
    save(s, "i2", "ben", [(2, 4)], "neg")  # 0 0 1 1
    yield s
    s.close()


def test_hand_computed_pair(two: Store) -> None:
    result = agreement(two, n_resamples=50)
    row = result.overall.loc["ana vs ben"]
    # Pooled words: ana 1100 0011, ben 0110 0011 -> n11 = 3, n10 = 1, n01 = 1, n00 = 3 (n = 8).
    # κ: p_o = (3 + 3) / 8 = 0.75; each marks 4 of 8, p_e = .5·.5 + .5·.5 = .5;
    #    κ = (.75 − .5) / (1 − .5) = 0.5.
    assert row["cohen_kappa"] == pytest.approx(0.5)
    # Token F1 = 2·3 / (4 + 4) = 0.75.
    assert row["token_f1"] == pytest.approx(0.75)
    # IOU-F1: i1 (0,2) vs (1,3): overlap 1, union 3, IOU 1/3 < .5: no match; i2 identical:
    #    a match. F1 = 2·1 / (2 + 2) = 0.5.
    assert row["iou_f1"] == pytest.approx(0.5)
    # Labels: i1 pos/pos, i2 pos/neg -> 1 of 2.
    assert row["label_agreement"] == pytest.approx(0.5)
    # α (nominal, 2 coders, 8 units): coincidences o00 = 2·3 = 6, o11 = 6, o01 = o10 = 1 + 1 = 2;
    #    n0 = n1 = 8, n = 16; α = 1 − (n − 1)·(o01 + o10) / (2·n0·n1) = 1 − 15·4/128 = 0.53125.
    assert row["krippendorff_alpha"] == pytest.approx(0.53125)
    assert row["n_items"] == 2
    # Two annotators: "all" is the pair (a mean of one figure; α over the same two).
    assert result.overall.loc["all", "cohen_kappa"] == pytest.approx(0.5)
    assert result.overall.loc["all", "krippendorff_alpha"] == pytest.approx(0.53125)


def test_hand_computed_per_item(two: Store) -> None:
    items = agreement(two, n_resamples=10).per_item.set_index("item_id")
    # i1: 1100 vs 0110: n11 = n10 = n01 = n00 = 1: p_o = .5, p_e = .5 -> κ = 0;
    #     F1 = 2·1 / (2 + 2) = .5; the one span pair has IOU 1/3: IOU-F1 0.
    # α: o00 = 2, o11 = 2, o01 = o10 = 2; n0 = n1 = 4, n = 8: 1 − 7·4 / (2·16) = 0.125.
    assert items.loc["i1", ["cohen_kappa", "token_f1", "iou_f1"]].tolist() == [0, 0.5, 0]
    assert items.loc["i1", "krippendorff_alpha"] == pytest.approx(0.125)
    assert bool(items.loc["i1", "same_label"]) is True
    # i2: identical: κ = (1 − .5) / .5 = 1, F1 = IOU-F1 = 1, α = 1 (no disagreement).
    assert items.loc["i2", ["cohen_kappa", "token_f1", "iou_f1"]].tolist() == [1, 1, 1]
    assert items.loc["i2", "krippendorff_alpha"] == pytest.approx(1.0)
    assert bool(items.loc["i2", "same_label"]) is False


def random_store(path: Path, seed: int = 1) -> Store:
    rng = np.random.default_rng(seed)
    s = Store(path, labels=["pos", "neg"])
    lengths = rng.integers(4, 12, 14)
    s.add_items([{"id": f"t{k}", "text": " ".join(["w"] * n)} for k, n in enumerate(lengths)])
    for who in ("ana", "ben", "cy"):
        for k, n in enumerate(lengths):
            if (who, k % 5) in {("cy", 0), ("ben", 3)}:
                continue  # missing: not annotated
            start = int(rng.integers(0, n - 1))
            end = int(rng.integers(start + 1, n + 1))
            spans = [] if rng.random() < 0.15 else [(start, end)]
            save(s, f"t{k}", who, spans, str(rng.choice(["pos", "neg"])))
    return s


def test_against_sklearn_and_krippendorff(tmp_path: Path) -> None:
    store = random_store(tmp_path / "r.sqlite")
    result = agreement(store, n_resamples=20)
    vectors = {
        (item.id, who): store.rationale(item.id, annotator=who)
        for item in store.items()
        for who in ("ana", "ben", "cy")
    }
    labels = {(r.item_id, r.annotator): r.label for r in store.to_dataframe().itertuples()}
    ids = [item.id for item in store.items()]
    for a, b in itertools.combinations(("ana", "ben", "cy"), 2):
        common = [i for i in ids if vectors[i, a] is not None and vectors[i, b] is not None]
        va = np.concatenate([vectors[i, a] for i in common])
        vb = np.concatenate([vectors[i, b] for i in common])
        row = result.overall.loc[f"{a} vs {b}"]
        assert row["n_items"] == len(common)
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(va, vb))
        assert row["token_f1"] == pytest.approx(f1_score(vb, va))
        direct = krippendorff.alpha(reliability_data=np.stack([va, vb]).astype(float))
        assert row["krippendorff_alpha"] == pytest.approx(direct)
        same = [labels[i, a] == labels[i, b] for i in common]
        assert row["label_agreement"] == pytest.approx(np.mean(same))
        per = result.per_item[
            (result.per_item.annotator_a == a) & (result.per_item.annotator_b == b)
        ].set_index("item_id")
        for i in common:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # sklearn warns where κ is 0/0
                expected = cohen_kappa_score(vectors[i, a], vectors[i, b])
            got = per.loc[i, "cohen_kappa"]
            assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)
            expected_f1 = f1_score(vectors[i, b], vectors[i, a], zero_division=1.0)
            assert per.loc[i, "token_f1"] == pytest.approx(expected_f1)
    # "all": α over the three, words of items an annotator skipped missing (NaN).
    blocks = []
    for i in ids:
        n = len(store.item(i).words)
        block = [
            vectors[i, w] if vectors[i, w] is not None else np.full(n, np.nan)
            for w in ("ana", "ben", "cy")
        ]
        blocks.append(np.stack(block).astype(float))
    matrix = np.concatenate(blocks, axis=1)
    assert result.overall.loc["all", "krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    )
    pairs = result.overall.drop(index="all")
    assert result.overall.loc["all", "token_f1"] == pytest.approx(pairs["token_f1"].mean())
    store.close()


def test_bootstrap_counts_match_the_metric_functions() -> None:
    # The bootstrap sums each item's 2×2 counts; the figures from those sums are
    # cohen_kappa's and token_prf's on the words put end to end.
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.random(30) < 0.4, rng.random(30) < 0.5
        counts = np.array([[(a & b).sum(), (a & ~b).sum(), (~a & b).sum(), (~a & ~b).sum()]])
        kappa, f1, _, _ = _from_counts(np.hstack([counts, np.zeros((1, 5))]))[0]
        assert kappa == pytest.approx(cohen_kappa(a.tolist(), b.tolist()))
        assert f1 == pytest.approx(token_prf(a, b).f1)


def test_intervals_resample_items_and_repeat_with_the_seed(tmp_path: Path) -> None:
    store = random_store(tmp_path / "r.sqlite")
    first = agreement(store, n_resamples=200, seed=7)
    again = agreement(store, n_resamples=200, seed=7)
    assert first.overall.equals(again.overall)
    for metric in ("cohen_kappa", "token_f1", "iou_f1", "krippendorff_alpha"):
        for pair, row in first.overall.iterrows():
            assert row[f"{metric}_low"] <= row[metric] + 1e-9 <= row[f"{metric}_high"] + 2e-9, pair
    other = agreement(store, n_resamples=200, seed=8).overall
    assert not other["cohen_kappa_low"].equals(first.overall["cohen_kappa_low"])
    store.close()


def test_identical_annotators_have_a_point_interval(tmp_path: Path) -> None:
    s = Store(tmp_path / "same.sqlite")
    s.add_items([{"id": f"i{k}", "text": "one two three four"} for k in range(5)])
    for k in range(5):
        for who in ("ana", "ben"):
            save(s, f"i{k}", who, [(k % 3, k % 3 + 1)], "x")
    row = agreement(s, n_resamples=100).overall.loc["ana vs ben"]
    for metric in ("cohen_kappa", "token_f1", "iou_f1", "label_agreement", "krippendorff_alpha"):
        assert row[metric] == row[f"{metric}_low"] == row[f"{metric}_high"] == 1.0


def test_missing_is_not_no_evidence(tmp_path: Path) -> None:
    s = Store(tmp_path / "m.sqlite")
    s.add_items([{"id": "i1", "text": "a b c"}, {"id": "i2", "text": "d e f"}])
    save(s, "i1", "ana", [(0, 1)])
    save(s, "i1", "ben", [(0, 1)])
    save(s, "i2", "ana", [])  # ana saw i2 and marked nothing; ben never did i2
    result = agreement(s, n_resamples=10)
    assert result.overall.loc["ana vs ben", "n_items"] == 1
    assert result.overall.loc["ana vs ben", "cohen_kappa"] == pytest.approx(1.0)
    save(s, "i2", "ben", [(1, 2)])  # now both did i2: ana's no-evidence is all zeros
    items = agreement(s, n_resamples=10).per_item.set_index("item_id")
    assert items.loc["i2", "token_f1"] == 0.0 and items.loc["i2", "iou_f1"] == 0.0
    s.close()


@pytest.mark.skipif(
    "suggestion_shown" not in inspect.signature(Store.save).parameters,
    reason="this store does not record suggestions yet (schema 3)",
)
def test_include_suggested_splits_the_annotations(tmp_path: Path) -> None:
    s = Store(tmp_path / "s.sqlite")
    s.add_items([{"id": f"i{k}", "text": "a b c d"} for k in range(4)])
    for k in range(4):
        shown = "rollout" if k < 2 else None
        save(s, f"i{k}", "ana", [(0, 2)], suggestion_shown=shown)
        save(s, f"i{k}", "ben", [(0, 2)] if k < 2 else [(2, 4)], suggestion_shown=shown)
    assert agreement(s, n_resamples=5).overall.loc["all", "n_items"] == 4
    shown = agreement(s, n_resamples=5, include_suggested=True).overall.loc["ana vs ben"]
    hidden = agreement(s, n_resamples=5, include_suggested=False).overall.loc["ana vs ben"]
    assert shown["n_items"] == 2 and shown["token_f1"] == 1.0
    assert hidden["n_items"] == 2 and hidden["token_f1"] == 0.0
    s.close()


def test_refusals(tmp_path: Path, two: Store) -> None:
    with pytest.raises(InputError, match="holds no items"):
        agreement(Store(tmp_path / "empty.sqlite"))
    with pytest.raises(InputError, match=r"\['zoe'\] have saved nothing.*\['ana', 'ben'\]"):
        agreement(two, annotators=["ana", "zoe"])
    with pytest.raises(InputError, match="at least two annotators"):
        agreement(two, annotators=["ana"])
    with pytest.raises(InputError, match="list of annotator names"):
        agreement(two, annotators="ana")
    with pytest.raises(InputError, match="not in the store"):
        agreement(two, items=["nope"])
    with pytest.raises(InputError, match="confidence"):
        agreement(two, confidence=1.5)
    with pytest.raises(InputError, match="n_resamples"):
        agreement(two, n_resamples=0)
    lonely = Store(tmp_path / "one.sqlite")
    lonely.add_items([{"id": "i", "text": "a b"}])
    save(lonely, "i", "ana", [(0, 1)])
    with pytest.raises(InputError, match="at least two annotators"):
        agreement(lonely)


def test_items_filter(two: Store) -> None:
    result = agreement(two, items=["i2"], n_resamples=10)
    assert result.per_item["item_id"].tolist() == ["i2"]
    assert result.overall.loc["ana vs ben", "token_f1"] == 1.0
