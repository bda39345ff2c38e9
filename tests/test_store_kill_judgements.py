"""Schema 4's writes (a rating, a head note) under SIGKILL.

As in tests/test_store_kill_new_writes.py: a real child process saves in a
loop and prints after each call returns (after COMMIT); the parent kills it
with SIGKILL mid-loop, then checks with a fresh ``sqlite3`` connection that
every acknowledged save is in the file, whole, in order, and that
``PRAGMA integrity_check`` passes.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from test_annotations_processes import fresh, kill_after

from attnwidget.annotations import Store, input_hash, plan_trials

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"]

CHILD = r"""
import sys
from attnwidget.annotations import Store

path, mode, session = sys.argv[1], sys.argv[2], sys.argv[3]
store = Store(path)
print("ready", flush=True)
tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
for k in range(100_000):
    if mode == "rating":
        store.save_rating(session, k % 4, answer={"rating": 1 + k % 5}, note=f"n{k}",
                          seconds=float(k))
    else:
        store.save_head_note("bert", layer=k % 3, head=k % 4, tokens=tokens,
                             role=f"role {k}", note=f"note {k}", annotator="ana")
        store.save_head_note("bert", layer=1, edge=(k % 5, 2), tokens=tokens,
                             note=f"edge {k}", annotator="ana")
    print(k, flush=True)  # only after the call returned, i.e. after COMMIT
print("finished", flush=True)
"""


def run_and_kill(path: Path, mode: str, session: str = "-") -> list[int]:
    """The child on ``path`` in ``mode``, killed after 30 acknowledged writes."""
    return kill_after(CHILD, path, mode, session)


def test_sigkill_during_ratings_loses_no_acknowledged_rating(tmp_path: Path) -> None:
    path = tmp_path / "ratings.sqlite"
    inputs = [TOKENS, TOKENS[:3]]
    with Store(path) as store:
        trials = plan_trials(inputs, ["raw", "rollout"], "rate", 5)
        session = store.start_rating_session(
            annotator="ana", mode="rate", seed=5, show_method=False,
            methods=["raw", "rollout"], trials=trials,
        )  # fmt: skip
    reported = run_and_kill(path, "rating", session)
    rows = fresh(path, "SELECT position, rating, note, seconds, methods, input_hash, seed"
                       " FROM ratings ORDER BY id")  # fmt: skip
    assert len(reported) <= len(rows) <= len(reported) + 1  # at most the one in flight
    for k, (position, rating, note, seconds, methods, digest, seed) in enumerate(rows):
        assert (position, rating, note, seconds) == (k % 4, 1 + k % 5, f"n{k}", float(k))
        assert json.loads(methods) == trials[k % 4]["methods"] and seed == 5
        assert digest == trials[k % 4]["input_hash"]
    with Store(path) as store:  # opens and writes normally afterwards
        assert store.save_rating(session, 0, answer={"rating": 3})["rating"] == 3


def test_sigkill_during_head_notes_loses_no_acknowledged_note(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    Store(path).close()
    reported = run_and_kill(path, "note")
    rows = fresh(path, "SELECT kind, layer, head, from_token, to_token, role, note, input_hash"
                       " FROM head_notes ORDER BY id")  # fmt: skip
    # Two saves per k: every acknowledged k has both, and at most one save is in flight.
    assert 2 * len(reported) <= len(rows) <= 2 * len(reported) + 2
    for n, row in enumerate(rows):
        k, edge = divmod(n, 2)
        if edge:
            assert row == ("edge", 1, None, k % 5, 2, "", f"edge {k}", input_hash(TOKENS))
        else:
            expected = ("head", k % 3, k % 4, None, None, f"role {k}", f"note {k}")
            assert row == (*expected, input_hash(TOKENS))
    with Store(path) as store:
        assert len(store.head_notes("bert", latest=False)) == len(rows)
