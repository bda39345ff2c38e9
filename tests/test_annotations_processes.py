"""attnwidget.annotations.Store across real processes: a SIGKILL in the middle of
saving, and two processes writing one file at once.

The children are real Python processes running the Store; what they wrote is
checked with a fresh ``sqlite3`` connection.
"""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from attnwidget.annotations import Store

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 240  # seconds for a child to import attnwidget (torch) on a busy 2-core machine

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

SAVING_CHILD = r"""
import sys
from attnwidget.annotations import Store

path, count = sys.argv[1], int(sys.argv[2])
store = Store(path)
print("ready", flush=True)
for k in range(count):
    store.save(f"i{k}", annotator="kid", spans=[(k % 5, k % 5 + 1)], note=f"save {k}")
    print(k, flush=True)  # only after save() returned, i.e. after COMMIT
print("finished", flush=True)
"""

WRITING_CHILD = r"""
import sys, time
from attnwidget.annotations import Store

path, me, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
items = [{"id": f"i{k}", "text": f"word{k} " * 8} for k in range(count)]
print("ready", flush=True)
sys.stdin.readline()  # both children start together: the parent says go
start = time.time()
with Store(path, labels=["a", "b"]) as store:  # a new file, created by both at once
    store.add_items(items)
    for k in range(count):
        store.save(f"i{k}", annotator=me, spans=[(0, 1 + k % 7)], label="a", note=me)
        assert store.load(f"i{k}", annotator=me).note == me
        store.progress(me)
        if k % 2 == 0:  # the same (item, annotator) from both processes
            store.save("i0", annotator="both", spans=[(k % 8, 8)], note=f"{me} {k}")
print("done", start, time.time(), flush=True)
"""


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def reader(stream: object) -> queue.Queue[str | None]:
    """Lines of a child's stdout, read by a thread so that waiting can time out."""
    lines: queue.Queue[str | None] = queue.Queue()

    def run() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=run, daemon=True).start()
    return lines


def next_line(lines: queue.Queue[str | None], proc: subprocess.Popen[str]) -> str:
    line = lines.get(timeout=TIMEOUT)
    if line is None:
        raise AssertionError(f"child exited early: {proc.wait()} {proc.stderr.read()}")
    return line


def fresh(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def kill_after(child: str, path: Path, *args: str, acknowledged: int = 30) -> list[int]:
    """Start ``child`` on ``path``, let it acknowledge ``acknowledged`` writes (it prints
    each k after the call returned, i.e. after COMMIT), SIGKILL it; every k it
    acknowledged, checked to be 0, 1, … and the file to pass SQLite's checks."""
    proc = spawn(child, str(path), *args)
    lines = reader(proc.stdout)
    assert next_line(lines, proc) == "ready"
    reported = [int(next_line(lines, proc)) for _ in range(acknowledged)]
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=TIMEOUT) == -signal.SIGKILL
    while (line := lines.get(timeout=TIMEOUT)) is not None:
        assert line != "finished", "the child finished before the kill"
        reported.append(int(line))
    assert reported == list(range(len(reported)))
    assert fresh(path, "PRAGMA integrity_check") == [("ok",)]
    assert fresh(path, "PRAGMA foreign_key_check") == []
    return reported


def test_a_sigkill_loses_at_most_the_save_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "kill.sqlite"
    count = 20_000
    with Store(path) as store:
        store.add_items(
            {"id": f"i{k}", "text": "one two three four five six"} for k in range(count)
        )
    proc = spawn(SAVING_CHILD, str(path), str(count))
    lines = reader(proc.stdout)
    assert next_line(lines, proc) == "ready"
    reported = [int(next_line(lines, proc)) for _ in range(40)]
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=TIMEOUT) == -signal.SIGKILL
    while (line := lines.get(timeout=TIMEOUT)) is not None:  # printed before the kill
        assert line != "finished", "the child finished before the kill: raise count"
        reported.append(int(line))
    assert reported == list(range(len(reported)))

    assert fresh(path, "PRAGMA integrity_check") == [("ok",)]
    rows = fresh(
        path,
        "SELECT i.item_id, a.note, a.spans FROM annotations a JOIN items i ON i.idx = a.item_idx"
        " WHERE a.annotator = 'kid'",
    )
    saved = sorted(int(item_id[1:]) for item_id, _, _ in rows)
    assert set(reported) <= set(saved)  # every save reported as committed is there
    assert saved == list(range(len(saved)))  # in order, none lost in the middle
    assert len(saved) - len(reported) <= 1  # at most the one in flight (committed, unprinted)
    assert all(note == f"save {item_id[1:]}" for item_id, note, _ in rows)
    assert fresh(path, "SELECT count(*) FROM history WHERE annotator = 'kid'") == [(len(saved),)]
    with Store(path) as store:  # and the store opens and writes normally afterwards
        last = reported[-1]
        assert store.load(f"i{last}", annotator="kid").spans == ((last % 5, last % 5 + 1),)
        store.save("i0", annotator="kid", spans=[], no_evidence=True)
        assert store.progress("kid") == (len(saved), count)


def test_two_processes_write_one_store_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"  # does not exist yet: both children create it
    count = 300
    procs = {name: spawn(WRITING_CHILD, str(path), name, str(count)) for name in ("ann", "bob")}
    streams = {name: reader(proc.stdout) for name, proc in procs.items()}
    for name, proc in procs.items():
        assert next_line(streams[name], proc) == "ready"
    for proc in procs.values():
        proc.stdin.write("go\n")
        proc.stdin.flush()
    spans = {}
    for name, proc in procs.items():
        line = next_line(streams[name], proc)
        assert proc.wait(timeout=TIMEOUT) == 0, proc.stderr.read()
        error = proc.stderr.read()
        assert "locked" not in error and "Traceback" not in error, error
        word, start, end = line.split()
        assert word == "done"
        spans[name] = (float(start), float(end))
    (a0, a1), (b0, b1) = spans.values()
    assert a0 < b1 and b0 < a1, f"the two children did not write at the same time: {spans}"

    assert fresh(path, "PRAGMA integrity_check") == [("ok",)]
    assert fresh(path, "SELECT count(*) FROM items") == [(count,)]
    counts = fresh(path, "SELECT annotator, count(*) FROM annotations GROUP BY annotator")
    assert sorted(counts) == [("ann", count), ("bob", count), ("both", 1)]
    history = fresh(path, "SELECT annotator, count(*) FROM history GROUP BY annotator")
    assert sorted(history) == [("ann", count), ("bob", count), ("both", count)]
    notes = fresh(path, "SELECT annotator, note FROM annotations WHERE annotator != 'both'")
    assert all(annotator == note for annotator, note in notes)
    # The shared row: 150 saves from each process, none lost, revisions 1..300 in order.
    revisions = [r for (r,) in fresh(path, "SELECT revision FROM history WHERE annotator = 'both'")]
    assert sorted(revisions) == list(range(1, count + 1))
    assert fresh(path, "SELECT revision FROM annotations WHERE annotator = 'both'") == [(count,)]
    by_child = fresh(
        path, "SELECT substr(note, 1, 3), count(*) FROM history WHERE annotator = 'both' GROUP BY 1"
    )
    assert sorted(by_child) == [("ann", count // 2), ("bob", count // 2)]
