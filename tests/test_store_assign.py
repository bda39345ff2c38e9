"""Who annotates what (issue 23): Store.assign, Store.queue and the assignment-aware
progress and first_unannotated."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_annotations_processes import fresh as rows

from attnwidget.annotations import Store
from attnwidget.errors import InputError

NAMES = ["ana", "bob", "cy", "dee"]


def items(start: int, stop: int) -> list[dict[str, str]]:
    return [{"id": f"i{k:03d}", "text": f"item {k} words"} for k in range(start, stop)]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "s.sqlite")
    s.add_items(items(0, 30))
    yield s
    s.close()


def table(store: Store) -> dict[str, list[str]]:
    return {name: store.queue(name) for name in NAMES}


def test_each_item_goes_to_k_annotators_balanced(store: Store) -> None:
    counts = store.assign(NAMES, overlap=2, seed=7)
    assert counts == {name: 15 for name in NAMES}  # 30 items x 2 / 4 annotators
    per_item = Counter(item for queue in table(store).values() for item in queue)
    assert set(per_item) == {f"i{k:03d}" for k in range(30)} and set(per_item.values()) == {2}
    for queue in table(store).values():
        assert queue == sorted(queue)  # store order
    pairs = Counter(tuple(sorted(n for n in NAMES if item in store.queue(n))) for item in per_item)
    assert set(pairs) == set(itertools.combinations(NAMES, 2))  # every pair meets
    assert rows(store.path, "SELECT count(*) FROM assignments") == [(60,)]
    assert store.assignment() == {"annotators": NAMES, "overlap": 2, "seed": 7}
    # uneven: 30 x 3 / 4 = 22.5, so two annotators get 23 and two 22
    s2 = Store(store.path.with_name("t.sqlite"))
    s2.add_items(items(0, 30))
    assert sorted(s2.assign(NAMES, overlap=3, seed=1).values()) == [22, 22, 23, 23]
    s2.close()


def test_deterministic_for_a_seed_and_name_order(tmp_path: Path) -> None:
    made = []
    for n, (names, seed) in enumerate([(NAMES, 3), (list(reversed(NAMES)), 3), (NAMES, 4)]):
        with Store(tmp_path / f"{n}.sqlite") as s:
            s.add_items(items(0, 30))
            s.assign(names, overlap=2, seed=seed)
            made.append(table(s))
    assert made[0] == made[1]  # the names' order does not matter
    assert made[0] != made[2]  # another seed, another assignment


def test_same_arguments_are_idempotent_and_extend_to_new_items(store: Store) -> None:
    store.assign(NAMES, overlap=2, seed=5)
    first = table(store)
    assert store.assign(["dee", "cy", "bob", "ana"], overlap=2, seed=5) == {n: 15 for n in NAMES}
    assert table(store) == first
    store.add_items(items(30, 40))
    counts = store.assign(NAMES, overlap=2, seed=5)
    assert sum(counts.values()) == 80 and max(counts.values()) - min(counts.values()) <= 1
    extended = table(store)
    for name in NAMES:  # nobody's earlier items moved
        assert [i for i in extended[name] if i < "i030"] == first[name]
    # and it equals assigning all 40 items at once
    with Store(store.path.with_name("all.sqlite")) as s:
        s.add_items(items(0, 40))
        s.assign(NAMES, overlap=2, seed=5)
        assert table(s) == extended


def test_other_arguments_are_refused_unless_replace(store: Store) -> None:
    store.assign(NAMES, overlap=2, seed=5)
    first = table(store)
    for kwargs in ({"overlap": 3, "seed": 5}, {"overlap": 2, "seed": 6}):
        with pytest.raises(InputError, match=r"already assigns.*replace=True"):
            store.assign(NAMES, **kwargs)
    with pytest.raises(InputError, match="already assigns"):
        store.assign(NAMES[:3], overlap=2, seed=5)
    assert table(store) == first
    store.save("i000", annotator="ana", spans=[(0, 1)])
    counts = store.assign(["ana", "bob"], overlap=1, seed=0, replace=True)
    assert counts == {"ana": 15, "bob": 15}
    assert rows(store.path, "SELECT count(*) FROM assignments") == [(30,)]
    assert store.load("i000", annotator="ana") is not None  # saved work is kept
    with pytest.raises(InputError, match=r"'cy' has no assigned items.*\['ana', 'bob'\]"):
        store.queue("cy")


def test_queue_progress_and_first_unannotated_follow_the_assignment(store: Store) -> None:
    with pytest.raises(InputError, match=r"no items .* are assigned yet.*store.assign"):
        store.queue("ana")
    with pytest.raises(InputError, match="assigned yet"):
        store.progress("ana", assigned_only=True)
    with pytest.raises(InputError, match="assigned yet"):
        store.first_unannotated("ana", assigned_only=True)
    store.assign(NAMES, overlap=2, seed=11)
    mine = store.queue("ana")
    index = {item.id: k for k, item in enumerate(store.items())}
    assert store.progress("ana", assigned_only=True) == (0, 15)
    assert store.first_unannotated("ana", assigned_only=True) == index[mine[0]]
    store.save(mine[0], annotator="ana", spans=[(0, 1)])
    store.save(mine[2], annotator="ana", spans=[], no_evidence=True)
    not_mine = next(i.id for i in store.items() if i.id not in mine)
    store.save(not_mine, annotator="ana", spans=[(0, 1)])  # allowed, counted only overall
    progress = store.progress("ana", assigned_only=True)
    assert progress == (2, 15) and progress.no_evidence == 1
    assert store.progress("ana") == (3, 30)
    assert store.first_unannotated("ana", assigned_only=True) == index[mine[1]]
    start = index[mine[1]] + 1
    assert store.first_unannotated("ana", start=start, assigned_only=True) == index[mine[3]]
    assert store.queue("ana", pending=True) == [i for i in mine if i not in (mine[0], mine[2])]
    for item_id in mine:
        store.save(item_id, annotator="ana", spans=[(1, 2)])
    assert store.first_unannotated("ana", assigned_only=True) is None
    assert store.queue("ana", pending=True) == []
    assert store.first_unannotated("ana") is not None  # unassigned items remain


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ("ana", {}, "list of names"),
        ([], {}, "at least one"),
        (["ana", "ana"], {}, "more than once"),
        (["ana", ""], {}, "annotator"),
        (NAMES, {"overlap": 0}, r"1 <= overlap <= 4"),
        (NAMES, {"overlap": 5}, r"1 <= overlap <= 4"),
        (NAMES, {"overlap": 1.5}, "overlap=1.5: pass an int"),
        (NAMES, {"seed": "x"}, "seed='x': pass an int"),
        (NAMES, {"replace": 1}, "True or False"),
    ],
)
def test_bad_assignments_are_refused(store: Store, args: Any, kwargs: Any, match: str) -> None:
    with pytest.raises(InputError, match=match):
        store.assign(args, **kwargs)
    assert store.assignment() is None
    assert rows(store.path, "SELECT count(*) FROM assignments") == [(0,)]
