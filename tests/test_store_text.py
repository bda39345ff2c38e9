"""Text SQLite cannot store (a lone surrogate) is refused with a clear error (issue 20).

Python strings may hold lone surrogates (e.g. from ``surrogateescape`` decoding
or a JSON ``"\\ud800"``); UTF-8 cannot encode them, and SQLite used to raise a
raw ``UnicodeEncodeError``. Now an ``InputError`` names the item (or field) and
the fix, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnwidget.annotations import Store
from attnwidget.errors import InputError

LONE = "\ud800"


@pytest.mark.parametrize(
    ("item", "names"),
    [
        ({"id": "r2", "text": f"a lone {LONE} surrogate"}, ["'r2'", "text", "position 7"]),
        ({"id": f"r{LONE}", "text": "fine words"}, ["item id", "position 1"]),
        ({"id": "r2", "text": "fine", "label": f"p{LONE}"}, ["'r2'", "label"]),
        ({"id": "r2", "text": "fine", "text_pair": LONE}, ["'r2'", "text_pair"]),
    ],
)
def test_add_items_refuses_a_lone_surrogate_naming_the_item(
    tmp_path: Path, item: dict[str, str], names: list[str]
) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        store.add_items([{"id": "r1", "text": "kept words"}])
        with pytest.raises(InputError) as caught:
            store.add_items([{"id": "r0", "text": "good"}, item])
        message = str(caught.value)
        for name in names:
            assert name in message, message
        assert "surrogate" in message and "errors='replace'" in message  # the fix
        # All or nothing: the good item of the same call was not added either.
        assert [found.id for found in store.items()] == ["r1"]


def test_save_refuses_a_lone_surrogate_in_annotator_or_note(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        store.add_items([{"id": "r1", "text": "kept words"}])
        with pytest.raises(InputError, match="annotator"):
            store.save("r1", annotator=f"ana{LONE}", spans=[])
        with pytest.raises(InputError, match="note"):
            store.save("r1", annotator="ana", spans=[], note=f"x{LONE}")
        assert store.load("r1", annotator="ana") is None
        # A proper surrogate pair (an emoji written as one character) is fine.
        store.add_items([{"id": "r2", "text": "smile \U0001f600 now"}])
        assert store.item("r2").text == "smile \U0001f600 now"
