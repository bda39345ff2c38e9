"""Stores that cannot be written: read-only files and mounts, and a full disk (issue 20).

The tests run as root, and root writes a chmod 0444 file anyway: a read-only
store is made here with a real read-only mount (a small tmpfs remounted
``ro``), the way a shared data volume is mounted. A full disk is a real tmpfs
of a few hundred KiB, filled by saving. Where the environment refuses to mount
(no root, no CAP_SYS_ADMIN), the tests skip and say why.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnwidget.annotations import Store
from attnwidget.errors import InputError

ITEMS = [{"id": f"r{k}", "text": f"item {k} has a few words to mark"} for k in range(5)]


def _mount(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise OSError(f"{' '.join(cmd)}: {done.stderr.strip() or done.returncode}")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A fresh 512 KiB tmpfs, unmounted afterwards (an empty store of every
    table and 400 items, and room for a few saves)."""
    where = tmp_path / "mnt"
    where.mkdir()
    try:
        _mount(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)])
    except OSError as error:
        pytest.skip(f"this environment cannot mount a tmpfs ({error}); run as root to test")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _remount_read_only(where: Path) -> None:
    _mount(["mount", "-o", "remount,ro", str(where)])


def _filled(path: Path) -> None:
    with Store(path) as store:
        store.add_items(ITEMS)
        store.save("r1", annotator="ana", spans=[(0, 2)], label=None, note="first")
        store.save("r3", annotator="ben", spans=[(1, 3)])


def test_a_store_on_a_read_only_mount_opens_read_only(tmpfs: Path) -> None:
    path = tmpfs / "s.sqlite"
    _filled(path)
    _remount_read_only(tmpfs)
    with pytest.raises(OSError):  # the mount really is read-only, even for root
        (tmpfs / "probe").write_text("x")
    with Store(path) as store:  # used to raise sqlite3.OperationalError
        assert store.read_only
        assert [item.id for item in store.items()] == [item["id"] for item in ITEMS]
        found = store.load("r1", annotator="ana")
        assert found is not None and found.spans == ((0, 2),) and found.note == "first"
        assert store.progress("ben") == (1, len(ITEMS))
        assert len(store.to_dataframe()) == 2
        for write in (
            lambda: store.save("r2", annotator="ana", spans=[]),
            lambda: store.add_items([{"id": "new", "text": "more words"}]),
        ):
            with pytest.raises(InputError, match="read-only") as caught:
                write()
            assert str(path) in str(caught.value) and "copy" in str(caught.value)
    assert "read_only=True" in repr(Store(path, read_only=True))


def test_read_only_true_reads_a_writable_store_and_refuses_saves(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _filled(path)
    before = path.stat().st_mtime_ns, path.stat().st_size
    with Store(path, read_only=True) as store, Store(path) as writer:
        assert store.read_only and not writer.read_only
        with pytest.raises(InputError, match="read_only=True"):
            store.save("r2", annotator="ana", spans=[(0, 1)])
        assert store.load("r2", annotator="ana") is None
        writer.save("r2", annotator="ana", spans=[(0, 1)])  # another process may still write
        seen = store.load("r2", annotator="ana")  # and the reader sees its commits
        assert seen is not None and seen.spans == ((0, 1),)
    assert Store(path).load("r1", annotator="ana") is not None
    assert before[1] <= path.stat().st_size


def test_read_only_refuses_a_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist") as caught:
        Store(tmp_path / "none.sqlite", read_only=True)
    assert "read_only=False" in str(caught.value)
    assert not (tmp_path / "none.sqlite").exists()  # nothing was created
    (tmp_path / "empty.sqlite").write_bytes(b"")
    with pytest.raises(InputError, match="not a store yet"):
        Store(tmp_path / "empty.sqlite", read_only=True)
    with pytest.raises(InputError, match="read_only"):
        Store(tmp_path / "x.sqlite", read_only="yes")  # type: ignore[arg-type]


def test_a_new_store_on_a_read_only_mount_says_so(tmpfs: Path) -> None:
    _remount_read_only(tmpfs)
    with pytest.raises(InputError, match="read-only") as caught:
        Store(tmpfs / "new.sqlite")
    assert "writable" in str(caught.value)


def test_a_full_disk_at_save_loses_nothing(tmpfs: Path) -> None:
    path = tmpfs / "s.sqlite"
    saved: dict[str, str] = {}
    with Store(path, synchronous="NORMAL") as store:
        store.add_items([{"id": f"r{k}", "text": "a few words here"} for k in range(400)])
        with pytest.raises(InputError, match=r"disk holding .* is full") as caught:
            for k in range(400):
                note = f"{k} " + "n" * 1500  # with its history copy, ~2 pages of WAL a save
                store.save(f"r{k}", annotator="ana", spans=[(0, 1)], note=note)
                saved[f"r{k}"] = note
        message = str(caught.value)
        assert "not written" in message and "free some space" in message.lower(), message
        assert 3 < len(saved) < 400
        for ident, note in saved.items():  # the same connection still reads everything
            found = store.load(ident, annotator="ana")
            assert found is not None and found.note == note
    with Store(path) as again:  # and so does a fresh one, from the file
        assert again.progress("ana") == (len(saved), 400)
        assert {a.item_id: a.note for a in again.to_dataframe().itertuples()} == saved


def test_a_full_disk_at_creation_says_so(tmpfs: Path) -> None:
    filler = tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass  # no space left: the disk is full now
    finally:
        os.close(fd)
    with pytest.raises(InputError, match="full") as caught:
        Store(tmpfs / "s.sqlite")
    assert "free some space" in str(caught.value).lower()
    filler.unlink()
    with Store(tmpfs / "s.sqlite") as store:  # with space again, the same path works
        assert store.add_items(ITEMS) == len(ITEMS)
