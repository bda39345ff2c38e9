"""Word-level tokenizers for the demo models, in Hugging Face format.

Each model directory holds its own ``tokenizer.json`` (a ``tokenizers``
``WordLevel`` model) and ``tokenizer_config.json`` so that
``AutoTokenizer.from_pretrained(path)`` loads it offline as a
``PreTrainedTokenizerFast``. Both share the grammar's word list; they differ in
their special tokens:

* ``"encoder"``: ``[PAD] [UNK] [CLS] [SEP] [MASK]``; ``tokenizer(text)`` gives
  ``[CLS] words [SEP]``.
* ``"causal"``: ``[PAD] [UNK] [BOS] [EOS]``; ``tokenizer(text)`` gives
  ``[BOS] words`` (no ``[EOS]``, so the last position predicts the next word).

Text is lower-cased and split on white space and punctuation; unknown words
become ``[UNK]``.
"""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from attnwidget.demo.grammar import vocabulary

__all__ = ["KINDS", "MAX_LENGTH", "build_tokenizer"]

#: Longest input (in tokens, special tokens included) the demo models accept.
MAX_LENGTH = 64

_SPECIALS = {
    "encoder": {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "mask_token": "[MASK]",
    },
    "causal": {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "bos_token": "[BOS]",
        "eos_token": "[EOS]",
    },
}
KINDS: tuple[str, ...] = tuple(_SPECIALS)


def build_tokenizer(kind: str) -> PreTrainedTokenizerFast:
    """Build the word-level tokenizer of one model kind ("encoder" or "causal")."""
    if kind not in _SPECIALS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    specials = _SPECIALS[kind]
    tokens = [*specials.values(), *vocabulary()]
    vocab = {token: i for i, token in enumerate(tokens)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    if kind == "encoder":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
        )
    else:
        tok.post_processor = processors.TemplateProcessing(
            single="[BOS] $A",
            pair="[BOS] $A $B:1",
            special_tokens=[("[BOS]", vocab["[BOS]"])],
        )
    # GPT-2 has token type embeddings: a tokenizer that returned token_type_ids
    # (transformers < 5 does unless told otherwise) would add them to every
    # position, and the causal model was trained without them.
    inputs = {} if kind == "encoder" else {"model_input_names": ["input_ids", "attention_mask"]}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        model_max_length=MAX_LENGTH,
        padding_side="right",
        **inputs,
        **specials,
    )
