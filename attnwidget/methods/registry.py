"""The method registry: every explanation method registered by name.

A method's array code lives in its own module as a pure function (e.g.
:func:`attnwidget.methods.rollout.rollout`). What is registered here is a small
adapter that turns the captured :class:`ScoreContext` into that function's
inputs and returns one relevance score per input token, shape (n,). Each
method declares its keyword options (:class:`~attnwidget.methods.options.Option`);
:func:`method_info` describes a method and its options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from attnwidget.errors import InputError, UnknownMethodError
from attnwidget.methods.options import Option, resolve_options
from attnwidget.methods.registry_checks import check_method_name


@dataclass
class ScoreContext:
    """Everything one forward+backward pass captured, as float64 numpy arrays.

    Shapes: ``attentions`` and ``attention_grads`` (L, H, n, n);
    ``embeddings`` and ``embedding_grads`` (n, d). ``query_index`` is the row
    whose explanation is wanted (CLS, last position, or mask position).
    ``target_score`` maps a batch of input embeddings (B, n, d) (a torch
    tensor) to the target logit (B,), differentiably; ``target_probability``
    maps a batch of input ids (B, n) to the target's probability (B,). Both are
    None when the scores come from plain arrays (:meth:`Explanation.from_attentions`).
    From a model capture, ``target_score`` is a
    :class:`~attnwidget.relevance.rerun.TargetScore`, whose ``rerun(context)`` runs
    the example's forward+backward once more inside a caller's context manager
    (how "lrp" installs its rules).
    ``options`` maps a method name to its keyword options; :func:`compute_scores`
    replaces them by the complete, validated set (defaults filled in), which
    adapters read with :meth:`options_for`.
    Images add ``pixels`` (3, H, W), the input as the model reads it,
    ``black_pixels`` (a black image the same way) and ``patch_size``; their
    ``target_score`` and ``target_probability`` take pixel batches
    (B, 3, H, W) instead (integrated gradients and occlusion run on pixels:
    :mod:`attnwidget.methods.pixels`).
    ``head_values`` (L, H, n, d_v) and ``head_output_weights`` (L, H, d_v, d)
    are each head's value vectors (bias included) and slice of the output
    projection, captured only for the methods that need them ("head_values":
    ``effective_attention``, ``attention_norm``).
    ``keep`` says what of the attention was kept (:mod:`attnwidget.methods.keep`):
    with "fused" or "rows", ``attentions`` and ``attention_grads`` are None
    and the methods read ``attention_rows`` (L, H, n), ``rollout_rows``
    (2, L, n), ``grad_attention_rows`` (L, n) and, for "fused",
    ``fused_attentions`` (L, n, n), all float32 (see
    :class:`attnwidget.capture.AttentionRecord`).
    """

    attentions: np.ndarray | None
    query_index: int
    attention_grads: np.ndarray | None = None
    embeddings: np.ndarray | None = None
    embedding_grads: np.ndarray | None = None
    input_ids: np.ndarray | None = None
    blank_token_id: int | None = None
    keep_mask: np.ndarray | None = None  # (n,) bool: tokens that may be blanked out
    target_score: Callable[[Any], Any] | None = None
    target_probability: Callable[[np.ndarray], np.ndarray] | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    query_weights: np.ndarray | None = None
    pixels: np.ndarray | None = None
    black_pixels: np.ndarray | None = None
    patch_size: int | None = None
    head_values: np.ndarray | None = None
    head_output_weights: np.ndarray | None = None
    keep: str = "all"
    fused_attentions: np.ndarray | None = None
    attention_rows: np.ndarray | None = None
    rollout_rows: np.ndarray | None = None
    grad_attention_rows: np.ndarray | None = None

    def patch_token_scores(self, patch_values: np.ndarray) -> np.ndarray:
        """(rows·cols,) patch scores → (n,) token scores, the special tokens (first) at 0."""
        assert self.attentions is not None  # images keep every attention map
        n = self.attentions.shape[-1]
        scores = np.zeros(n)
        scores[n - patch_values.size :] = patch_values
        return scores

    def options_for(self, name: str) -> dict[str, Any]:
        """Method ``name``'s complete options: given ones checked, defaults filled in."""
        return resolve_options(get_method(name), self.options.get(name))

    def start_vector(self) -> np.ndarray:
        """float64 (n,): the query as a distribution over positions, so that
        ``start_vector() @ matrix == query_row(matrix)``."""
        if self.query_weights is not None:
            return np.asarray(self.query_weights, dtype=np.float64)
        maps = self.attention_rows if self.attentions is None else self.attentions
        assert maps is not None  # keep="fused"/"rows" keeps the query rows
        n = maps.shape[-1]
        vector = np.zeros(n)
        vector[self.query_index] = 1.0
        return vector

    def query_row(self, matrix: np.ndarray) -> np.ndarray:
        """Read the explained row out of an (n, n) relevance matrix.

        Normally row ``query_index``. For encoder–decoder models the query is
        a decoder position, which reads the encoder through cross-attention:
        ``query_weights`` (n,) is that distribution over encoder positions and
        the result is ``query_weights @ matrix``.
        """
        if self.query_weights is not None:
            return self.query_weights @ matrix
        return matrix[self.query_index]


#: A method's scorer: ``fn(context)`` → scores (n,), or (scores, details).
Scorer = Callable[[ScoreContext], "np.ndarray | tuple[np.ndarray, dict[str, Any]]"]
ScorerT = TypeVar("ScorerT", bound=Scorer)


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its name, what it needs, and how to score."""

    name: str
    score: Scorer
    needs: frozenset[str]
    summary: str
    reference: str
    signed: bool = False  # True when scores can be negative (diverging colours)
    options: tuple[Option, ...] = ()

    @property
    def explains_target(self) -> bool:
        """True when the scores explain the target logit or probability (they need
        gradients or re-runs of the model), False when they only read the query
        row's attention."""
        return bool(self.needs - READS_ATTENTION)

    def info(self) -> MethodInfo:
        """A readable description of this method (see :func:`method_info`)."""
        return MethodInfo(
            name=self.name,
            summary=self.summary,
            reference=self.reference,
            needs=tuple(sorted(self.needs)),
            signed=self.signed,
            explains=(
                "the target's logit or probability"
                if self.explains_target
                else "the query row's attention"
            ),
            options=self.options,
        )


@dataclass(frozen=True)
class MethodInfo:
    """What :func:`method_info` returns: a method's description and its options.

    Attributes:
        name, summary, reference: the registered name, one line, the paper.
        needs: what the method needs from a capture (e.g. ``attention_grads``).
        signed: True when scores can be negative.
        explains: what the scores explain: the target's logit/probability
            (gradient and re-run methods) or the query row's attention.
        options: the declared keyword options, with type, default and doc.
    """

    name: str
    summary: str
    reference: str
    needs: tuple[str, ...]
    signed: bool
    explains: str
    options: tuple[Option, ...]

    @property
    def defaults(self) -> dict[str, Any]:
        """Option name -> default value."""
        return {option.name: option.default for option in self.options}

    def _option_lines(self) -> list[str]:
        lines = []
        for option in self.options:
            extra = f" (one of {', '.join(map(repr, option.choices))})" if option.choices else ""
            if option.requirement:
                extra += f" ({option.requirement})"
            lines.append(
                f"{option.name}: {option.type_name} = {option.default!r}{extra} — {option.doc}"
            )
        return lines

    def __repr__(self) -> str:
        head = [
            f"{self.name}: {self.summary}",
            f"  reference: {self.reference}",
            f"  explains: {self.explains}; needs: {', '.join(self.needs)}; "
            f"signed: {'yes' if self.signed else 'no'}",
            "  options:" if self.options else "  options: none",
        ]
        return "\n".join(head + [f"    {line}" for line in self._option_lines()])

    def _repr_markdown_(self) -> str:
        rows = [
            f"**{self.name}**: {self.summary}",
            "",
            f"*Reference:* {self.reference}  ",
            f"*Explains:* {self.explains}; *needs:* {', '.join(self.needs)}; "
            f"*signed:* {'yes' if self.signed else 'no'}",
            "",
        ]
        if not self.options:
            return "\n".join([*rows, "No options."])
        rows += ["| option | type | default | meaning |", "|---|---|---|---|"]
        for option in self.options:
            meaning = option.doc
            if option.choices:
                meaning += f" (one of {', '.join(map(repr, option.choices))})"
            if option.requirement:
                meaning += f" ({option.requirement})"
            cells = [option.name, option.type_name, repr(option.default), meaning]
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(rows)


_REGISTRY: dict[str, MethodSpec] = {}

#: What a capture can provide; ``needs`` must be a subset of this.
CAPABILITIES = frozenset(
    {
        "attentions",
        "attention_grads",
        "embedding_grads",
        "target_score",
        "target_probability",
        "head_values",
    }
)
#: Needs of methods that only read the query row's attention (not the target).
READS_ATTENTION = frozenset({"attentions", "head_values"})


def register(
    name: str,
    *,
    needs: Iterable[str],
    summary: str,
    reference: str,
    signed: bool = False,
    options: Iterable[Option] = (),
) -> Callable[[ScorerT], ScorerT]:
    """Decorator registering ``fn(context) -> scores (n,)`` under ``name``.

    ``fn`` may return ``(scores, details)`` instead, a dict the explanation keeps.

    ``options`` declares the method's keyword options; ``fn`` reads them,
    checked and with defaults filled in, with ``context.options_for(name)``.
    Unknown options are refused before a model runs (:func:`attnwidget.explain`).
    """
    check_method_name(name)
    needs_set = frozenset(needs)
    declared = tuple(options)
    names = [option.name for option in declared]
    if len(set(names)) != len(names):
        raise ValueError(f"method {name!r} declares an option twice: {names}")
    for option in declared:  # a default must pass its own validation
        option.validate(name, option.default)
    unknown = needs_set - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; choose from {sorted(CAPABILITIES)}")

    def decorator(fn: ScorerT) -> ScorerT:
        if name in _REGISTRY:
            raise ValueError(f"a method named {name!r} is already registered")
        _REGISTRY[name] = MethodSpec(name, fn, needs_set, summary, reference, signed, declared)
        return fn

    return decorator


def get_method(name: str) -> MethodSpec:
    """Look a method up by name; unknown names list the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownMethodError(
            f"unknown method {name!r}; known methods: {', '.join(available_methods())}."
        ) from None


def available_methods() -> list[str]:
    """Names of every registered method, in registration order."""
    return list(_REGISTRY)


def method_info(name: str) -> MethodInfo:
    """Describe a registered method: summary, reference, needs, options.

    ``attnwidget.method_info("rollout")`` prints each option with its type,
    default and meaning (and renders as a table in Jupyter); these are the
    keys ``method_options={"rollout": {...}}`` accepts.
    """
    return get_method(name).info()


def resolve_method_options(
    specs: Sequence[MethodSpec], method_options: Any
) -> dict[str, dict[str, Any]]:
    """Check ``method_options`` for the requested methods ``specs``; fill defaults.

    Returns ``{name: complete options}`` for every requested method. Raises
    :class:`InputError` for a non-dict, options for a method that is not
    registered or not requested (they would be silently unused), unknown
    option names and invalid values.
    """
    if method_options is None:
        method_options = {}
    if not isinstance(method_options, Mapping):
        raise InputError(
            "method_options must be a dict mapping method names to dicts of options, e.g. "
            '{"rollout": {"head_fusion": "max"}}; got ' + type(method_options).__name__ + "."
        )
    requested = [spec.name for spec in specs]
    for name in method_options:
        if name not in available_methods():
            raise InputError(
                f"method_options names an unknown method {name!r}; known methods: "
                f"{', '.join(available_methods())}."
            )
        if name not in requested:
            raise InputError(
                f"method_options has options for {name!r}, which is not among the requested "
                f"methods ({', '.join(requested) or 'none'}); add {name!r} to methods=[...] "
                "or drop its options (they would be ignored)."
            )
    return {spec.name: resolve_options(spec, method_options.get(spec.name)) for spec in specs}
