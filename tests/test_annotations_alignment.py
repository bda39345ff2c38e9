"""Word ↔ token alignment (attnwidget.annotations.alignment), the rule the
Annotator's score overlay uses: tokens map to the word their character span
overlaps, special and text_pair tokens to none, word score = sum of its tokens'.

Checked on hand-made offsets (every branch of the rule) and on real
tokenizers of the three kinds: WordPiece (BERT), byte-level BPE (GPT-2,
RoBERTa, a seq2seq template) and SentencePiece-style Unigram (XLM-R's
template and a BOS-only one), plus the shipped demo model's tokenizer.
"""

from __future__ import annotations

import numpy as np
import pytest
from tiny_tokenizers import (
    bytelevel_tokenizer,
    roberta_tokenizer,
    sentencepiece_tokenizer,
    seq2seq_tokenizer,
    wordpiece_tokenizer,
)

from attnwidget.annotations.alignment import Alignment, align, token_words, word_spans
from attnwidget.errors import InputError

TEXT = "The keys, to the cabinet  are on the table"
WORDS = TEXT.split()


def test_word_spans_are_str_split_words_for_every_kind_of_whitespace() -> None:
    odd = "a\u00a0b\tc\n\nd\x1ce\u2028f\u3000g\x85h \u200bi  "  # \u200b is not whitespace
    for text in [TEXT, odd, "  lead and trail  ", "one", "x\r\ny"]:
        spans = word_spans(text)
        assert [text[s:e] for s, e in spans] == text.split()
    assert word_spans("ab  cd") == [(0, 2), (4, 6)]


def test_token_words_rule_on_hand_made_offsets() -> None:
    words = [(0, 3), (4, 8), (9, 11)]  # "The keys to"
    offsets = [
        (0, 0),  # a special token: sequence id None
        (0, 3),  # "The"
        (3, 5),  # " k": overlaps only "keys" (the space is no word's)
        (5, 8),  # "eys"
        (8, 9),  # " " alone: no word
        (7, 11),  # "s to": overlaps "keys" by 1 and "to" by 2 -> "to"
        (6, 10),  # "ys t": 2 and 1 -> "keys"
        (3, 3),  # empty span
        (0, 2),  # a text_pair token (sequence 1): no word even though it overlaps
    ]
    sequence = [None, 0, 0, 0, 0, 0, 0, 0, 1]
    got = token_words(offsets, words, sequence)
    assert got.tolist() == [-1, 0, 1, 1, -1, 2, 1, -1, -1]
    assert got.dtype == np.int64
    # A tie goes to the first word; no sequence ids: every token is the text's.
    assert token_words([(2, 6)], [(0, 3), (5, 8)]).tolist() == [0]
    assert token_words([(0, 2)], [(0, 3)]).tolist() == [0]
    with pytest.raises(ValueError, match="sequence ids"):
        token_words([(0, 1)], [(0, 1)], [0, 0])


def test_word_scores_sum_tokens_and_unseen_words_are_nan() -> None:
    a = Alignment(
        ("a", "bc", "d"),
        ((0, 1), (2, 4), (5, 6)),
        ("[CLS]", "a", "b", "c", "[SEP]"),
        np.array([-1, 0, 1, 1, -1]),
    )
    scores = np.array([[9.0, 0.5, 0.25, 0.125, 7.0], [1, 2, 3, 4, 5]])
    got = a.word_scores(scores)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got[:, :2], [[0.5, 0.375], [2, 7]])
    assert np.isnan(got[:, 2]).all()  # "d": no token (truncated)
    assert a.tokens_of(1) == [2, 3]
    with pytest.raises(ValueError, match="5 tokens"):
        a.word_scores(np.zeros(4))


def _check_pieces_inside_words(tokenizer, text: str, pair: str | None = None) -> Alignment:
    """Every token mapped to a word covers characters of it; unmapped ones are
    special, the pair's, or cover no word character."""
    a = align(tokenizer, text, pair)
    encoding = tokenizer(text, pair, return_offsets_mapping=True)
    sequence = encoding.sequence_ids(0)
    assert a.words == tuple(text.split())
    for k, (start, end) in enumerate(encoding["offset_mapping"]):
        w = int(a.token_words[k])
        if w >= 0:
            ws, we = a.word_spans[w]
            assert max(start, ws) < min(end, we), (a.tokens[k], a.words[w])
        elif sequence[k] == 0:
            assert text[start:end].strip() == "" or start == end, a.tokens[k]
    # Every word got at least one token (nothing truncated here).
    assert set(range(len(a.words))) <= set(a.token_words.tolist())
    return a


def _mapped(a: Alignment) -> list[tuple[str, str | None]]:
    return [
        (t, a.words[w] if w >= 0 else None) for t, w in zip(a.tokens, a.token_words, strict=True)
    ]


def test_wordpiece_bert() -> None:
    a = _check_pieces_inside_words(wordpiece_tokenizer(), TEXT)
    pairs = _mapped(a)
    assert pairs[0] == ("[CLS]", None) and pairs[-1] == ("[SEP]", None)
    # "##" continuations and the split-off comma stay with their word.
    assert [t for t, w in pairs if w == "keys,"] == ["ke", "##ys", "[UNK]"]
    assert [t for t, w in pairs if w == "cabinet"] == ["cab", "##in", "##et"]
    assert ("the", "The") in pairs  # lowercased, still the first word


def test_wordpiece_pair_tokens_map_to_no_word() -> None:
    a = _check_pieces_inside_words(wordpiece_tokenizer(), "the table", "the keys")
    assert _mapped(a) == [
        ("[CLS]", None), ("the", "the"), ("tab", "table"), ("##le", "table"), ("[SEP]", None),
        ("the", None), ("ke", None), ("##ys", None), ("[SEP]", None),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "make",
    [bytelevel_tokenizer, roberta_tokenizer, seq2seq_tokenizer],
    ids=["gpt2", "roberta", "t5-like"],
)
def test_bytelevel_bpe(make) -> None:
    text = TEXT + " café"
    a = _check_pieces_inside_words(make(), text)
    pairs = _mapped(a)
    # "Ġ" pieces carry the space before a word: they belong to the word, and
    # a lone "Ġ" (the extra space before "are") to none.
    assert ("Ġto", "to") in pairs
    assert next(t for t, w in pairs if w == "cabinet").startswith("Ġ")
    assert any(t == "Ġ" and w is None for t, w in pairs)
    # The two bytes of "é" both belong to "café".
    assert [t for t, w in pairs if w == "café"][-2:] == ["Ã", "©"]
    specials = {"<s>", "</s>"}
    assert all(w is None for t, w in pairs if t in specials)


@pytest.mark.parametrize("template", ["roberta", "bos"], ids=["xlm-r", "gemma-like"])
def test_sentencepiece_unigram(template: str) -> None:
    a = _check_pieces_inside_words(sentencepiece_tokenizer(template), TEXT)
    pairs = _mapped(a)
    assert pairs[0] == ("<s>", None)
    assert [t for t, w in pairs if w == "cabinet"] == ["▁cab", "in", "et"]
    assert ("▁the", "The") in pairs
    assert ("▁", None) in pairs  # the piece of the double space
    if template == "roberta":
        assert pairs[-1] == ("</s>", None)


def test_shipped_demo_tokenizer() -> None:
    from attnwidget import demo

    _, tokenizer = demo.load("sva-encoder")
    a = _check_pieces_inside_words(tokenizer, "the keys to the cabinet are")
    assert a.token_words.tolist() == [-1, 0, 1, 2, 3, 4, 5, -1]


def test_input_ids_must_match_and_truncated_ids_align_their_prefix() -> None:
    tok = wordpiece_tokenizer()
    full = tok(TEXT)["input_ids"]
    cut = tok(TEXT, truncation=True, max_length=6)["input_ids"]
    a = align(tok, TEXT, input_ids=cut)
    assert len(a.token_words) == 6
    scores = a.word_scores(np.ones(6))
    # [CLS] the ke ##ys [UNK] [SEP]: "The" and "keys," seen, the words past the cut NaN.
    assert scores[:2].tolist() == [1.0, 3.0] and np.isnan(scores[2:]).all()
    assert align(tok, TEXT, input_ids=full).token_words.shape == (len(full),)
    with pytest.raises(InputError, match="tokenizer the model was explained with"):
        align(tok, TEXT, input_ids=bytelevel_tokenizer()(TEXT)["input_ids"])


def test_a_tokenizer_without_offsets_is_refused_naming_the_fix() -> None:
    class Slow:
        def __call__(self, *args, **kwargs):
            raise NotImplementedError("return_offset_mapping is not available")

    with pytest.raises(InputError, match="use_fast=True"):
        align(Slow(), "some words")
