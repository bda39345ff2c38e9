"""Schema 4: notes on heads and edges, rating sessions and answers, rating_summary.

The v3 -> v4 migration runs on a schema-3 store built here (the current code
with the migration list cut at v3, writing items, annotations, revisions,
adjudications and assignments); everything in it is kept bit for bit and
``PRAGMA integrity_check`` passes. rating_summary is checked against numbers
worked out by hand and its α against the ``krippendorff`` package.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from attnwidget.annotations import (
    SCHEMA_VERSION,
    Store,
    _schema,
    input_hash,
    plan_trials,
    rating_summary,
)
from attnwidget.errors import InputError
from attnwidget.metrics import bootstrap_ci


def fresh(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    tables = [n for (n,) in fresh(path, "SELECT name FROM sqlite_master WHERE type='table'")]
    return {name: sorted(fresh(path, f"SELECT * FROM {name}"), key=repr) for name in tables}


def write_v3(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(_schema, "MIGRATIONS", _schema.MIGRATIONS[:2])
        patch.setattr(_schema, "SCHEMA_VERSION", 3)
        with Store(path, labels=["pos", "neg"]) as store:
            store.add_items(
                [{"id": "a", "text": "a truly great film"}, {"id": "b", "text": "dull"}]
            )
            store.save("a", annotator="ana", spans=[(1, 3)], label="pos", note="n")
            store.save("a", annotator="ana", spans=[(2, 4)], label="pos")
            store.save("a", annotator="bob", char_spans=[(8, 13)], label="pos")
            store.save("b", annotator="bob", spans=[], no_evidence=True)
            store.revert("a", "ana", to_revision=1)
            store.adjudicate("a", sources=["ana", "bob"], rule="union")
            store.assign(["ana", "bob"], overlap=1, seed=3)
    assert fresh(path, "PRAGMA user_version") == [(3,)]


def test_a_v3_store_is_migrated_to_v4_losing_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v3.sqlite"
    write_v3(path, monkeypatch)
    before = dump(path)
    assert "head_notes" not in before and "ratings" not in before
    with pytest.raises(InputError, match="never migrated"):
        Store(path, read_only=True)
    assert fresh(path, "PRAGMA user_version") == [(3,)] and dump(path) == before
    with Store(path) as store:
        assert store.load("a", annotator="ana").revision == 3
        store.save_head_note("m", layer=0, head=1, tokens=["x"], role="r", annotator="ana")
    after = dump(path)
    assert SCHEMA_VERSION == 4 and fresh(path, "PRAGMA user_version") == [(4,)]
    assert {k: v for k, v in after.items() if k in before} == before  # bit for bit
    assert set(after) - set(before) == {"head_notes", "rating_sessions", "ratings"}
    assert fresh(path, "PRAGMA integrity_check") == [("ok",)]
    assert fresh(path, "PRAGMA foreign_key_check") == []
    with Store(path, read_only=True) as store:  # a v4 store opens read-only
        assert len(store.head_notes("m")) == 1


def test_head_and_edge_notes_are_kept_and_listed(tmp_path: Path) -> None:
    tokens = ["[CLS]", "the", "cat", "[SEP]"]
    with Store(tmp_path / "s.sqlite") as store:
        store.save_head_note("bert", layer=2, head=5, tokens=tokens, role="previous-token head",
                             annotator="ana")  # fmt: skip
        store.save_head_note("bert", layer=2, head=5, tokens=tokens, role="previous-token head",
                             note="checked on 3 inputs", annotator="ana")  # fmt: skip
        store.save_head_note("bert", layer=1, edge=(2, 1), tokens=tokens, note="cat -> the",
                             annotator="bob")  # fmt: skip
        store.save_head_note("gpt2", layer=0, head=0, tokens=["hi"], role="sink", annotator="ana")
        notes = store.head_notes("bert")
        assert list(notes["kind"]) == ["head", "edge"]
        assert notes.loc[0, "note"] == "checked on 3 inputs" and notes.loc[0, "head"] == 5
        assert notes.loc[1, ["from_token", "to_token"]].tolist() == [2, 1]
        assert notes.loc[1, "input_hash"] == input_hash(tokens)
        assert notes.loc[1, "input_text"] == "[CLS] the cat [SEP]"
        assert len(store.head_notes("bert", latest=False)) == 3
        assert len(store.head_notes()) == 3
        for bad in (
            {"head": 1, "edge": (0, 1)},
            {},
            {"head": -1},
            {"edge": (0, 9)},
        ):
            with pytest.raises(InputError):
                store.save_head_note("bert", layer=0, tokens=tokens, role="r", annotator="a",
                                     **bad)  # fmt: skip
        with pytest.raises(InputError, match="both empty"):
            store.save_head_note("bert", layer=0, head=0, tokens=tokens, annotator="a")
        with pytest.raises(InputError, match="model_name"):
            store.save_head_note("", layer=0, head=0, tokens=tokens, role="r", annotator="a")
        assert len(store.head_notes(latest=False)) == 4  # nothing written by the refusals


def test_plan_trials_is_seeded_and_balanced() -> None:
    inputs = [["a"], ["b"], ["c"], ["d"]]
    methods = ["raw", "rollout", "flow"]
    assert plan_trials(inputs, methods, "rate", 7) == plan_trials(inputs, methods, "rate", 7)
    assert plan_trials(inputs, methods, "rate", 7) != plan_trials(inputs, methods, "rate", 8)
    rate = plan_trials(inputs, methods, "rate", 0)
    assert sorted((t["input"], t["methods"][0]) for t in rate) == sorted(
        (i, m) for i in range(4) for m in methods
    )
    compare = plan_trials(inputs, methods, "compare", 0)
    assert len(compare) == 4 * 3
    assert {frozenset(t["methods"]) for t in compare} == {
        frozenset(p) for p in [("raw", "rollout"), ("raw", "flow"), ("rollout", "flow")]
    }
    simulate = plan_trials(inputs, methods, "simulate", 0)
    assert sorted(t["input"] for t in simulate) == [0, 1, 2, 3]
    assert sum(t["explanation_shown"] for t in simulate) == 2  # balanced control


def _session(store: Store, who: str, mode: str, trials: list[dict[str, Any]]) -> str:
    return store.start_rating_session(
        annotator=who, mode=mode, seed=0, show_method=False, methods=[], trials=trials
    )


def _trial(text: str, methods: list[str], shown: bool = True, actual: str = "") -> dict[str, Any]:
    return {"input_hash": input_hash([text]), "input_text": text, "methods": methods,
            "explanation_shown": shown, "actual": actual}  # fmt: skip


def test_rating_summary_by_hand(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        # rate: raw gets 2, 4 (ana) and 3 (bob); rollout 5 (ana), 4 (bob)
        units = [_trial("x", ["raw"]), _trial("y", ["raw"]), _trial("x", ["rollout"])]
        ana = _session(store, "ana", "rate", units)
        for position, value in enumerate([2, 4, 5]):
            store.save_rating(ana, position, answer={"rating": value})
        store.save_rating(ana, 0, answer={"rating": 1})  # changed her mind ...
        store.save_rating(ana, 0, answer={"rating": 2})  # ... and back: the latest counts
        bob = _session(store, "bob", "rate", [units[0], units[2]])
        store.save_rating(bob, 0, answer={"rating": 3})
        store.save_rating(bob, 1, answer={"rating": 4}, note="ok", seconds=2.5)
        # compare: raw vs rollout three times; rollout picked twice
        pairs = [_trial("x", ["raw", "rollout"]), _trial("y", ["rollout", "raw"]),
                 _trial("z", ["raw", "rollout"])]  # fmt: skip
        cmp_ = _session(store, "ana", "compare", pairs)
        for position, side in enumerate(["right", "left", "left"]):
            store.save_rating(cmp_, position, answer={"side": side})
        # simulate: raw shown twice (right, wrong), control once (right)
        sims = [_trial("x", ["raw"], True, "pos"), _trial("y", ["raw"], True, "neg"),
                _trial("z", ["raw"], False, "pos")]  # fmt: skip
        sim = _session(store, "ana", "simulate", sims)
        for position, guess in enumerate(["pos", "pos", "pos"]):
            saved = store.save_rating(sim, position, answer={"predicted": guess})
        assert saved["correct"] == 1 and saved["actual"] == "pos"
        with pytest.raises(InputError):
            store.save_rating(ana, 0, answer={"rating": 6})
        with pytest.raises(InputError):
            store.save_rating(cmp_, 0, answer={"side": "up"})
        with pytest.raises(InputError):
            store.save_rating(ana, 9, answer={"rating": 3})
        summary = rating_summary(store)
        assert len(store.ratings(latest=False)) == 13 and len(store.ratings()) == 11
    table = summary.methods
    assert table.loc["raw", "n_ratings"] == 3 and table.loc["raw", "rating_mean"] == 3.0
    assert table.loc["rollout", "rating_mean"] == 4.5
    ci = bootstrap_ci(np.array([2.0, 4.0, 3.0]))
    assert (table.loc["raw", "rating_low"], table.loc["raw", "rating_high"]) == (ci.low, ci.high)
    assert table.loc["raw", "n_comparisons"] == 3
    assert table.loc["raw", "win_rate"] == pytest.approx(1 / 3)
    assert table.loc["rollout", "win_rate"] == pytest.approx(2 / 3)
    assert table.loc["raw", "sim_explained"] == 0.5 and table.loc["raw", "n_explained"] == 2
    assert table.loc["raw", "sim_control"] == 1.0 and table.loc["raw", "n_control"] == 1
    assert math.isnan(table.loc["rollout", "sim_explained"])
    # α over units (x, raw): ana 2, bob 3 and (x, rollout): ana 5, bob 4; (y, raw) has one
    # rater and is not pairable. By hand (ordinal): values 2, 3, 4, 5 once each, within-unit
    # pairs (2,3) and (4,5); δ²(c,k) = (Σ n_g for g in c..k − (n_c + n_k)/2)², all n = 1:
    # δ²(2,3) = δ²(4,5) = 1, δ²(2,4) = δ²(3,5) = 4, δ²(2,5) = 9, δ²(3,4) = 1.
    # D_o = (2·1 + 2·1) / 4 = 1; D_e = 2·(1 + 4 + 9 + 1 + 4 + 1) / (4·3) = 40 / 12;
    # α = 1 − D_o / D_e = 1 − 12 / 40 = 0.7.
    assert summary.alpha == pytest.approx(0.7)
    assert (summary.alpha_units, summary.alpha_raters) == (2, 2)
    reference = krippendorff.alpha(
        reliability_data=[[2, 5, 4], [3, 4, np.nan]], level_of_measurement="ordinal"
    )
    assert summary.alpha == pytest.approx(reference)


def test_rating_summary_alpha_matches_krippendorff_on_random_ratings(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    data = rng.integers(1, 6, size=(3, 8)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    with Store(tmp_path / "s.sqlite") as store:
        trials = [_trial(f"t{u}", ["raw"]) for u in range(8)]
        for r, who in enumerate(["ana", "bob", "cy"]):
            session = _session(store, who, "rate", trials)
            for u in range(8):
                if not np.isnan(data[r, u]):
                    store.save_rating(session, u, answer={"rating": int(data[r, u])})
        summary = rating_summary(store)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert summary.alpha == pytest.approx(expected)
    assert summary.methods.loc["raw", "rating_mean"] == pytest.approx(np.nanmean(data))
