"""Tiny real Hugging Face models and tokenizers built in-process (no hub).

Each factory builds a stock ``transformers`` model class from a small config
with seeded random weights, and a real tokenizer trained on a few sentences
with the ``tokenizers`` library, so every family is exercised offline.
The tokenizers (WordPiece, byte-level BPE, SentencePiece-style Unigram) are
built in ``tiny_tokenizers.py`` and importable from here too. The Phi-3 and
GPT-NeoX configs pad their vocabulary ``PADDING`` rows beyond the tokenizer,
as real checkpoints do.
"""

from __future__ import annotations

import torch
from tiny_tokenizers import (  # noqa: F401 - re-exported for the tests that import them here
    CORPUS,
    bytelevel_tokenizer,
    roberta_tokenizer,
    sentencepiece_tokenizer,
    seq2seq_tokenizer,
    wordpiece_tokenizer,
)

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def build(family: str, seed: int = 0):
    """Return ``(model, tokenizer)`` for a family name (see ``FAMILIES``)."""
    import transformers as tf

    torch.manual_seed(seed)
    wp, bl = wordpiece_tokenizer(), bytelevel_tokenizer()
    labels = {
        "id2label": {0: "negative", 1: "positive"},
        "label2id": {"negative": 0, "positive": 1},
    }
    if family in {"bert-cls", "bert-mlm", "electra-cls"}:
        common = dict(SMALL, vocab_size=len(wp), max_position_embeddings=64, pad_token_id=0)
        if family == "bert-cls":
            model = tf.BertForSequenceClassification(tf.BertConfig(**common, **labels))
        elif family == "bert-mlm":
            model = tf.BertForMaskedLM(tf.BertConfig(**common))
        else:
            model = tf.ElectraForSequenceClassification(
                tf.ElectraConfig(**common, embedding_size=32, **labels)
            )
        return model, wp
    if family == "distilbert-cls":
        config = tf.DistilBertConfig(
            vocab_size=len(wp),
            dim=32,
            n_layers=2,
            n_heads=4,
            hidden_dim=64,
            max_position_embeddings=64,
            **labels,
        )
        return tf.DistilBertForSequenceClassification(config), wp
    if family == "roberta-cls":
        tok = roberta_tokenizer()
        config = tf.RobertaConfig(
            **SMALL,
            vocab_size=len(tok),
            max_position_embeddings=70,
            pad_token_id=tok.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
            type_vocab_size=1,
            **labels,
        )
        return tf.RobertaForSequenceClassification(config), tok
    if family in {"gpt2-lm", "gpt2-cls"}:
        config = tf.GPT2Config(
            vocab_size=len(bl),
            n_embd=32,
            n_layer=2,
            n_head=4,
            n_positions=64,
            pad_token_id=bl.pad_token_id,
            **labels,
        )
        cls = tf.GPT2LMHeadModel if family == "gpt2-lm" else tf.GPT2ForSequenceClassification
        return cls(config), bl
    if family in {"llama-lm", "qwen2-lm", "mistral-lm"}:
        tok = bytelevel_tokenizer(bos=True)
        common = dict(
            SMALL,
            vocab_size=len(tok),
            max_position_embeddings=64,
            num_key_value_heads=2,
            pad_token_id=tok.pad_token_id,
        )
        config_cls, model_cls = {
            "llama-lm": (tf.LlamaConfig, tf.LlamaForCausalLM),
            "qwen2-lm": (tf.Qwen2Config, tf.Qwen2ForCausalLM),
            "mistral-lm": (tf.MistralConfig, tf.MistralForCausalLM),
        }[family]
        return model_cls(config_cls(**common)), tok
    model = _more_families(tf, family, labels)
    if model is not None:
        return model
    if family == "t5":
        tok = seq2seq_tokenizer()
        config = tf.T5Config(
            vocab_size=len(tok),
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.pad_token_id,
        )
        return tf.T5ForConditionalGeneration(config), tok
    if family == "bart":
        tok = seq2seq_tokenizer()
        config = tf.BartConfig(
            vocab_size=len(tok),
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
            pad_token_id=tok.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=2,
            forced_eos_token_id=2,
        )
        return tf.BartForConditionalGeneration(config), tok
    raise KeyError(family)


#: Rows a padded embedding matrix has beyond the tokenizer (Phi-3, GPT-NeoX configs).
PADDING = 20


def _more_families(tf, family: str, labels: dict):
    """The families added for structure-based LRP: RoBERTa copies, ALBERT, Gemma,
    Phi-3, GPT-NeoX, OPT, Mixtral, MPNet, DeBERTa-v2 (v3's disentangled attention),
    Falcon (three variants), and the refused Bloom and XLNet."""
    sp, wp = sentencepiece_tokenizer(), wordpiece_tokenizer()
    if family in {"xlm-roberta-cls", "camembert-mlm"}:
        config_cls, model_cls = {
            "xlm-roberta-cls": (tf.XLMRobertaConfig, tf.XLMRobertaForSequenceClassification),
            "camembert-mlm": (tf.CamembertConfig, tf.CamembertForMaskedLM),
        }[family]
        config = config_cls(
            **SMALL,
            vocab_size=len(sp),
            max_position_embeddings=70,
            pad_token_id=sp.pad_token_id,
            bos_token_id=0,
            eos_token_id=2,
            type_vocab_size=1,
            **labels,
        )
        return model_cls(config), sp
    if family == "albert-cls":
        config = tf.AlbertConfig(
            **SMALL,
            vocab_size=len(wp),
            embedding_size=16,
            max_position_embeddings=64,
            pad_token_id=0,
            hidden_act="gelu_new",
            **labels,
        )
        return tf.AlbertForSequenceClassification(config), wp
    if family == "mpnet-cls":
        config = tf.MPNetConfig(**SMALL, vocab_size=len(wp), pad_token_id=0, **labels)
        return tf.MPNetForSequenceClassification(config), wp
    deberta = {  # DeBERTa-v3: shared key projections; v2-xlarge: its own, and a conv layer
        "deberta-v2-cls": dict(share_att_key=True),
        "deberta-v2-conv-cls": dict(share_att_key=False, conv_kernel_size=3, conv_act="gelu"),
    }
    if family in deberta:  # disentangled attention (content-position, position-content)
        config = tf.DebertaV2Config(
            **SMALL,
            vocab_size=len(wp),
            pad_token_id=0,
            max_position_embeddings=64,
            relative_attention=True,
            pos_att_type=["p2c", "c2p"],
            position_buckets=16,
            max_relative_positions=-1,
            norm_rel_ebd="layer_norm",
            position_biased_input=False,
            type_vocab_size=0,
            **deberta[family],
            **labels,
        )
        return tf.DebertaV2ForSequenceClassification(config), wp
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    bos = bytelevel_tokenizer(bos=True)
    causal = dict(SMALL, max_position_embeddings=64)
    if family == "gemma-lm":
        tok = sentencepiece_tokenizer("bos")
        config = tf.GemmaConfig(
            **causal,
            vocab_size=len(tok),
            num_key_value_heads=2,
            head_dim=8,
            hidden_activation="gelu_pytorch_tanh",
            pad_token_id=tok.pad_token_id,
            bos_token_id=0,
            eos_token_id=2,
        )
        return tf.GemmaForCausalLM(config), tok
    if family == "phi3-lm":
        config = tf.Phi3Config(
            **causal,
            vocab_size=len(bos) + PADDING,
            num_key_value_heads=2,
            rope_parameters=dict(rope, partial_rotary_factor=0.5),
            pad_token_id=bos.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
        )
        return tf.Phi3ForCausalLM(config), bos
    if family == "gpt-neox-lm":
        config = tf.GPTNeoXConfig(
            **causal,
            vocab_size=len(bos) + PADDING,
            use_parallel_residual=True,
            rope_parameters=dict(rope, partial_rotary_factor=0.25),
            pad_token_id=bos.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
        )
        return tf.GPTNeoXForCausalLM(config), bos
    if family == "opt-lm":
        config = tf.OPTConfig(
            vocab_size=len(bos),
            hidden_size=32,
            num_hidden_layers=2,
            ffn_dim=64,
            num_attention_heads=4,
            word_embed_proj_dim=16,  # project_in / project_out around the stack, as OPT-350m
            max_position_embeddings=64,
            activation_function="relu",
            pad_token_id=bos.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
        )
        return tf.OPTForCausalLM(config), bos
    if family == "mixtral-lm":
        config = tf.MixtralConfig(
            **causal,
            vocab_size=len(bos),
            num_key_value_heads=2,
            num_local_experts=4,
            num_experts_per_tok=2,
            pad_token_id=bos.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
        )
        return tf.MixtralForCausalLM(config), bos
    falcon = {  # rotary + parallel attention (Falcon-7B); ALiBi, sequential (RW-1B);
        # new decoder architecture, grouped key/value heads, two norms (Falcon-40B)
        "falcon-lm": dict(parallel_attn=True, alibi=False, multi_query=True),
        "falcon-alibi-lm": dict(parallel_attn=False, alibi=True, multi_query=False),
        "falcon-new-lm": dict(new_decoder_architecture=True, num_kv_heads=2, alibi=False),
    }
    if family in falcon:
        config = tf.FalconConfig(
            vocab_size=len(bos),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
            pad_token_id=bos.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
            **falcon[family],
        )
        return tf.FalconForCausalLM(config), bos
    if family == "xlnet-cls":
        config = tf.XLNetConfig(
            vocab_size=len(sp),
            d_model=32,
            n_layer=2,
            n_head=4,
            d_inner=64,
            pad_token_id=sp.pad_token_id,
            **labels,
        )
        return tf.XLNetForSequenceClassification(config), sp
    if family == "bloom-lm":
        config = tf.BloomConfig(
            vocab_size=len(bos),
            hidden_size=32,
            n_layer=2,
            n_head=4,
            pad_token_id=bos.pad_token_id,
            bos_token_id=1,
            eos_token_id=2,
        )
        return tf.BloomForCausalLM(config), bos
    return None


FAMILIES = [
    "bert-cls",
    "bert-mlm",
    "roberta-cls",
    "distilbert-cls",
    "electra-cls",
    "gpt2-lm",
    "gpt2-cls",
    "llama-lm",
    "qwen2-lm",
    "mistral-lm",
    "t5",
    "bart",
]

#: Families added for LRP by structure (tests/test_lrp*.py); not in FAMILIES,
#: whose capture tests expect the query rows of the families above.
MORE_FAMILIES = [
    "xlm-roberta-cls",
    "camembert-mlm",
    "albert-cls",
    "gemma-lm",
    "phi3-lm",
    "gpt-neox-lm",
    "opt-lm",
    "mixtral-lm",
    "mpnet-cls",
    "deberta-v2-cls",
    "deberta-v2-conv-cls",
    "falcon-lm",
    "falcon-alibi-lm",
    "falcon-new-lm",
]

#: Families LRP refuses, with the module class that blocks each.
REFUSED_FAMILIES = {
    "bloom-lm": "BloomAttention",  # attention logits as alibi.baddbmm(q, k): a fused product
}


def falcon_alibi_through_interface() -> bool:
    """Whether this transformers runs Falcon's ALiBi attention through its attention interface.

    Older 5.x releases write ALiBi attention inline in ``FalconAttention.forward``
    (``softmax(scores + alibi)``); newer ones fold ALiBi into the additive mask and
    call ``ALL_ATTENTION_FUNCTIONS`` on every path. Which rules a pass runs (inline
    logit biases, or a bias in the mask's place) depends on it. Read from the
    module's source: no model pass, so no rule of ours decides the answer.
    """
    import inspect

    from transformers.models.falcon import modeling_falcon

    source = inspect.getsource(modeling_falcon.FalconAttention.forward)
    return "attention_interface" in source and "softmax" not in source


def long_bert():
    """A small random BERT encoder (no head) taking 2,048 positions (tiny ones stop at 64)."""
    import transformers as tf

    _, tokenizer = build("bert-cls")
    config = tf.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=2048,
    )
    torch.manual_seed(0)
    return tf.BertModel(config).eval(), tokenizer
