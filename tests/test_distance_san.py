"""Distance-SAN exactness: parameter counts, the distance mask and its combination with M_dir and padding, the
no-mask ablation, padding invariance, empty rows, save/load, init (Distance-SAN spec §1, §2, §6, §7)."""

from __future__ import annotations

import itertools
import json
import math
import os

import pytest
import torch
from torch import nn
from transformers import AutoModel, AutoModelForSequenceClassification

from modeling_disan import DistanceSANConfig, DistanceSANForSequenceClassification, DistanceSANModel
from modeling_disan.modeling_distance_san import DistanceMaskedMultiHeadAttention, distance_mask

from conftest import (assert_glorot_linears, assert_length_one_rows_train_finitely, assert_padding_invariant,
                      non_embedding_parameters, tiny_config)

ALPHA = 1.5



def test_parameter_counts_match_spec_section_6():
    encoder = DistanceSANModel(DistanceSANConfig(vocab_size=50))
    assert non_embedding_parameters(encoder) == 3_255_600
    snli = DistanceSANForSequenceClassification(DistanceSANConfig(vocab_size=50, num_labels=3))
    assert snli.config.pair_features == "concat_absdiff_mul" and snli.config.sentence_dim == 1200
    assert non_embedding_parameters(snli) == 4_697_403  # paper: 4.7m (Table 1 and 2)
    # the ablation changes no parameter (Table 1: "the mask adds no parameters")
    ablation = DistanceSANForSequenceClassification(DistanceSANConfig(vocab_size=50, num_labels=3, distance_alpha=0))
    assert non_embedding_parameters(ablation) == 4_697_403
    # ln_on_s2t_logits=False drops exactly the LayerNorm on the Eq. 14 logits (2 × 600)
    no_logit_ln = DistanceSANModel(DistanceSANConfig(vocab_size=50, ln_on_s2t_logits=False))
    assert non_embedding_parameters(no_logit_ln) == 3_255_600 - 1_200


def test_distance_mask_values():
    m = distance_mask(5, ALPHA)
    for i in range(5):
        for j in range(5):
            assert m[i, j].item() == -ALPHA * abs(i - j)
    assert torch.equal(distance_mask(4, 0.0), torch.zeros(4, 4))


def attention(cfg, direction="fw", keep_self=False):
    return DistanceMaskedMultiHeadAttention(cfg, direction, keep_self).eval()


def expected_probs(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Eq. 7 written out: softmax over allowed keys of logits − α|i − j|; rows with no allowed key are 0."""
    n = logits.shape[-1]
    dist = torch.tensor([[-ALPHA * abs(q - k) for k in range(n)] for q in range(n)])
    out = torch.zeros_like(logits)  # [B, h, n_query, n_key]
    for b, h, j in itertools.product(*map(range, logits.shape[:-1])):
        keys = allowed[b, j]
        if keys.any():
            out[b, h, j, keys] = torch.softmax((logits[b, h, j] + dist[j])[keys], dim=-1)
    return out


@pytest.mark.parametrize("direction", ["fw", "bw"])
def test_distance_mask_combines_with_direction_and_padding(direction):
    cfg = tiny_config("distance_san")
    attn = attention(cfg, direction)
    B, h, n, d_k = 2, cfg.num_heads, 6, cfg.embedding_dim // cfg.num_heads
    q, k = torch.randn(B, h, n, d_k), torch.randn(B, h, n, d_k)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    probs = attn.attention_probs(q, k, mask)
    allowed = torch.zeros(B, n, n, dtype=torch.bool)
    for b in range(B):
        for j in range(n):  # query j, key i (package convention)
            for i in range(n):
                allowed[b, j, i] = bool(mask[b, i]) and (i < j if direction == "fw" else i > j)
    expected = expected_probs(q @ k.transpose(-1, -2) / math.sqrt(d_k), allowed)
    assert torch.allclose(probs, expected, atol=1e-6)
    assert torch.equal(probs[1, :, :, 4:], torch.zeros_like(probs[1, :, :, 4:]))  # pad keys: exactly 0
    empty = 0 if direction == "fw" else 3  # first fw word / last real bw word: no key at all -> exact zeros
    assert torch.equal(probs[1, :, empty], torch.zeros_like(probs[1, :, empty]))
    assert torch.equal(probs.diagonal(dim1=-2, dim2=-1), torch.zeros(B, h, n))  # a word never attends to itself


def test_distance_mask_alone_is_an_exponential_locality_window():
    """With no content logits, fw weights of query j are exp(−α(j − i)) normalised over i < j (Eq. 7)."""
    attn = attention(tiny_config("distance_san"), "fw")
    n = 5
    zeros = torch.zeros(1, 1, n, 4)
    probs = attn.attention_probs(zeros, zeros, torch.ones(1, n, dtype=torch.bool))[0, 0]
    j = 4
    weights = torch.tensor([math.exp(-ALPHA * (j - i)) for i in range(j)])
    assert torch.allclose(probs[j, :j], weights / weights.sum(), atol=1e-6)
    assert probs[j, 3] / probs[j, 2] == pytest.approx(math.exp(ALPHA), rel=1e-5)  # one step nearer: ×e^1.5


def test_self_attention_and_directional_flags():
    cfg = tiny_config("distance_san", disable_self_attention=False)
    zeros = torch.zeros(1, 1, 4, 4)
    mask = torch.ones(1, 4, dtype=torch.bool)
    model = DistanceSANModel(cfg)
    probs = model.encoder.fw.attention.attention_probs(zeros, zeros, mask)[0, 0]
    assert (probs.diagonal() > 0).all() and torch.equal(probs.triu(1), torch.zeros(4, 4))  # i <= j
    both = DistanceSANModel(tiny_config("distance_san", use_directional_mask=False))
    probs = both.encoder.bw.attention.attention_probs(zeros, zeros, mask)[0, 0]
    assert (probs + torch.eye(4) > 0).all() and torch.equal(probs.diagonal(), torch.zeros(4))  # all keys but self


def test_no_mask_ablation():
    torch.manual_seed(1)
    base = DistanceSANModel(tiny_config("distance_san")).eval()
    ablations = [DistanceSANModel(tiny_config("distance_san", **kw)).eval()
                 for kw in (dict(distance_alpha=0.0), dict(use_distance_mask=False))]
    for model in ablations:
        model.load_state_dict(base.state_dict())
        assert model.encoder.fw.attention.alpha == 0.0
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10]])
    outs = [m(input_ids=ids).pooler_output for m in [base] + ablations]
    assert torch.equal(outs[1], outs[2])  # alpha = 0 and use_distance_mask=False are the same ablation
    assert not torch.allclose(outs[0], outs[1], atol=1e-4)
    # without the mask the weights are plain scaled dot-product attention under M_dir
    q, k = torch.randn(1, 3, 5, 4), torch.randn(1, 3, 5, 4)
    probs = ablations[0].encoder.fw.attention.attention_probs(q, k, torch.ones(1, 5, dtype=torch.bool))
    logits = (q @ k.transpose(-1, -2) / 2.0)[0, :, 4, :4]
    assert torch.allclose(probs[0, :, 4, :4], torch.softmax(logits, -1), atol=1e-6)


def test_fw_half_is_causal_and_bw_half_anticausal():
    model = DistanceSANModel(tiny_config("distance_san")).eval()
    d = model.config.embedding_dim
    a = torch.tensor([[3, 4, 5, 6, 7]])
    b = torch.tensor([[3, 4, 5, 20, 21]])  # differs after position 2
    ha, hb = model(input_ids=a).last_hidden_state, model(input_ids=b).last_hidden_state
    assert ha.shape == (1, 5, 2 * d) and model(input_ids=a).pooler_output.shape == (1, 4 * d)
    assert torch.allclose(ha[0, :3, :d], hb[0, :3, :d], atol=1e-6)  # fw: j sees only i < j
    assert not torch.allclose(ha[0, :3, d:], hb[0, :3, d:], atol=1e-4)


def test_pooler_output_independent_of_padding_and_batch_mates():
    model = DistanceSANModel(tiny_config("distance_san")).eval()
    alone = assert_padding_invariant(model, atol=1e-5)
    other = torch.tensor([[4, 9, 13, 22, 7, 0, 0, 0], [25, 26, 0, 0, 0, 0, 0, 0]])
    assert torch.allclose(model(input_ids=other).pooler_output[0], alone.pooler_output[0], atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_length_one_sentences_forward_backward_finite(dtype):
    """A one-word sentence has no key in either direction (spec B3): zero attention output, no NaN."""
    single = DistanceSANForSequenceClassification(tiny_config("distance_san", num_labels=3)).to(dtype)
    pair = DistanceSANForSequenceClassification(
        tiny_config("distance_san", num_labels=3, pair_features="concat_absdiff_mul")).to(dtype)
    assert_length_one_rows_train_finitely(single, pair)


def test_save_load_equality_through_auto_classes(tmp_path):
    cfg = tiny_config("distance_san", num_labels=3, pair_features="concat_absdiff_mul")
    model = AutoModelForSequenceClassification.from_config(cfg)
    assert isinstance(model, DistanceSANForSequenceClassification)
    with torch.no_grad():  # weights that no initialiser would produce: from_pretrained must keep them
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.eval().save_pretrained(tmp_path)
    files = set(os.listdir(tmp_path))
    assert {"configuration_distance_san.py", "modeling_distance_san.py", "configuration_common.py",
            "modeling_common.py", "attention.py", "heads.py", "config.json", "model.safetensors"} <= files
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "distance_san"
    assert config["auto_map"] == {
        "AutoConfig": "configuration_distance_san.DistanceSANConfig",
        "AutoModel": "modeling_distance_san.DistanceSANModel",
        "AutoModelForSequenceClassification": "modeling_distance_san.DistanceSANForSequenceClassification",
    }
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    for (name, a), b in zip(model.state_dict().items(), reloaded.state_dict().values()):
        assert torch.equal(a, b), name
    ids, types = torch.tensor([[3, 4, 2, 5, 6, 7]]), torch.tensor([[0, 0, 0, 1, 1, 1]])
    assert torch.equal(reloaded(input_ids=ids, token_type_ids=types).logits,
                       model(input_ids=ids, token_type_ids=types).logits)
    encoder = AutoModel.from_pretrained(tmp_path).eval()
    assert isinstance(encoder, DistanceSANModel)
    single = torch.tensor([[3, 4, 5]])
    assert torch.equal(encoder(input_ids=single).pooler_output, model.distance_san(input_ids=single).pooler_output)


def test_glorot_init_zero_biases_layer_norms_and_frozen_embeddings_survive_post_init():
    model = DistanceSANForSequenceClassification(DistanceSANConfig(vocab_size=200, num_labels=3))
    assert_glorot_linears(model)
    for name, module in model.named_modules():
        if isinstance(module, nn.LayerNorm):
            assert torch.equal(module.weight, torch.ones_like(module.weight)), name
            assert torch.equal(module.bias, torch.zeros_like(module.bias)) and module.eps == 1e-6, name
    block = model.distance_san.encoder.fw
    assert torch.equal(block.b_f, torch.zeros_like(block.b_f))
    assert block.attention.w_q.bias is None and block.w_s.bias is None  # Eq. 8, 11: no projection biases
    emb = model.get_input_embeddings().weight
    assert not emb.requires_grad  # §5.2: word vectors are not fine-tuned
    assert emb[:2].abs().sum() == 0 and emb[2:].abs().max() <= 0.05 and emb[2:].std() > 0.02


def test_dropout_sites_and_activations():
    """Spec B2: dropout at the MHA output, gate pre-activation, FFN output (per block) and in the classifier."""
    model = DistanceSANForSequenceClassification(tiny_config("distance_san", num_labels=2)).train()
    calls = []
    for module in model.modules():
        if isinstance(module, nn.Dropout) and module.p > 0:
            assert module.p == 0.1
            module.register_forward_hook(lambda m, i, o: calls.append(1))
    assert model.distance_san.encoder.s2t.drop.p == 0.0  # no dropout in the multi-dim attention
    model(input_ids=torch.tensor([[3, 4, 5], [6, 7, 0]]))
    assert len(calls) == 2 * 3 + 1
    assert isinstance(model.distance_san.encoder.s2t.act, nn.ELU)  # Eq. 14
    assert isinstance(model.distance_san.encoder.fw.ffn[1], nn.ReLU)  # Eq. 13
    ops = [type(m) for m in model.classifier.layers]
    assert ops == [nn.Linear, nn.LayerNorm, nn.ReLU, nn.Dropout, nn.Linear]  # spec B7


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="embed_dim .* divisible by num_heads"):
        DistanceSANConfig(embed_dim=301)
    assert DistanceSANConfig(embed_dim=60, num_heads=5).embedding_dim == 60  # embed_dim is the spec's name of d_e
    for field, value in (("distance_alpha", -1.0), ("pooling", ["mean"]), ("dropout", 1.5), ("num_heads", 0),
                         ("layer_norm_eps", 0.0)):
        with pytest.raises(ValueError, match=field):
            DistanceSANConfig(**{field: value})
    assert DistanceSANConfig(pooling=["max"]).sentence_dim == 600
