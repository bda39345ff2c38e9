"""How much the annotators of a :class:`~.store.Store` agree: :func:`agreement`.

Every figure comes from the pure functions of :mod:`attnwidget.metrics`:
Cohen's κ (Cohen 1960; :func:`~attnwidget.metrics.cohen_kappa`) and token F1
(:func:`~attnwidget.metrics.token_prf`) on the 0/1 word labels, Krippendorff's
α (nominal; :func:`~attnwidget.metrics.krippendorff_alpha`, the
``krippendorff`` package) over any number of annotators with missing values,
ERASER's span IOU-F1 (DeYoung et al. 2020; :func:`~attnwidget.metrics.iou_f1`,
a span matching at IOU ≥ 0.5, one to one), and label agreement, the share of
items where two annotators gave the same label (``Annotation.label``; items
where either gave none do not count). Intervals are percentile bootstraps
(Efron & Tibshirani 1993) **over items**.

What counts. An item an annotator has not saved is *missing* (it is left out
of that annotator's pairs and is NaN in α), never "no rationale". A saved
annotation with no span, or one flagged ``no_evidence``, is a rationale of
all-zero labels: the annotator looked and marked nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError
from attnwidget.metrics.agreement import cohen_kappa, krippendorff_alpha
from attnwidget.metrics.plausibility import iou_f1, token_prf

if TYPE_CHECKING:
    import pandas as pd

    from attnwidget.annotations.store import Store

#: The columns of :attr:`Agreement.overall`, each with ``_low`` and ``_high``.
METRICS = ("cohen_kappa", "krippendorff_alpha", "token_f1", "iou_f1", "label_agreement")
ALL = "all"


@dataclass(frozen=True)
class Agreement:
    """The result of :func:`agreement`.

    ``per_item``: one row per item and pair of annotators who both saved it
    (``item_id``, ``annotator_a``, ``annotator_b``, ``n_words``, ``token_f1``,
    ``iou_f1``, ``cohen_kappa``, ``label_a``, ``label_b``, ``same_label``) and,
    repeated on each row of the item, ``n_annotators`` and the item's
    ``krippendorff_alpha`` over all its annotators (NaN where undefined: fewer
    than two annotators, or every word given the same label).

    ``overall``: one row per pair (index ``"ana vs ben"``) and a last row
    ``"all"``; columns ``annotator_a``, ``annotator_b`` (None on ``"all"``),
    ``n_items``, and for each of :data:`METRICS` the figure with its
    ``_low`` / ``_high`` interval. See :func:`agreement` for the definitions.
    """

    per_item: pd.DataFrame
    overall: pd.DataFrame
    annotators: tuple[str, ...]
    confidence: float
    n_resamples: int


@dataclass(frozen=True)
class _Rating:
    vector: np.ndarray  # 0/1 per word
    spans: tuple[tuple[int, int], ...]
    label: str | None


def _read(
    store: Store, names: Sequence[str], item_ids: Sequence[str], include_suggested: bool | None
) -> dict[str, dict[str, _Rating]]:
    """``{item_id: {annotator: rating}}`` for the chosen items and annotators."""
    frame = store.to_dataframe()
    wanted_items, wanted_names = set(item_ids), set(names)
    frame = frame[frame["item_id"].isin(wanted_items) & frame["annotator"].isin(wanted_names)]
    out: dict[str, dict[str, _Rating]] = {ident: {} for ident in item_ids}
    # Stores of schema 3 on record suggestion_shown (the method shown, or None: none was).
    # Where the DataFrame lacks the column the Annotation itself is read; older
    # stores record nothing, and the filter is then refused.
    load = include_suggested is not None and "suggestion_shown" not in frame.columns
    recorded = not load
    for row in frame.itertuples(index=False):
        found: Any = row
        if load:
            found = store.load(row.item_id, annotator=row.annotator) or row
            recorded = recorded or hasattr(found, "suggestion_shown")
        shown = getattr(found, "suggestion_shown", None)
        shown = shown is not None and not (isinstance(shown, float) and math.isnan(shown))
        if include_suggested is not None and shown != include_suggested:
            continue
        n_words = int(row.n_words)
        spans = tuple((int(s), int(e)) for s, e in row.spans)
        if getattr(found, "no_evidence", False):
            spans = ()
        vector = np.zeros(n_words, dtype=np.uint8)
        for start, end in spans:
            vector[start:end] = 1
        label = row.label if isinstance(row.label, str) else None  # missing: NaN
        out[row.item_id][row.annotator] = _Rating(vector, spans, label)
    if include_suggested is not None and not recorded and len(frame):
        raise InputError(
            f"include_suggested={include_suggested!r}: this store does not record whether a "
            "suggestion was shown (no annotation has suggestion_shown); pass "
            "include_suggested=None to compare every annotation"
        )
    return out


def _choose(store: Store, annotators: Any, items: Any) -> tuple[list[str], list[str]]:
    all_items = [item.id for item in store.items()]
    if not all_items:
        raise InputError(
            f"the store {store.path} holds no items: add items and annotations first "
            "(store.add_items, store.save)"
        )
    known = store.annotators()
    if annotators is None:  # the annotators, not the adjudicated gold they led to
        judges = set(store.adjudicators())
        names = [name for name in known if name not in judges]
    else:
        if isinstance(annotators, str) or not isinstance(annotators, Iterable):
            raise InputError(
                f"annotators={annotators!r}: pass a list of annotator names, e.g. "
                "annotators=['ana', 'ben'], or None for everyone but the adjudicators"
            )
        names = list(dict.fromkeys(_validate.annotator(name) for name in annotators))
        unknown = [name for name in names if name not in known]
        if unknown:
            raise InputError(
                f"annotator(s) {unknown} have saved nothing in this store; its annotators "
                f"are {known}"
            )
    if len(names) < 2:
        raise InputError(
            f"agreement needs at least two annotators; got {names} (the store's annotators: "
            f"{known})"
        )
    if items is None:
        chosen = all_items
    else:
        if isinstance(items, str) or not isinstance(items, Iterable):
            raise InputError(f"items={items!r}: pass a list of item ids, or None for every item")
        chosen = list(dict.fromkeys(_validate.item_id(ident) for ident in items))
        present = set(all_items)
        unknown = [ident for ident in chosen if ident not in present]
        if unknown:
            raise InputError(f"item(s) {unknown[:5]} are not in the store ({len(present)} items)")
        if not chosen:
            raise InputError("items=[] chooses no item: pass some item ids, or None for all")
    return names, chosen


# -- sufficient statistics per (item, pair), so a bootstrap resample is a sum --------------------


def _pair_counts(a: _Rating, b: _Rating) -> np.ndarray:
    """[n11, n10, n01, n00, span matches, spans a, spans b, same label, labelled]."""
    x, y = a.vector.astype(bool), b.vector.astype(bool)
    prf = iou_f1(a.spans, b.spans)
    matches = round(prf.precision * len(a.spans)) if a.spans else 0
    labelled = a.label is not None and b.label is not None
    return np.array(
        [
            (x & y).sum(),
            (x & ~y).sum(),
            (~x & y).sum(),
            (~x & ~y).sum(),
            matches,
            len(a.spans),
            len(b.spans),
            labelled and a.label == b.label,
            labelled,
        ],
        dtype=np.float64,
    )


def _from_counts(c: np.ndarray) -> np.ndarray:
    """κ, token F1, IOU-F1 and label agreement of summed counts (rows: resamples).

    The same formulas as :func:`cohen_kappa` (p_o, p_e from each side's
    shares) and :func:`token_prf` / :func:`iou_f1` (micro F1 = 2·hits / (|a| +
    |b|), 1 when both are empty); tests check them against those functions.
    """
    n11, n10, n01, n00, matches, sa, sb, same, labelled = c.T
    n = n11 + n10 + n01 + n00
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (n11 + n00) / n
        expected = ((n11 + n10) * (n11 + n01) + (n00 + n01) * (n00 + n10)) / n**2
        kappa = np.where(expected == 1, np.nan, (observed - expected) / (1 - expected))
        f1 = np.where(n11 * 2 + n10 + n01 == 0, 1.0, 2 * n11 / (2 * n11 + n10 + n01))
        span_f1 = np.where(sa + sb == 0, 1.0, 2 * matches / (sa + sb))
        label = np.where(labelled == 0, np.nan, same / labelled)
    kappa = np.where(n == 0, np.nan, kappa)
    f1 = np.where(n == 0, np.nan, f1)
    span_f1 = np.where(n == 0, np.nan, span_f1)
    return np.stack([kappa, f1, span_f1, label], axis=-1)


def _alpha(blocks: list[np.ndarray]) -> float:
    """α over (annotators, words) blocks put side by side; NaN where undefined."""
    if not blocks:
        return float("nan")
    matrix = np.concatenate(blocks, axis=1)
    try:
        return krippendorff_alpha(matrix, "nominal")
    except InputError:  # no word has two annotators' labels
        return float("nan")


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    kept = values[~np.isnan(values)]
    if not kept.size:
        return float("nan"), float("nan")
    low, high = np.quantile(kept, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def agreement(
    store: Store,
    annotators: Sequence[str] | None = None,
    items: Sequence[str] | None = None,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    include_suggested: bool | None = None,
) -> Agreement:
    """Agreement between ``annotators`` over ``items`` (None: all) of ``store``.

    ``annotators``: the names to compare; None: everyone who saved an
    annotation except the adjudicators (:meth:`Store.adjudicators`, e.g. the
    "gold" that :meth:`Store.adjudicate` wrote), whose versions are merges of
    the others' and would inflate the agreement; name them to include them.

    Words are the items' words (``text.split()``); each annotator's rationale
    is a 0/1 label per word. For each pair of annotators, over the items both
    saved (**pooled**: the items' words put end to end):

    * ``cohen_kappa``: Cohen's κ of the two label sequences.
    * ``krippendorff_alpha``: α (nominal) of the two.
    * ``token_f1``: token F1 of one against the other (symmetric).
    * ``iou_f1``: span IOU-F1 (ERASER): spans matched one to one at IOU ≥
      0.5 within each item; F1 = 2·matches / (spans of a + spans of b).
    * ``label_agreement``: share of the items both labelled with the same label.

    The row ``"all"``: ``krippendorff_alpha`` over every chosen annotator at
    once, words of items an annotator did not save missing (NaN); the other
    four are the mean of the pairs' figures (for κ this is Light's κ, Light
    1971). Undefined figures are NaN (κ and α when every word has one label,
    label agreement when no item has two labels) and are left out of means.

    ``per_item`` gives the same figures per item (κ of the item's words, its
    token F1 and IOU-F1, whether the labels agree) and the item's α over all
    its annotators. Token and span F1 of two empty rationales are 1 (they
    agree that nothing is evidence; :mod:`attnwidget.metrics.plausibility`).

    **Intervals: items are resampled, not words.** Words of one item are not
    independent draws (a rationale is a few contiguous spans; an annotator's
    habits hold across an item), so resampling words would treat thousands
    of correlated labels as independent and give intervals far too narrow.
    The item is the unit that was sampled (and annotated), so each of
    ``n_resamples`` resamples draws the items with replacement
    (``numpy.random.default_rng(seed)``) and recomputes every figure on them;
    ``_low`` / ``_high`` are the ``(1 ∓ confidence) / 2`` quantiles of the
    finite resampled values. For a pair the items drawn are those both
    annotators saved; for ``"all"`` those at least two saved.

    ``include_suggested``: None compares every annotation; True only those
    saved while a suggestion (a method's scores) was shown, False only those
    saved without (annotations that do not record it are left out), so the
    same annotators can be compared with and without suggestions.

    Raises ``InputError`` for an empty store, unknown annotators or items, and
    fewer than two annotators.
    """
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the evaluate extra
        raise ImportError("agreement needs pandas: pip install 'attnwidget[evaluate]'") from None
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise InputError(f"confidence={confidence!r}: pass a number in (0, 1), e.g. 0.95")
    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence!r}: pass a number in (0, 1), e.g. 0.95")
    for name, value, least in (("n_resamples", n_resamples, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InputError(f"{name}={value!r}: pass an int >= {least}")
    if include_suggested not in (None, True, False):
        raise InputError(f"include_suggested={include_suggested!r}: pass None, True or False")
    names, chosen = _choose(store, annotators, items)
    ratings = _read(store, names, chosen, include_suggested)
    done = [name for name in names if any(name in found for found in ratings.values())]
    if len(done) < 2:
        raise InputError(
            f"agreement needs two annotators with saved annotations among the chosen items"
            f"{'' if include_suggested is None else ' and include_suggested'}; found {done}"
        )
    pairs = list(itertools.combinations(names, 2))
    item_order = [ident for ident in chosen if len(ratings[ident]) >= 2]
    position = {ident: k for k, ident in enumerate(item_order)}
    # counts[p, i]: the pair's sufficient statistics on item i (NaN row: not both saved).
    counts = np.full((len(pairs), len(item_order), 9), np.nan)
    per_item_rows = []
    blocks: dict[str, np.ndarray] = {}
    for ident in item_order:
        found = ratings[ident]
        n_words = next(iter(found.values())).vector.size
        block = np.full((len(names), n_words), np.nan)
        for row, name in enumerate(names):
            if name in found:
                block[row] = found[name].vector
        blocks[ident] = block
        alpha = _alpha([block[~np.isnan(block).all(axis=1)]])
        for p, (a, b) in enumerate(pairs):
            if a not in found or b not in found:
                continue
            ra, rb = found[a], found[b]
            counts[p, position[ident]] = _pair_counts(ra, rb)
            labelled = ra.label is not None and rb.label is not None
            per_item_rows.append(
                {
                    "item_id": ident,
                    "annotator_a": a,
                    "annotator_b": b,
                    "n_words": n_words,
                    "token_f1": token_prf(ra.vector, rb.vector).f1,
                    "iou_f1": iou_f1(ra.spans, rb.spans).f1,
                    "cohen_kappa": cohen_kappa(ra.vector.tolist(), rb.vector.tolist()),
                    "label_a": ra.label,
                    "label_b": rb.label,
                    "same_label": (ra.label == rb.label) if labelled else None,
                    "n_annotators": len(found),
                    "krippendorff_alpha": alpha,
                }
            )
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, str | None, str | None, int, list[float], np.ndarray]] = []
    pair_points = []
    pair_boots = []
    n = len(item_order)
    draws = [rng.integers(0, n, n) for _ in range(n_resamples)] if n else []
    for p, (a, b) in enumerate(pairs):
        both = np.flatnonzero(~np.isnan(counts[p, :, 0]))
        c = counts[p, both]
        if both.size:
            va = np.concatenate([ratings[item_order[i]][a].vector for i in both])
            vb = np.concatenate([ratings[item_order[i]][b].vector for i in both])
            spans_a, spans_b, offset = [], [], 0
            for i in both:
                ra, rb = ratings[item_order[i]][a], ratings[item_order[i]][b]
                spans_a += [(s + offset, e + offset) for s, e in ra.spans]
                spans_b += [(s + offset, e + offset) for s, e in rb.spans]
                offset += ra.vector.size
            labels = c[:, 8].sum()
            point = [
                cohen_kappa(va.tolist(), vb.tolist()),
                _alpha([np.stack([va, vb]).astype(np.float64)]),
                token_prf(va, vb).f1,
                iou_f1(spans_a, spans_b).f1,
                c[:, 7].sum() / labels if labels else float("nan"),
            ]
            rows_ab = [names.index(a), names.index(b)]
            rng_pair = np.random.default_rng([seed, p])
            picks = [rng_pair.integers(0, both.size, both.size) for _ in range(n_resamples)]
            sums = np.stack([c[pick].sum(axis=0) for pick in picks])
            kappa, f1, span_f1, label = _from_counts(sums).T
            alphas = np.array(
                [_alpha([blocks[item_order[both[k]]][rows_ab] for k in pick]) for pick in picks]
            )
            boot = np.stack([kappa, alphas, f1, span_f1, label], axis=-1)
        else:
            point = [float("nan")] * 5
            boot = np.full((n_resamples, 5), np.nan)
        pair_points.append(point)
        pair_boots.append(boot)
        rows.append((f"{a} vs {b}", a, b, int(both.size), point, boot))
    # "all": α over everyone; the rest the mean of the pairs on the same resampled items.
    with np.errstate(invalid="ignore"):
        all_boot = np.full((n_resamples, 5), np.nan)
        all_point = [float("nan")] * 5
        if item_order:
            all_point = list(_mean_of_pairs(np.array(pair_points)))
            all_point[1] = _alpha([blocks[ident] for ident in item_order])
            for r, draw in enumerate(draws):
                sums = np.nansum(counts[:, draw], axis=1)
                present = (~np.isnan(counts[:, draw, 0])).any(axis=1)
                figures = _from_counts(sums)
                figures[~present] = np.nan
                kappa, f1, span_f1, label = _mean_of_pairs(figures)
                all_boot[r] = [
                    kappa,
                    _alpha([blocks[item_order[k]] for k in draw]),
                    f1,
                    span_f1,
                    label,
                ]
    rows.append((ALL, None, None, len(item_order), all_point, all_boot))
    records = []
    for index, first, second, n_items, point, boot in rows:
        record: dict[str, Any] = {"pair": index, "annotator_a": first, "annotator_b": second}
        record["n_items"] = n_items
        for k, metric in enumerate(METRICS):
            low, high = _interval(boot[:, k], confidence)
            record[metric] = float(point[k])
            record[f"{metric}_low"] = low
            record[f"{metric}_high"] = high
        records.append(record)
    overall = pd.DataFrame.from_records(records).set_index("pair")
    columns = ["item_id", "annotator_a", "annotator_b", "n_words", "token_f1", "iou_f1"]
    columns += ["cohen_kappa", "label_a", "label_b", "same_label", "n_annotators"]
    columns += ["krippendorff_alpha"]
    per_item = pd.DataFrame.from_records(per_item_rows, columns=columns)
    return Agreement(per_item, overall, tuple(names), float(confidence), n_resamples)


def _mean_of_pairs(figures: np.ndarray) -> np.ndarray:
    """Mean over pairs (axis 0) of the finite figures; NaN when a column has none.

    ``figures`` rows are pairs; columns κ, [α,] token F1, IOU-F1, label agreement.
    """
    out = []
    for column in figures.T:
        kept = column[~np.isnan(column)]
        out.append(float(kept.mean()) if kept.size else math.nan)
    return np.array(out)
