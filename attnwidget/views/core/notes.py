"""Notes on heads and edges in HeadView, ModelView and FlowView (issue 23).

With ``store=`` (a :class:`~attnwidget.annotations.Store` or a path) and
``annotator=``, a view shows a notes panel: a person picks a head (HeadView,
ModelView: layer and head) or an edge (FlowView: layer, from-token,
to-token), types a role (free text, with suggestions such as
"previous-token head") and a note, and saves it into the store
(:meth:`~attnwidget.annotations.Store.save_head_note`). The panel lists the
notes saved on the same model (any input; those made on another input say
so), so a view opened later on that model shows them again. Without a store
the panel is hidden and the view is unchanged.

The model is named by ``model_name=``; by default the explanation's
``model_name`` attribute when it has one, else a description of its shape
("encoder, 12 layers x 12 heads"), which two models of the same shape share:
pass ``model_name=`` (e.g. the Hugging Face id) to keep their notes apart.

Synced trait ``notes`` (read-only dict): ``kind`` ("" = no store: panel
hidden; "head"; "edge"), ``model_name``, ``annotator``, ``input_hash``,
``suggestions`` (roles), ``items`` (the notes, as
:meth:`~attnwidget.annotations.Store.head_notes` rows). Messages: the page
sends ``{"type": "note", "layer", "head" | "from", "to", "role", "note"}``;
the kernel answers ``{"type": "note_saved", "id"}`` or ``{"type":
"note_error", "message"}`` and updates ``notes``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import traitlets

from attnwidget.annotations import ROLE_SUGGESTIONS, Store, input_hash
from attnwidget.errors import InputError
from attnwidget.views.core.base import _AttnWidget

log = logging.getLogger(__name__)

NOTE_OPTIONS = ("store", "annotator", "model_name")
"""The constructor keywords of the notes panel."""


def _shape(explanation: Any) -> tuple[int, int] | None:
    """(layers, heads) of an Explanation or an AttentionSet, None if unknown."""
    attentions = getattr(explanation, "attentions", None)
    if attentions is not None and getattr(attentions, "ndim", 0) == 4:
        return int(attentions.shape[0]), int(attentions.shape[1])
    rows = getattr(explanation, "attention_rows", None)
    if rows is not None and getattr(rows, "ndim", 0) == 3:
        return int(rows.shape[0]), int(rows.shape[1])
    matrices = getattr(explanation, "matrices", None)
    if matrices:
        return int(matrices[0].shape[0]), int(matrices[0].shape[1])
    return None


def default_model_name(explanation: Any) -> str:
    """The explanation's ``model_name`` if it has one, else "<kind>, L layers x H heads"."""
    name = getattr(explanation, "model_name", None)
    if isinstance(name, str) and name.strip():
        return name
    kind = getattr(explanation, "kind", None) or "model"
    shape = _shape(explanation)
    if shape is None:
        return str(kind)
    return f"{kind}, {shape[0]} layers x {shape[1]} heads"


def open_store(store: Any) -> Store:
    """A Store from a Store or a path."""
    if isinstance(store, Store):
        return store
    if isinstance(store, (str, Path)):
        return Store(store)
    raise InputError(
        f"store={store!r}: pass an attnwidget.annotations.Store or the path of its file"
    )


class HeadNotesMixin(_AttnWidget):
    """The notes panel's trait, options and messages (see the module docstring)."""

    notes = traitlets.Dict(read_only=True).tag(sync=True)
    """The notes panel's state (see :mod:`attnwidget.views.core.notes`)."""

    #: "head" (HeadView, ModelView) or "edge" (FlowView).
    _notes_kind: ClassVar[str] = "head"

    def __init__(
        self,
        *,
        store: Store | str | Path | None = None,
        annotator: str | None = None,
        model_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._notes_store: Store | None = None
        self._notes_annotator = ""
        self._notes_options = (store, annotator, model_name)
        self._notes_model = ""
        super().__init__(**kwargs)
        self.on_msg(self._on_note_message)

    # -- hooks the views implement -----------------------------------------------

    def _notes_tokens(self) -> list[str]:
        """The tokens of the input shown (what a note's input hash is made from)."""
        return list(getattr(self, "tokens", []))

    # -----------------------------------------------------------------------------

    def _start_notes(self, explanation: Any) -> None:
        """Name the model, open the store and load its notes (the views' __init__ end)."""
        store, annotator, model_name = self._notes_options
        if model_name is not None and (not isinstance(model_name, str) or not model_name.strip()):
            raise InputError(f"model_name={model_name!r}: pass a non-empty string or None")
        self._notes_model = model_name or default_model_name(explanation)
        if store is None:
            if annotator is not None:
                raise InputError("annotator= needs store=: pass the store the notes go to")
            self._refresh_notes()
            return
        if not isinstance(annotator, str) or not annotator.strip():
            raise InputError(
                f"annotator={annotator!r}: with store=, pass who writes the notes, "
                "e.g. annotator='ana'"
            )
        self._notes_store = open_store(store)
        self._notes_annotator = annotator
        self._refresh_notes()
        self.observe(lambda _change: self._refresh_notes(), names=["tokens"])

    @property
    def model_name(self) -> str:
        """The model the notes are keyed by (``model_name=``, or its default)."""
        return self._notes_model

    @property
    def note_store(self) -> Store | None:
        """The store notes are saved in (None: no notes panel)."""
        return self._notes_store

    def _refresh_notes(self) -> None:
        store = self._notes_store
        state: dict[str, Any] = {"kind": "", "model_name": self._notes_model}
        if store is not None:
            items = [
                r for r in store.head_note_rows(self._notes_model) if r["kind"] == self._notes_kind
            ]
            state.update(
                kind=self._notes_kind,
                annotator=self._notes_annotator,
                input_hash=input_hash(self._notes_tokens()),
                suggestions=list(ROLE_SUGGESTIONS),
                items=items,
            )
        self.set_trait("notes", state)

    def save_note(
        self,
        *,
        layer: int,
        head: int | None = None,
        edge: tuple[int, int] | None = None,
        role: str = "",
        note: str = "",
    ) -> dict[str, Any]:
        """Save a note on a head or an edge of the input shown (as the page's Save does)."""
        if self._notes_store is None:
            raise InputError("this view has no store: pass store= and annotator= to save notes")
        saved = self._notes_store.save_head_note(
            self._notes_model,
            layer=layer,
            head=head,
            edge=edge,
            tokens=self._notes_tokens(),
            role=role,
            note=note,
            annotator=self._notes_annotator,
        )
        self._refresh_notes()
        return saved

    def _on_note_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "note":
            return
        try:
            target: dict[str, Any] = {"layer": content.get("layer")}
            if self._notes_kind == "edge":
                target["edge"] = (content.get("from"), content.get("to"))
            else:
                target["head"] = content.get("head")
            saved = self.save_note(
                **target, role=str(content.get("role", "")), note=str(content.get("note", ""))
            )
        except InputError as error:
            # Never raise into the comm: the page shows the message, keeps the text.
            self.send({"type": "note_error", "message": str(error)})
            return
        except Exception as error:  # a full disk, a closed store: say so in the page
            log.exception("attnwidget: a note could not be saved")
            self.send({"type": "note_error", "message": f"not saved: {error}"})
            return
        self.send({"type": "note_saved", "id": saved["id"]})
