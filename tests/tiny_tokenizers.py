"""Tiny real tokenizers built in-process with the ``tokenizers`` library (no hub).

Fixed vocabularies where a trainer's choice could vary between processes, so
token ids are the same in every run: WordPiece (BERT family, ALBERT),
byte-level BPE (GPT-2 style, also for Llama-like decoders, RoBERTa and
seq2seq templates) and a SentencePiece-style Unigram with ``▁`` (XLM-R,
CamemBERT, Gemma). Split from ``tiny_models.py``, which builds the models.
"""

from __future__ import annotations

import functools

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers.trainers import BpeTrainer
from transformers import PreTrainedTokenizerFast

CORPUS = [
    "the keys to the cabinet are on the table",
    "the author that the critics praise is famous",
    "a dog runs in the park and the cats sleep",
    "the movie was great but the ending was terrible",
    "is the weather nice today ? yes it is",
    "she reads books while he writes letters",
] * 4


@functools.cache
def wordpiece_tokenizer() -> PreTrainedTokenizerFast:
    """A BERT-style WordPiece tokenizer: [CLS] a [SEP] b [SEP], ``##`` continuations."""
    # A fixed vocabulary (a trainer's choice of pieces varies between
    # processes): the corpus words, except a few left to be split into
    # "##" pieces, plus every character alone and as a continuation.
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    split_words = {"keys", "cabinet", "table", "are"}
    words = sorted({w for line in CORPUS for w in line.split()} - split_words)
    chars = sorted({c for line in CORPUS for c in line if c != " "})
    pieces = ["ke", "##ys", "cab", "##in", "##et", "tab", "##le", "ar", "##e"]
    tokens = specials + words + chars + [f"##{c}" for c in chars] + pieces
    vocab = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )


@functools.cache
def bytelevel_tokenizer(bos: bool = False) -> PreTrainedTokenizerFast:
    """A GPT-2-style byte-level BPE tokenizer (``Ġ`` marks a leading space)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>", "<s>", "</s>", "<pad>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A </s> $B", special_tokens=[("<s>", 1), ("</s>", 2)]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        bos_token="<s>",
        unk_token="<|endoftext|>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=64,
    )


@functools.cache
def roberta_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE with RoBERTa's <s> a </s></s> b </s> template."""
    base = bytelevel_tokenizer()
    tok = Tokenizer.from_str(base.backend_tokenizer.to_str())
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B:1 </s>:1",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<|endoftext|>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
        model_max_length=64,
    )


@functools.cache
def seq2seq_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE whose encoder inputs end in </s> (T5/BART-like)."""
    base = bytelevel_tokenizer()
    tok = Tokenizer.from_str(base.backend_tokenizer.to_str())
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<|endoftext|>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=64,
    )


@functools.cache
def sentencepiece_tokenizer(template: str = "roberta") -> PreTrainedTokenizerFast:
    """A SentencePiece-style Unigram tokenizer (``▁`` marks a leading space).

    Like XLM-R's, CamemBERT's and Gemma's: a fixed vocabulary (so ids are the
    same in every process) of whole words ``▁word``, a few words left to be
    split, and every character alone and after ``▁``. ``template`` is
    ``"roberta"`` (``<s> a </s></s> b </s>``) or ``"bos"`` (``<s> a``).
    """
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    split_words = {"keys", "cabinet", "table"}
    words = sorted({w for line in CORPUS for w in line.split()} - split_words)
    chars = sorted({c for line in CORPUS for c in line if c != " "})
    pieces = ["▁ke", "ys", "▁cab", "in", "et", "▁tab", "le"]
    vocab = [(t, 0.0) for t in specials]
    vocab += [(f"▁{w}", -1.0 - 0.01 * i) for i, w in enumerate(words)]
    vocab += [(p, -2.0) for p in pieces]
    vocab += [(c, -5.0) for c in chars] + [(f"▁{c}", -6.0) for c in chars] + [("▁", -8.0)]
    unique = list(dict((t, score) for t, score in vocab).items())
    tok = Tokenizer(models.Unigram(unique, unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    if template == "roberta":
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>",
            pair="<s> $A </s> </s> $B:1 </s>:1",
            special_tokens=[("<s>", 0), ("</s>", 2)],
        )
    else:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", 0)]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
        model_max_length=64,
    )
