"""A small synthetic English grammar for the subject–verb agreement task.

The task follows Linzen, Dupoux & Goldberg (2016), "Assessing the ability of
LSTMs to learn syntax-sensitive dependencies" (TACL 4), as used by Abnar &
Zuidema (2020), "Quantifying Attention Flow in Transformers" (ACL): given the
words of a sentence up to, not including, its main verb, predict whether the
verb is singular ("is") or plural ("are"). The verb agrees with the head noun
of the subject, not with nouns of the opposite number that stand in between
(*attractors*):

    the keys to the old cabinet [are] ...
    the author that the critics praise [is] ...
    after the storms , the bridge near the houses with the lamps [is] ...

Every sentence is lower-case and its words are separated by single spaces, so
word ``i`` is token ``i + k`` for a word-level tokenizer that prepends ``k``
special tokens. Nothing here needs torch.

Splits: a sentence belongs to the test split when a stable hash of the lemmas
of its subject and of the first noun after it (or, with no such noun, of its
text) falls in the test fraction. The split is thus a function of the text,
so the splits are disjoint; and no test sentence pairs its subject with a first
following noun (as lemmas: "key" and "keys" alike) the way a training sentence
does, so in most test sentences with attractors, whose first following noun is
an attractor, the subject/attractor combination is new to the models.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

__all__ = [
    "ADJECTIVES",
    "DETERMINERS",
    "EVENTS",
    "NOUNS",
    "PLURAL_NOUNS",
    "SINGULAR_NOUNS",
    "SPLITS",
    "TEST_FRACTION",
    "VERBS",
    "Noun",
    "Sentence",
    "generate",
    "sample_sentence",
    "split_of",
    "vocabulary",
]


@dataclass(frozen=True)
class Noun:
    """A noun lemma with its two forms."""

    singular: str
    plural: str
    animate: bool


def _nouns(animate: bool, pairs: str) -> list[Noun]:
    out = []
    for pair in pairs.split():
        singular, plural = pair.split("/")
        out.append(Noun(singular, plural, animate))
    return out


#: Nouns that head subjects and attractors (irregular plurals included, so a
#: model cannot read number off an "-s").
NOUNS: tuple[Noun, ...] = tuple(
    _nouns(
        True,
        "author/authors critic/critics child/children man/men woman/women "
        "person/people teacher/teachers student/students doctor/doctors "
        "farmer/farmers dog/dogs cat/cats mouse/mice friend/friends "
        "neighbor/neighbors pilot/pilots senator/senators artist/artists",
    )
    + _nouns(
        False,
        "key/keys cabinet/cabinets table/tables door/doors window/windows "
        "box/boxes book/books car/cars letter/letters painting/paintings "
        "house/houses bridge/bridges picture/pictures bottle/bottles "
        "chair/chairs garden/gardens road/roads lamp/lamps",
    )
)
SINGULAR_NOUNS: frozenset[str] = frozenset(n.singular for n in NOUNS)
PLURAL_NOUNS: frozenset[str] = frozenset(n.plural for n in NOUNS)
_LEMMA: dict[str, str] = {n.singular: n.singular for n in NOUNS} | {
    n.plural: n.singular for n in NOUNS
}

#: Nouns of sentence-initial time phrases ("after the storms ,"). They come
#: before the subject, so they never count as attractors.
EVENTS: tuple[Noun, ...] = tuple(
    _nouns(
        False,
        "meeting/meetings storm/storms game/games party/parties holiday/holidays concert/concerts",
    )
)
#: Number-neutral determiners: the subject's number is only in its noun.
DETERMINERS: tuple[str, ...] = ("the", "the", "the", "the", "my", "your", "his", "her", "our")
ADJECTIVES: tuple[str, ...] = tuple(
    "old new small large red blue green heavy quiet famous young tired clever broken "
    "strange little".split()
)
PREPOSITIONS: tuple[str, ...] = tuple("of of to near behind on under with from beside for".split())
TIME_PREPOSITIONS: tuple[str, ...] = ("after", "before", "during")
#: Transitive verbs of relative clauses: (3rd person singular, plural).
VERBS: tuple[tuple[str, str], ...] = tuple(
    tuple(pair.split("/"))  # type: ignore[misc]
    for pair in "likes/like sees/see knows/know admires/admire praises/praise "
    "visits/visit follows/follow hates/hate finds/find remembers/remember".split()
)
PREDICATES: tuple[str, ...] = (*ADJECTIVES, "here", "there", "ready", "gone", "missing")
MAIN_VERBS: dict[str, str] = {"singular": "is", "plural": "are"}
SPLITS: tuple[str, ...] = ("train", "test")
TEST_FRACTION = 0.2
_MAX_DEPTH = 3


def vocabulary() -> list[str]:
    """Every word the grammar can produce, in a fixed order (no special tokens)."""
    words: list[str] = []
    for group in (
        DETERMINERS,
        ADJECTIVES,
        [f for n in NOUNS for f in (n.singular, n.plural)],
        [f for n in EVENTS for f in (n.singular, n.plural)],
        PREPOSITIONS,
        TIME_PREPOSITIONS,
        ["that", ","],
        [f for pair in VERBS for f in pair],
        list(MAIN_VERBS.values()),
        PREDICATES,
        ["."],
    ):
        for word in group:
            if word not in words:
                words.append(word)
    return words


@dataclass(frozen=True)
class Sentence:
    """One generated sentence, with word-level (not token-level) positions.

    Attributes:
        words: the prefix, i.e. the words before the main verb.
        label: "singular" or "plural", the number of the subject.
        subject: index into ``words`` of the subject's head noun.
        nouns: indices into ``words`` of the nouns after the subject.
        attractors: the subset of ``nouns`` whose number differs from the
            subject's (every such noun stands between subject and verb).
        continuation: the words after the verb (a predicate and ".").
    """

    words: tuple[str, ...]
    label: str
    subject: int
    nouns: tuple[int, ...]
    attractors: tuple[int, ...]
    continuation: tuple[str, ...]

    @property
    def text(self) -> str:
        """The prefix as a string."""
        return " ".join(self.words)

    @property
    def verb(self) -> str:
        """The main verb that agrees with the subject: "is" or "are"."""
        return MAIN_VERBS[self.label]

    @property
    def full_text(self) -> str:
        """The whole sentence: prefix, verb and continuation."""
        return " ".join((*self.words, self.verb, *self.continuation))


class _Builder:
    """Grows one sentence left to right, recording the nouns it places."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words: list[str] = []
        self.nouns: list[tuple[int, bool]] = []  # (word index, plural?)

    def noun_phrase(self, depth: int, *, animate: bool = False) -> tuple[Noun, bool]:
        rng = self.rng
        self.words.append(rng.choice(DETERMINERS))
        self.words += rng.sample(ADJECTIVES, rng.choices((0, 1, 2), weights=(6, 3, 1))[0])
        pool = [n for n in NOUNS if n.animate] if animate else NOUNS
        noun = rng.choice(pool)
        plural = rng.random() < 0.5
        self.nouns.append((len(self.words), plural))
        self.words.append(noun.plural if plural else noun.singular)
        if depth < _MAX_DEPTH:
            self.modifier(noun, plural, depth)
        return noun, plural

    def modifier(self, head: Noun, plural: bool, depth: int) -> None:
        rng = self.rng
        # Less embedding deeper down keeps sentences short on average.
        p_none = (0.25, 0.55, 0.75)[depth]
        kind = "none" if rng.random() < p_none else rng.choice(("pp", "pp", "orc", "src"))
        if kind == "src" and not head.animate:
            kind = "pp"
        if kind == "pp":  # the keys [to the cabinet]
            self.words.append(rng.choice(PREPOSITIONS))
            self.noun_phrase(depth + 1)
        elif kind == "orc":  # the author [that the critics praise]
            self.words.append("that")
            _, agent_plural = self.noun_phrase(depth + 1, animate=True)
            self.words.append(rng.choice(VERBS)[1 if agent_plural else 0])
        elif kind == "src":  # the author [that praises the critics]
            self.words.append("that")
            self.words.append(rng.choice(VERBS)[1 if plural else 0])
            self.noun_phrase(depth + 1)


def sample_sentence(rng: random.Random) -> Sentence:
    """Draw one sentence from the grammar (any number of attractors)."""
    builder = _Builder(rng)
    if rng.random() < 0.15:  # after the storms ,
        event = rng.choice(EVENTS)
        builder.words += [
            rng.choice(TIME_PREPOSITIONS),
            "the",
            event.plural if rng.random() < 0.5 else event.singular,
            ",",
        ]
    builder.noun_phrase(0)
    (subject, subject_plural), *others = builder.nouns
    continuation = (rng.choice(PREDICATES), ".")
    return Sentence(
        words=tuple(builder.words),
        label="plural" if subject_plural else "singular",
        subject=subject,
        nouns=tuple(i for i, _ in others),
        attractors=tuple(i for i, p in others if p != subject_plural),
        continuation=continuation,
    )


def split_of(words: tuple[str, ...] | list[str] | str) -> str:
    """The split ("train" or "test") a sentence prefix belongs to.

    Decided by a stable hash of the lemmas of the first two grammar nouns (the
    subject and the first noun after it), or of the whole prefix when it has
    only one noun; so the same text always lands in the same split.
    """
    if isinstance(words, str):
        words = words.split()
    lemmas = [_LEMMA[w] for w in words if w in _LEMMA]
    key = "pair:" + " ".join(lemmas[:2]) if len(lemmas) >= 2 else "text:" + " ".join(words)
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return "test" if int.from_bytes(digest, "big") % 1000 < TEST_FRACTION * 1000 else "train"


def generate(
    n: int, *, seed: int, split: str, attractors: bool | None = None, unique: bool = True
) -> list[Sentence]:
    """Draw ``n`` sentences of one split, deterministically for a given seed.

    Args:
        n: how many sentences.
        seed: the random seed; the same (seed, split, attractors) gives the
            same list on every machine and Python version.
        split: "train" or "test".
        attractors: True keeps sentences with at least one attractor, False
            those with none, None keeps every sentence.
        unique: drop repeated prefixes.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    rng = random.Random(f"attnwidget-sva:{split}:{attractors}:{seed}")
    out: list[Sentence] = []
    seen: set[tuple[str, ...]] = set()
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 100 * n + 10_000:
            raise RuntimeError(f"could not draw {n} distinct sentences for split {split!r}")
        s = sample_sentence(rng)
        if attractors is not None and bool(s.attractors) != attractors:
            continue
        if split_of(s.words) != split:
            continue
        if unique:
            if s.words in seen:
                continue
            seen.add(s.words)
        out.append(s)
    return out
