"""The new write paths of issue 23 (revert, adjudicate, assign) under SIGKILL.

As in tests/test_annotations_processes.py: a real child process writes in a
loop and prints after each call returns (after COMMIT); the parent kills it
with SIGKILL mid-loop, then checks with a fresh ``sqlite3`` connection that
every acknowledged write is in the file, complete (no half of a revert's or
an adjudication's rows, no partial assignment), and that
``PRAGMA integrity_check`` passes.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from test_annotations_processes import fresh, kill_after

from attnwidget.annotations import Store
from attnwidget.annotations._assign import plan

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

NAMES = ["ana", "bob", "cy"]

CHILD = r"""
import sys
from attnwidget.annotations import Store

path, mode = sys.argv[1], sys.argv[2]
store = Store(path)
print("ready", flush=True)
for k in range(100_000):
    if mode == "revert":
        store.revert("i0", "ana", to_revision=1 + k % 2)
    elif mode == "adjudicate":
        rule = ("union", "intersection", "majority")[k % 3]
        store.adjudicate("i0", sources=["ana", "bob", "cy"], rule=rule, reason=f"r{k}")
    else:
        store.assign(["ana", "bob", "cy"], overlap=2, seed=k, replace=True)
    print(k, flush=True)  # only after the call returned, i.e. after COMMIT
print("finished", flush=True)
"""


def run_and_kill(path: Path, mode: str) -> list[int]:
    """The child on ``path`` in ``mode``, killed after 30 acknowledged writes."""
    return kill_after(CHILD, path, mode)


def setup(path: Path, n_items: int = 1) -> None:
    with Store(path) as store:
        store.add_items({"id": f"i{k}", "text": "one two three four five"} for k in range(n_items))
        store.save("i0", annotator="ana", spans=[(0, 2)])
        store.save("i0", annotator="ana", spans=[(3, 5)])
        store.save("i0", annotator="bob", spans=[(1, 3)])
        store.save("i0", annotator="cy", spans=[], no_evidence=True)


def test_sigkill_during_reverts_loses_no_acknowledged_revert(tmp_path: Path) -> None:
    path = tmp_path / "revert.sqlite"
    setup(path)
    reported = run_and_kill(path, "revert")
    history = fresh(
        path,
        "SELECT revision, reverted_from, spans FROM history WHERE annotator = 'ana'"
        " ORDER BY revision",
    )
    revisions = [r for r, _, _ in history]
    assert revisions == list(range(1, len(history) + 1))  # none lost in the middle
    made = len(history) - 2
    assert len(reported) <= made <= len(reported) + 1  # at most the one in flight
    for revision, reverted_from, spans in history[2:]:
        k = revision - 3
        assert reverted_from == 1 + k % 2
        assert json.loads(spans) == ([[0, 2]] if k % 2 == 0 else [[3, 5]])
    current = fresh(
        path,
        "SELECT a.revision, a.history_id, h.id FROM annotations a JOIN history h ON"
        " h.item_idx = a.item_idx AND h.annotator = a.annotator AND h.revision = a.revision"
        " WHERE a.annotator = 'ana'",
    )
    assert current[0][0] == len(history) and current[0][1] == current[0][2]
    with Store(path) as store:  # and the store opens and writes normally afterwards
        assert store.revert("i0", "ana", to_revision=2).revision == len(history) + 1


def test_sigkill_during_adjudications_leaves_every_gold_linked(tmp_path: Path) -> None:
    path = tmp_path / "adjudicate.sqlite"
    setup(path)
    reported = run_and_kill(path, "adjudicate")
    gold = fresh(
        path,
        "SELECT h.id, h.revision, j.rule, j.reason FROM history h LEFT JOIN adjudications j"
        " ON j.history_id = h.id WHERE h.annotator = 'gold' ORDER BY h.revision",
    )
    assert [revision for _, revision, _, _ in gold] == list(range(1, len(gold) + 1))
    assert len(reported) <= len(gold) <= len(reported) + 1
    for ident, revision, rule, reason in gold:  # a gold version never lacks its link
        k = revision - 1
        assert (rule, reason) == (("union", "intersection", "majority")[k % 3], f"r{k}")
        sources = fresh(
            path,
            f"SELECT annotator, revision FROM adjudication_sources WHERE history_id = {ident}"
            " ORDER BY annotator",
        )
        assert sources == [("ana", 2), ("bob", 1), ("cy", 1)]
    assert fresh(path, "SELECT count(*) FROM adjudications") == [(len(gold),)]
    with Store(path) as store:
        assert store.load("i0", annotator="gold").revision == len(gold)


def test_sigkill_during_assign_leaves_one_whole_assignment(tmp_path: Path) -> None:
    path = tmp_path / "assign.sqlite"
    n_items = 300
    setup(path, n_items)
    reported = run_and_kill(path, "assign")
    with Store(path) as store:
        stored = store.assignment()
        assert stored is not None and stored["annotators"] == NAMES
        assert stored["seed"] in (reported[-1], reported[-1] + 1)  # the last, or the one in flight
        rows = fresh(path, "SELECT item_idx, annotator FROM assignments")
        expected = plan(NAMES, 2, stored["seed"], n_items)
        got: dict[int, list[str]] = {}
        for idx, name in rows:
            got.setdefault(idx, []).append(name)
        assert {idx: sorted(names) for idx, names in got.items()} == dict(enumerate(expected))
        assert len(rows) == 2 * n_items  # nothing of an earlier seed is left over
        assert sum(store.assign(NAMES, overlap=2, seed=stored["seed"]).values()) == 2 * n_items
