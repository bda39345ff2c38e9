"""The self-attention stacks a flow diagram can show.

Encoder–decoder explanations (T5, BART) have two self-attention stacks:
``stack="encoder"`` (``explanation.attentions``, over the input tokens; for
every other model its only stack) and ``stack="decoder"``
(``explanation.decoder_attentions``, over the decoder tokens; the selection's
query is the explained decoder position). :func:`stack_explanation` gives the
decoder stack as an explanation of its own, without the encoder's scores,
gradients and method details, so only the methods that need attention alone
(raw, rollout, flow) apply there: the capture records gradients and AttnLRP
relevance of the encoder's attention only. Cross-attention (decoder →
encoder) is in neither stack's graph: decoder paths assume, as rollout does,
that decoder tokens mix only through self-attention and the residual.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attnwidget.errors import ModelNotSupportedError

#: The self-attention stacks a flow diagram can show (see "Stacks" above).
STACKS: tuple[str, ...] = ("encoder", "decoder")


def stacks(explanation: Any) -> list[str]:
    """``explanation``'s stacks: ``["encoder", "decoder"]`` with decoder attention, else one."""
    if getattr(explanation, "decoder_attentions", None) is not None:
        return list(STACKS)
    return ["encoder"]


def stack_problem(explanation: Any, stack: object) -> str | None:
    """Why ``stack`` cannot be shown for ``explanation`` (and what to do instead), or None."""
    if stack in stacks(explanation):
        return None
    if stack != "decoder":
        return (
            f"stack={stack!r} is not a stack; use 'encoder' or 'decoder' (encoder–decoder models)."
        )
    kind = getattr(explanation, "kind", "arrays")
    if kind == "encoder-decoder":
        why = "this encoder–decoder explanation has no decoder_attentions"
    else:
        why = (
            f"this explanation (kind {kind!r}) has a single self-attention stack, shown as "
            "stack='encoder' (for a decoder-only model such as GPT-2 that stack is its decoder)"
        )
    return (
        f"stack='decoder' needs an encoder–decoder explanation (T5, BART) with decoder "
        f"self-attention; {why}. Use stack='encoder', or explain an encoder–decoder model "
        "with attnwidget.explain(model, tokenizer, text, decoder_text=...)."
    )


def stack_explanation(explanation: Any, stack: str = "encoder") -> Any:
    """``explanation`` as one stack sees it (see "Stacks" in the module docstring).

    ``"encoder"``: the explanation itself, or with :attr:`ignored_keys` a copy whose
    attentions are its ``renormalised_attentions``. ``"decoder"``: a copy whose tokens are
    the decoder tokens, attentions the decoder self-attention and query the
    explained decoder position, without scores, gradients or details (those
    are the encoder tokens'), so that no method computes them from the wrong
    stack. Raises ``ValueError`` (unknown name) or ``ModelNotSupportedError``
    (no decoder) with the fix.
    """
    problem = stack_problem(explanation, stack)
    if problem is not None:
        raise (ValueError if stack != "decoder" else ModelNotSupportedError)(problem)
    if stack == "encoder":
        if not getattr(explanation, "ignored_keys", None):
            return explanation
        # explain(..., ignore_keys=...): the rows the methods read (the record keeps
        # the model's own); the copy says no key is left out, so none is twice.
        maps = explanation.renormalised_attentions
        return replace(explanation, attentions=maps, ignored_keys=[])
    return replace(
        explanation,
        tokens=[str(t) for t in explanation.decoder_tokens],
        attentions=explanation.decoder_attentions,
        raw_tokens=None,
        input_ids=None,
        sentence_b_start=None,
        scores={},
        attention_grads=None,
        decoder_tokens=None,
        decoder_attentions=None,
        cross_attentions=None,
        details={},
    )
