"""attnwidget.compare against references written here: scipy's rank correlations,
top-k overlaps and rank spreads by explicit loops, the faithfulness re-runs built
and run by hand with torch, scikit-learn's average precision and a hand F1, the
image perturbation by hand; equality with evaluate on a one-example data set;
compare(exp); rationale forms; refusals that change nothing; evaluate's agreement
summary against per-example scipy figures and a bootstrap by hand; a schema-1
results file migrated on open.

No reference calls attnwidget for the figure under test: the explanation's
scores (what compare compares) are read from the Explanation, and everything
computed from them is computed here.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import warnings

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import average_precision_score
from tiny_models import CORPUS, build

import attnwidget
from attnwidget import demo
from attnwidget.annotations import Store
from attnwidget.errors import InputError

METHODS = ["raw", "rollout", "grad_attention", "input_x_gradient"]
FAITH = [
    "comprehensiveness_aopc",
    "sufficiency_aopc",
    "perturbation_auc_pos",
    "perturbation_auc_neg",
    "perturbation_prob_auc_pos",
    "perturbation_prob_auc_neg",
]
AGREEMENT = ["spearman", "kendall", "top1", "top3", "top5", "top20%"]
BINS = [0.01, 0.05, 0.1, 0.2, 0.5]
STEPS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
#: "the keys to the cabinet are on the table": keys, cabinet, table and are split
#: into "##" pieces by the tiny WordPiece tokenizer.
TEXT = CORPUS[0]
PAIR = CORPUS[1]


@pytest.fixture(scope="module")
def bert():
    return build("bert-cls")


@pytest.fixture(scope="module")
def families():
    return {name: build(name) for name in ("bert-cls", "roberta-cls", "gpt2-lm", "llama-lm")}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# -- references written out ------------------------------------------------------------


def words_of(tokenizer, ids: list[int], query: int | None) -> list[int]:
    """The positions compare compares: not a special id of the tokenizer, not the query."""
    special = set(tokenizer.all_special_ids)
    return [i for i, t in enumerate(ids) if t not in special and i != query]


def top_set(values, k: int) -> set[int]:
    """The k highest, ties to the earlier position (a sorted list, no argsort)."""
    ranked = sorted(range(len(values)), key=lambda i: (-values[i], i))
    return set(ranked[:k])


def top_k_reference(a, b, name: str) -> float:
    m = len(a)
    k = max(1, math.ceil(round(0.2 * m, 9))) if name == "top20%" else min(int(name[3:]), m)
    return len(top_set(a, k) & top_set(b, k)) / k


def agreement_reference(a, b) -> dict[str, float]:
    out = {
        "spearman": float(stats.spearmanr(a, b).statistic),
        "kendall": float(stats.kendalltau(a, b).statistic),
    }
    for name in AGREEMENT[2:]:
        out[name] = top_k_reference(list(a), list(b), name)
    return out


def spread_reference(rows) -> list[float]:
    """Per token, the population sd over methods of its normalised mean rank (loops)."""
    ranks = []
    for values in rows:
        m = len(values)
        per_token = []
        for v in values:
            greater = sum(1 for w in values if w > v)
            equal = sum(1 for w in values if w == v)
            per_token.append((greater + (equal - 1) / 2) / (m - 1))
        ranks.append(per_token)
    out = []
    for j in range(len(ranks[0])):
        column = [r[j] for r in ranks]
        mean = sum(column) / len(column)
        out.append(math.sqrt(sum((c - mean) ** 2 for c in column) / len(column)))
    return out


def trapezoid(values) -> float:
    return float(sum((values[i] + values[i + 1]) / 2 * 0.1 for i in range(len(values) - 1)) * 100)


def run_rows(model, rows, query: int, target: int, types=None) -> tuple[np.ndarray, np.ndarray]:
    """(kept, probability) of ``target`` at row ``query`` (classifiers: their logits)."""
    ids = torch.tensor(rows)
    kwargs = {"attention_mask": torch.ones_like(ids)}
    if types is not None:
        kwargs["token_type_ids"] = torch.tensor([types] * len(rows))
    was_training = model.training  # tiny models are built in training mode (dropout)
    model.eval()
    try:
        with torch.no_grad():
            logits = model(input_ids=ids, **kwargs).logits.float()
    finally:
        model.train(was_training)
    if logits.ndim == 3:
        logits = logits[:, query]
    return (
        (logits.argmax(-1) == target).numpy().astype(float),
        logits.softmax(-1)[:, target].numpy().astype(float),
    )


def faithfulness_reference(model, tokenizer, exp, method, text, pair=None) -> dict[str, float]:
    """Every faithfulness figure of one method, its perturbed copies built and run here."""
    encoding = tokenizer(text, pair)
    ids = list(encoding["input_ids"])
    assert ids == np.asarray(exp.input_ids).tolist()
    types = encoding.get("token_type_ids")
    query = exp.query_index
    words = words_of(tokenizer, ids, query)
    m = len(words)
    blank = tokenizer.unk_token_id
    scores = [float(s) for s in exp.scores[method]]
    ranked = sorted(words, key=lambda i: (-scores[i], i))
    rows = [ids]
    for f in BINS:  # comprehensiveness: the top ⌈f·m⌉ words replaced
        top = set(ranked[: math.ceil(round(f * m, 9))])
        rows.append([blank if i in top else t for i, t in enumerate(ids)])
    for f in BINS:  # sufficiency: every other word replaced
        top = set(ranked[: math.ceil(round(f * m, 9))])
        rows.append([blank if i in words and i not in top else t for i, t in enumerate(ids)])
    _, probability = run_rows(model, rows, query, exp.target_id, types)
    full = probability[0]
    out = {
        "comprehensiveness_aopc": float(np.mean([full - p for p in probability[1:6]])),
        "sufficiency_aopc": float(np.mean([full - p for p in probability[6:11]])),
    }
    for positive, side in ((True, "pos"), (False, "neg")):
        order = sorted(words, key=lambda i: ((-scores[i] if positive else scores[i]), i))
        rows = []
        for f in STEPS:
            gone = set(order[: round(f * m)])
            rows.append([blank if i in gone else t for i, t in enumerate(ids)])
        kept, probability = run_rows(model, rows, query, exp.target_id, types)
        out[f"perturbation_auc_{side}"] = trapezoid(kept)
        out[f"perturbation_prob_auc_{side}"] = trapezoid(probability)
    return out


def token_word_map(tokenizer, text: str) -> list[int | None]:
    """Each token's word of ``text.split()`` (None for special tokens), by the tokenizer."""
    encoding = tokenizer(text.split(), is_split_into_words=True)
    assert list(encoding["input_ids"]) == list(tokenizer(text)["input_ids"])
    return encoding.word_ids()


def runs(mask) -> list[tuple[int, int]]:
    """The runs of True as (start, end) spans, by a loop."""
    out, start = [], None
    for i, value in enumerate([*mask, False]):
        if value and start is None:
            start = i
        elif not value and start is not None:
            out.append((start, i))
            start = None
    return out


def matching(eligible: list[list[bool]]) -> int:
    """Maximum one-to-one matching of a bipartite graph (augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(p: int, seen: set[int]) -> bool:
        for h, ok in enumerate(eligible[p]):
            if ok and h not in seen:
                seen.add(h)
                if h not in owner or augment(owner[h], seen):
                    owner[h] = p
                    return True
        return False

    return sum(augment(p, set()) for p in range(len(eligible)))


def prf(hits: int, predicted: int, human: int) -> float:
    if predicted == 0 and human == 0:
        return 1.0
    precision = hits / predicted if predicted else 0.0
    recall = hits / human if human else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def plausibility_reference(exp, tokenizer, method, human) -> dict[str, float]:
    ids = np.asarray(exp.input_ids).tolist()
    words = words_of(tokenizer, ids, exp.query_index)
    scores = [float(s) for s in exp.scores[method]]
    k = int(sum(human))  # one example: ferret's k is its rationale's length
    ranked = sorted(words, key=lambda i: (-scores[i], i))[:k]
    predicted = [i in ranked and scores[i] > 0 for i in range(len(ids))]
    marked = [bool(human[i]) and i in words for i in range(len(ids))]
    hits = sum(1 for i in words if predicted[i] and marked[i])
    token_f1 = prf(hits, sum(predicted[i] for i in words), sum(marked[i] for i in words))
    p_spans, h_spans = runs(predicted), runs(marked)

    def iou(a, b) -> float:
        overlap = max(0, min(a[1], b[1]) - max(a[0], b[0]))
        return overlap / ((a[1] - a[0]) + (b[1] - b[0]) - overlap)

    eligible = [[iou(p, h) >= 0.5 for h in h_spans] for p in p_spans]
    iou_f1 = prf(matching(eligible) if p_spans and h_spans else 0, len(p_spans), len(h_spans))
    auprc = average_precision_score([int(human[i]) for i in words], [scores[i] for i in words])
    return {"token_f1": token_f1, "iou_f1": iou_f1, "auprc": float(auprc)}


def model_state(model) -> tuple:
    """Everything a refusal must leave alone: modes, grad flags, weights, hooks."""
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().cpu().numpy().tobytes())
    hooks = sum(
        len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
        for m in model.modules()
    )
    return (
        [m.training for m in model.modules()],
        [p.requires_grad for p in model.parameters()],
        digest.hexdigest(),
        hooks,
    )


# -- agreement and disagreement ------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert-cls", "roberta-cls", "gpt2-lm", "llama-lm"])
def test_agreement_matrices_equal_scipy_and_explicit_top_k_on_the_words(families, family):
    model, tokenizer = families[family]
    c = attnwidget.compare(model, tokenizer, TEXT, methods=METHODS, metrics=FAITH[:1])
    ids = np.asarray(c.explanation.input_ids).tolist()
    query = c.explanation.query_index
    causal = family.endswith("-lm")
    # The query: the classifier's pooled first token (special anyway), the LM's last word.
    assert query == (len(ids) - 1 if causal else 0)
    words = words_of(tokenizer, ids, query if causal else None)
    assert np.flatnonzero(c.compared).tolist() == words
    if family == "bert-cls":
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
        assert words == list(range(1, len(ids) - 1))
    if family == "llama-lm":
        assert ids[0] == tokenizer.bos_token_id and 0 not in words
    if causal:
        assert len(ids) - 1 not in words  # the query position is never compared
    for metric in AGREEMENT:
        table = c.agreement[metric]
        assert list(table.index) == list(table.columns) == METHODS
        np.testing.assert_array_equal(table.to_numpy(), table.to_numpy().T)
        np.testing.assert_array_equal(np.diag(table.to_numpy()), 1.0)
    for i, a in enumerate(METHODS):
        for b in METHODS[i + 1 :]:
            sa, sb = (np.asarray(c.explanation.scores[x], dtype=np.float64)[words] for x in (a, b))
            expected = agreement_reference(sa, sb)
            for metric in AGREEMENT:
                assert c.agreement[metric].loc[a, b] == pytest.approx(expected[metric], abs=1e-12)
    spread = spread_reference(
        [np.asarray(c.explanation.scores[m], dtype=np.float64)[words].tolist() for m in METHODS]
    )
    np.testing.assert_allclose(c.disagreement[words], spread, atol=1e-12)
    assert np.isnan(np.delete(c.disagreement, words)).all()
    assert c.most_disputed(1)[0][1] == pytest.approx(max(spread))


def test_include_special_compares_every_token(bert):
    model, tokenizer = bert
    c = attnwidget.compare(model, tokenizer, TEXT, methods=METHODS, include_special=True)
    assert c.compared.all() and c.settings["include_special"] is True
    for i, a in enumerate(METHODS):
        for b in METHODS[i + 1 :]:
            sa, sb = (np.asarray(c.explanation.scores[x], dtype=np.float64) for x in (a, b))
            expected = agreement_reference(sa, sb)
            for metric in AGREEMENT:
                assert c.agreement[metric].loc[a, b] == pytest.approx(expected[metric], abs=1e-12)
    # The faithfulness re-runs still remove words only: the same as without.
    plain = attnwidget.compare(model, tokenizer, TEXT, methods=METHODS)
    np.testing.assert_allclose(c.faithfulness.to_numpy(), plain.faithfulness.to_numpy())


def test_top_k_overlap_can_be_zero_and_the_20_percent_share_rounds_up(bert):
    # Hand-made scores on an explanation: b ranks a's order backwards.
    model, tokenizer = bert
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw", "rollout"])
    n = len(exp.tokens)
    exp.scores["raw"] = np.arange(n, dtype=np.float32)
    exp.scores["rollout"] = np.arange(n, 0, -1).astype(np.float32)
    c = attnwidget.compare(exp, tokenizer=tokenizer)
    m = int(c.compared.sum())
    assert c.agreement["top1"].loc["raw", "rollout"] == 0.0
    assert c.agreement["spearman"].loc["raw", "rollout"] == pytest.approx(-1.0)
    k = math.ceil(0.2 * m)
    assert c.agreement["top20%"].loc["raw", "rollout"] == pytest.approx(max(0, 2 * k - m) / k)


# -- faithfulness against a re-run by hand -------------------------------------------------------


@pytest.mark.parametrize("family", ["bert-cls", "roberta-cls", "gpt2-lm", "llama-lm"])
def test_faithfulness_equals_a_rerun_written_out(families, family):
    model, tokenizer = families[family]
    methods = ["raw", "input_x_gradient"]  # unsigned and signed scores
    c = attnwidget.compare(model, tokenizer, TEXT, methods=methods)
    assert list(c.faithfulness.columns) == FAITH
    for method in methods:
        expected = faithfulness_reference(model, tokenizer, c.explanation, method, TEXT)
        for metric in FAITH:
            assert c.faithfulness.loc[method, metric] == pytest.approx(
                expected[metric], abs=2e-6
            ), (method, metric)


def test_sentence_pair_faithfulness_and_evaluate(bert):
    model, tokenizer = bert
    c = attnwidget.compare(model, tokenizer, TEXT, text_pair=PAIR, methods=METHODS)
    ids = np.asarray(c.explanation.input_ids).tolist()
    assert ids.count(tokenizer.sep_token_id) == 2
    assert np.flatnonzero(c.compared).tolist() == words_of(tokenizer, ids, None)
    expected = faithfulness_reference(model, tokenizer, c.explanation, "rollout", TEXT, PAIR)
    for metric in FAITH:
        assert c.faithfulness.loc["rollout", metric] == pytest.approx(expected[metric], abs=2e-6)
    result = attnwidget.evaluate(
        model,
        tokenizer,
        [{"text": TEXT, "text_pair": PAIR}],
        methods=METHODS,
        metrics=FAITH,
        progress=False,
    )
    got = result.per_example.set_index("method").loc[METHODS, FAITH]
    np.testing.assert_allclose(c.faithfulness.to_numpy(), got.to_numpy(), atol=1e-6)


@pytest.mark.parametrize("family", ["bert-cls", "roberta-cls", "gpt2-lm", "llama-lm"])
def test_faithfulness_equals_evaluate_on_a_one_example_data_set(families, family):
    model, tokenizer = families[family]
    c = attnwidget.compare(model, tokenizer, TEXT, methods=METHODS)
    result = attnwidget.evaluate(
        model, tokenizer, [TEXT], methods=METHODS, metrics=FAITH, progress=False
    )
    got = result.per_example.set_index("method").loc[METHODS, FAITH]
    np.testing.assert_allclose(c.faithfulness.to_numpy(), got.to_numpy(), atol=1e-6)
    # evaluate's agreement summary of one example is compare's agreement.
    for metric in AGREEMENT:
        for i, a in enumerate(METHODS):
            for b in METHODS[i + 1 :]:
                row = result.agreement.loc[(metric, a, b)]
                assert row["count"] == 1
                assert row["mean"] == pytest.approx(c.agreement[metric].loc[a, b], abs=1e-6)


# -- compare(exp) ----------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-lm"])
def test_compare_of_an_explanation_without_and_with_the_model(families, family):
    model, tokenizer = families[family]
    direct = attnwidget.compare(model, tokenizer, TEXT, methods=METHODS)
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS)
    alone = attnwidget.compare(exp, tokenizer=tokenizer)
    assert alone.faithfulness is None and alone.plausibility is None
    assert alone.methods == METHODS
    np.testing.assert_array_equal(alone.compared, direct.compared)
    for metric in AGREEMENT:
        np.testing.assert_allclose(
            alone.agreement[metric].to_numpy(), direct.agreement[metric].to_numpy(), atol=1e-12
        )
    np.testing.assert_allclose(alone.disagreement, direct.disagreement, atol=1e-12)
    # With the model (and without the text: the token types follow the tokenizer).
    rerun = attnwidget.compare(exp, tokenizer=tokenizer, model=model)
    np.testing.assert_allclose(
        rerun.faithfulness.to_numpy(), direct.faithfulness.to_numpy(), atol=1e-6
    )
    with_text = attnwidget.compare(exp, tokenizer, TEXT, model=model)
    np.testing.assert_allclose(
        with_text.faithfulness.to_numpy(), direct.faithfulness.to_numpy(), atol=1e-6
    )
    # Asking for faithfulness without a model is refused.
    with pytest.raises(InputError, match="model="):
        attnwidget.compare(exp, tokenizer=tokenizer, metrics=["comprehensiveness_aopc"])
    # A text explanation needs the tokenizer to know its special tokens.
    with pytest.raises(InputError, match="tokenizer"):
        attnwidget.compare(exp)
    # A subset of the explanation's methods.
    two = attnwidget.compare(exp, tokenizer=tokenizer, methods=["raw", "rollout"])
    assert two.agreement["spearman"].loc["raw", "rollout"] == pytest.approx(
        direct.agreement["spearman"].loc["raw", "rollout"]
    )


# -- rationales -----------------------------------------------------------------------


#: Words of TEXT marked by a person: "keys" (2 pieces) and "cabinet" (3 pieces).
SPANS = [(1, 2), (4, 5)]


def human_tokens(tokenizer, text, spans) -> list[int]:
    marked = {w for start, end in spans for w in range(start, end)}
    return [int(w is not None and w in marked) for w in token_word_map(tokenizer, text)]


def test_rationale_forms_agree_and_plausibility_equals_sklearn_and_hand_f1(bert, tmp_path):
    model, tokenizer = bert
    n_words = len(TEXT.split())
    vector = [int(any(s <= w < e for s, e in SPANS)) for w in range(n_words)]
    human = human_tokens(tokenizer, TEXT, SPANS)
    assert sum(human) == 5  # ke ##ys, cab ##in ##et
    path = tmp_path / "rationales.sqlite"
    with Store(path) as store:
        store.add_items([{"id": "s1", "text": TEXT}])
        store.save("s1", annotator="ann", spans=SPANS)
        forms = {
            "vector": attnwidget.compare(model, tokenizer, TEXT, methods=METHODS, rationale=vector),
            "spans": attnwidget.compare(model, tokenizer, TEXT, methods=METHODS, rationale=SPANS),
            "store": attnwidget.compare(
                model, tokenizer, TEXT, methods=METHODS, rationale=(store, "s1", "ann")
            ),
            "tokens": attnwidget.compare(
                model,
                tokenizer,
                TEXT,
                methods=METHODS,
                rationale=human,
                rationale_unit="tokens",
            ),
        }
        exp = forms["vector"].explanation
        # compare(exp) with a Store: the item's text is used, no model needed.
        from_store = attnwidget.compare(exp, tokenizer=tokenizer, rationale=(store, "s1", "ann"))
    for name, c in forms.items():
        np.testing.assert_array_equal(c.rationale, np.asarray(human, dtype=bool), err_msg=name)
        assert list(c.plausibility.columns) == ["token_f1", "iou_f1", "auprc"]
        assert c.settings["rationale_k"] == 5
    assert from_store.faithfulness is None
    for method in METHODS:
        expected = plausibility_reference(exp, tokenizer, method, human)
        for name, c in [*forms.items(), ("exp + store", from_store)]:
            if name != "vector":  # other forms explain again: the same scores
                np.testing.assert_allclose(c.explanation.scores[method], exp.scores[method])
            for metric, value in expected.items():
                assert c.plausibility.loc[method, metric] == pytest.approx(value, abs=1e-12), (
                    name,
                    method,
                    metric,
                )


def test_plausibility_with_a_signed_method_and_rationale_k(bert):
    # input × gradient scores some words below 0: the discrete rationale keeps
    # only positive ones, so token F1 depends on the sign, not only the rank.
    model, tokenizer = bert
    human = human_tokens(tokenizer, TEXT, SPANS)
    c = attnwidget.compare(
        model, tokenizer, TEXT, methods=["raw", "input_x_gradient"], rationale=SPANS
    )
    scores = c.explanation.scores["input_x_gradient"]
    assert (scores[c.compared] < 0).any() and (scores[c.compared] > 0).any()
    for method in c.methods:
        expected = plausibility_reference(c.explanation, tokenizer, method, human)
        for metric, value in expected.items():
            assert c.plausibility.loc[method, metric] == pytest.approx(value, abs=1e-12)
    # rationale_k changes token F1's k only.
    k2 = attnwidget.compare(
        c.explanation, tokenizer=tokenizer, rationale=SPANS, text=TEXT, rationale_k=2
    )
    assert k2.settings["rationale_k"] == 2
    ids = np.asarray(c.explanation.input_ids).tolist()
    words = words_of(tokenizer, ids, None)
    raw = [float(s) for s in c.explanation.scores["raw"]]
    top2 = sorted(words, key=lambda i: (-raw[i], i))[:2]
    hits = sum(human[i] for i in top2)
    assert k2.plausibility.loc["raw", "token_f1"] == pytest.approx(prf(hits, 2, 5))
    np.testing.assert_allclose(k2.plausibility["auprc"], c.plausibility["auprc"])


# -- images -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vit():
    return demo.load("shapes-vit")


def test_image_patch_perturbation_equals_a_rerun_written_out(vit):
    model, processor = vit
    record = demo.images(1, seed=5)[0]
    methods = ["raw", "rollout", "input_x_gradient"]
    c = attnwidget.compare(model, processor, record.image, methods=methods)
    exp = c.explanation
    assert list(c.faithfulness.columns) == [
        "perturbation_auc_pos",
        "perturbation_auc_neg",
        "perturbation_prob_auc_pos",
        "perturbation_prob_auc_neg",
    ]
    # The patches are compared; the CLS token (position 0 of a ViT) is not.
    assert exp.tokens and not c.compared[0] and c.compared[1:].all()
    pixels = processor(images=record.image, return_tensors="pt")["pixel_values"][0]
    size = 4
    grid = pixels.shape[-1] // size
    assert len(exp.tokens) == 1 + grid * grid
    for method in methods:
        patch = [float(s) for s in exp.scores[method][1:]]
        for positive, side in ((True, "pos"), (False, "neg")):
            order = sorted(
                range(grid * grid), key=lambda i: ((-patch[i] if positive else patch[i]), i)
            )
            copies = []
            for f in STEPS:
                copy = pixels.clone()
                for index in order[: round(f * grid * grid)]:
                    row, col = divmod(index, grid)
                    copy[:, row * size : (row + 1) * size, col * size : (col + 1) * size] = 0
                copies.append(copy)
            assert not model.training  # demo.load gives it in eval mode
            with torch.no_grad():
                logits = model(pixel_values=torch.stack(copies)).logits
            kept = (logits.argmax(-1) == exp.target_id).float().tolist()
            probability = logits.softmax(-1)[:, exp.target_id].tolist()
            assert c.faithfulness.loc[method, f"perturbation_auc_{side}"] == pytest.approx(
                trapezoid(kept), abs=1e-9
            )
            assert c.faithfulness.loc[method, f"perturbation_prob_auc_{side}"] == pytest.approx(
                trapezoid(probability), abs=1e-5
            )
        for other in methods:
            if other != method:
                a = np.asarray(exp.scores[method], dtype=np.float64)[1:]
                b = np.asarray(exp.scores[other], dtype=np.float64)[1:]
                assert c.agreement["spearman"].loc[method, other] == pytest.approx(
                    stats.spearmanr(a, b).statistic, abs=1e-12
                )
    # A text metric is refused for an image, as is a rationale.
    with pytest.raises(InputError, match="image"):
        attnwidget.compare(
            model, processor, record.image, methods=methods, metrics=["comprehensiveness_aopc"]
        )
    with pytest.raises(InputError, match="rationale"):
        attnwidget.compare(model, processor, record.image, methods=methods, rationale=[1, 0])


# -- refusals -------------------------------------------------------------------------------


def test_bad_input_is_refused_clearly_and_changes_nothing(families, bert, tmp_path):
    model, tokenizer = bert
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw", "rollout"])
    scores = {m: s.copy() for m, s in exp.scores.items()}
    before = model_state(model)
    t5, t5_tokenizer = build("t5")
    t5_before = model_state(t5)
    cases = [
        (lambda: attnwidget.compare(model, tokenizer, TEXT, methods=["raw"]), "two method"),
        (lambda: attnwidget.compare(model, tokenizer, TEXT, methods="raw"), "two method"),
        (
            lambda: attnwidget.compare(exp, tokenizer=tokenizer, methods=["raw", "lrp"]),
            "no scores for \\['lrp'\\]",
        ),
        (lambda: attnwidget.compare(model, tokenizer, [TEXT, PAIR]), "one text"),
        (lambda: attnwidget.compare(t5, t5_tokenizer, TEXT), "encoder-decoder"),
        (
            lambda: attnwidget.compare(model, tokenizer, TEXT, rationale=[(0, 99)]),
            "outside the text's 9 words",
        ),
        (
            lambda: attnwidget.compare(
                model, tokenizer, TEXT, rationale=np.ones(3), rationale_unit="tokens"
            ),
            "one 0/1 value per token",
        ),
        (
            lambda: attnwidget.compare(model, tokenizer, TEXT, rationale=[1, 0, 1]),
            "3 entries for its 9 words",
        ),
        (lambda: attnwidget.compare(model, tokenizer, TEXT, model=model), "model= is for"),
        (lambda: attnwidget.compare(model, tokenizer), "needs the tokenizer and one text"),
        (
            lambda: attnwidget.compare(model, tokenizer, TEXT, methods=["raw", "raw"]),
            "more than once",
        ),
        (
            lambda: attnwidget.compare(exp, tokenizer, PAIR, model=model),
            "tokens differ",
        ),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()
        assert model_state(model) == before, message
        for method, values in scores.items():
            np.testing.assert_array_equal(exp.scores[method], values)
    assert model_state(t5) == t5_before
    assert exp.methods == ["raw", "rollout"]


# -- evaluate's agreement summary -----------------------------------------------------------


def bootstrap_reference(values, seed=0, n_resamples=1000, confidence=0.95):
    kept = np.asarray([v for v in values if not math.isnan(v)])
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(n_resamples):
        picks = rng.integers(0, kept.size, kept.size)
        means.append(sum(kept[i] for i in picks) / kept.size)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(np.mean(kept)), float(low), float(high), kept.size, len(values) - kept.size


def test_evaluate_agreement_equals_per_example_scipy_and_a_bootstrap_by_hand(bert):
    model, tokenizer = bert
    texts = list(dict.fromkeys(CORPUS))  # six distinct sentences
    methods = ["raw", "rollout", "input_x_gradient"]
    result = attnwidget.evaluate(
        model, tokenizer, texts, methods=methods, metrics=FAITH[:1], progress=False
    )
    table = result.agreement
    assert table.index.names == ["metric", "method", "other"]
    pairs = [("raw", "rollout"), ("raw", "input_x_gradient"), ("rollout", "input_x_gradient")]
    assert list(table.index) == [(m, a, b) for m in AGREEMENT for a, b in pairs]
    per_example: dict[tuple[str, str, str], list[float]] = {key: [] for key in table.index}
    for position, text in enumerate(texts):
        ids = list(tokenizer(text)["input_ids"])
        words = words_of(tokenizer, ids, None)
        scores = result.scores(str(position))
        for a, b in pairs:
            figures = agreement_reference(
                scores[a][words].astype(np.float64), scores[b][words].astype(np.float64)
            )
            for metric in AGREEMENT:
                per_example[(metric, a, b)].append(figures[metric])
    for key, values in per_example.items():
        mean, low, high, count, dropped = bootstrap_reference(values)
        row = table.loc[key]
        assert (row["count"], row["dropped"]) == (count, dropped) == (6, 0)
        assert row["mean"] == pytest.approx(mean, abs=1e-12), key
        assert row["low"] == pytest.approx(low, abs=1e-12), key
        assert row["high"] == pytest.approx(high, abs=1e-12), key


def test_a_schema_1_results_file_is_migrated_and_its_agreement_counted_as_dropped(bert, tmp_path):
    model, tokenizer = bert
    texts = list(dict.fromkeys(CORPUS))[:4]
    path = tmp_path / "results.sqlite"
    kwargs = dict(methods=["raw", "rollout"], metrics=FAITH[:2], progress=False, batch_size=2)
    first = attnwidget.evaluate(model, tokenizer, texts, store=path, **kwargs)
    # What this attnwidget wrote: schema 2, each example's compared words.
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (2,)
    stored = [r[0] for r in conn.execute("SELECT compared FROM examples ORDER BY position")]
    for text, words in zip(texts, stored, strict=True):
        assert words == str(words_of(tokenizer, list(tokenizer(text)["input_ids"]), None))
    # Make it a schema-1 file, as attnwidget wrote before the column.
    conn.execute("ALTER TABLE examples DROP COLUMN compared")
    conn.execute("PRAGMA user_version=1")
    conn.commit()
    rows_before = conn.execute("SELECT * FROM examples ORDER BY position").fetchall()
    results_before = conn.execute("SELECT * FROM method_results ORDER BY rowid").fetchall()
    conn.close()
    again = attnwidget.evaluate(model, tokenizer, texts, store=path, **kwargs)
    assert (again.n_loaded, again.n_computed) == (4, 0)
    np.testing.assert_array_equal(
        again.per_example[FAITH[:2]].to_numpy(), first.per_example[FAITH[:2]].to_numpy()
    )
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (2,)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(examples)")]
    assert columns[-1] == "compared"
    rows_after = conn.execute("SELECT * FROM examples ORDER BY position").fetchall()
    assert [r[:-1] for r in rows_after] == rows_before and {r[-1] for r in rows_after} == {None}
    assert conn.execute("SELECT * FROM method_results ORDER BY rowid").fetchall() == results_before
    conn.close()
    table = again.agreement
    assert (table["count"] == 0).all() and (table["dropped"] == 4).all()
    assert table["mean"].isna().all()
    # The fresh result counted every example.
    assert (first.agreement["count"] == 4).all()


def test_comparison_tidy_table_holds_every_figure(bert):
    model, tokenizer = bert
    c = attnwidget.compare(model, tokenizer, TEXT, methods=METHODS, rationale=SPANS)
    frame = c.to_dataframe()
    agreement = frame[frame["kind"] == "agreement"]
    assert len(agreement) == len(AGREEMENT) * len(METHODS) ** 2
    row = agreement[
        (agreement["metric"] == "kendall")
        & (agreement["method"] == "raw")
        & (agreement["other"] == "rollout")
    ]
    assert row["value"].item() == pytest.approx(c.agreement["kendall"].loc["raw", "rollout"])
    faith = frame[frame["kind"] == "faithfulness"]
    assert set(faith["better"]) == {"higher", "lower"}
    suff = faith[faith["metric"] == "sufficiency_aopc"]
    assert set(suff["better"]) == {"lower"}
    spread = frame[frame["kind"] == "disagreement"]
    assert spread["token"].tolist() == np.flatnonzero(c.compared).tolist()
