"""DiSAN exactness: parameter counts, masks, empty rows, padding invariance, init, dropout placement (spec §1-§6)."""

from __future__ import annotations


import pytest
import torch
from torch import nn

from modeling_disan import DiSANConfig, DiSANForSequenceClassification, DiSANModel
from modeling_disan.attention import allowed_keys, direction_mask, masked_softmax, token2token_attention_reference
from modeling_disan.modeling_disan import DirectionalSelfAttention

from conftest import assert_glorot_linears, assert_padding_invariant, non_embedding_parameters, tiny_config



def test_parameter_counts_match_spec_section_6():
    encoder = DiSANModel(DiSANConfig(vocab_size=50))
    assert non_embedding_parameters(encoder) == 1_623_000
    snli = DiSANConfig(vocab_size=50, pair_features="concat_sub_mul", num_labels=3)
    assert non_embedding_parameters(DiSANForSequenceClassification(snli)) == 2_344_203
    tf = DiSANConfig(vocab_size=50, pair_features="concat_sub_mul", num_labels=3, tf_bias_compat=True)
    assert non_embedding_parameters(DiSANForSequenceClassification(tf)) == 2_345_403


def test_direction_masks_follow_equations_16_to_18():
    n = 5
    for j in range(n):
        for i in range(n):
            assert bool(direction_mask(n, "fw")[j, i]) == (i < j)
            assert bool(direction_mask(n, "bw")[j, i]) == (i > j)
            assert bool(direction_mask(n, "diag")[j, i]) == (i != j)


def test_direction_mask_combines_with_key_padding():
    mask = torch.tensor([[True, True, True, False, False]])
    allowed = allowed_keys(mask, "bw")[0]
    # the last real token (j = 2) may only look at pads under bw: after the AND it has no key left
    assert not allowed[2].any()
    assert allowed[0].tolist() == [False, True, True, False, False]
    assert not allowed[:, 3:].any()  # pad keys never allowed


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("impl", ["reference", "blocked"])
def test_rows_without_keys_are_exact_zeros_without_nan(dtype, impl):
    from modeling_disan.modeling_disan import token2token

    attend = token2token(DiSANConfig(vocab_size=10, token2token_implementation=impl))
    B, n, d = 3, 4, 6
    q, k, v = (torch.randn(B, n, d, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    fw = attend(q, k, v, mask, "fw", 5.0)
    bw = attend(q, k, v, mask, "bw", 5.0)
    assert torch.equal(fw[:, 0], torch.zeros_like(fw[:, 0]))  # j = 0 sees nothing under fw
    assert torch.equal(bw[0, 3], torch.zeros_like(bw[0, 3]))  # last token sees nothing under bw
    assert torch.equal(bw[1, 1], torch.zeros_like(bw[1, 1]))  # ... also when right-padded
    assert torch.equal(bw[2, 0], torch.zeros_like(bw[2, 0]))  # a length-1 sentence: nothing either way
    (fw.float().sum() + bw.float().sum()).backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_model_forward_backward_finite_for_length_one(dtype):
    model = DiSANForSequenceClassification(tiny_config(num_labels=3)).to(dtype)
    ids = torch.tensor([[5, 0, 0], [6, 7, 8]])
    out = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=torch.tensor([0, 2]))
    out.loss.backward()
    assert torch.isfinite(out.logits.float()).all()
    assert all(torch.isfinite(p.grad.float()).all() for p in model.parameters() if p.grad is not None)


def test_masked_softmax_matches_softmax_over_allowed_entries():
    logits = torch.randn(2, 5)
    allowed = torch.tensor([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0]], dtype=torch.bool)
    probs = masked_softmax(logits, allowed, dim=-1)
    expected = torch.softmax(logits[0, [0, 2, 3]], dim=-1)
    assert torch.allclose(probs[0, [0, 2, 3]], expected)
    assert probs[0, [1, 4]].abs().sum() == 0 and probs[1].abs().sum() == 0


@pytest.mark.parametrize("impl", ["reference", "blocked"])
def test_pooler_output_independent_of_padding_and_batch_mates(impl):
    assert_padding_invariant(DiSANModel(tiny_config(token2token_implementation=impl)).eval(), atol=1e-6)


def test_outputs_have_the_documented_shapes():
    cfg = tiny_config()
    out = DiSANModel(cfg)(input_ids=torch.tensor([[3, 4, 5], [6, 7, 0]]))
    assert out.last_hidden_state.shape == (2, 3, 2 * cfg.hidden_size)  # U = [u_fw; u_bw]
    assert out.pooler_output.shape == (2, 2 * cfg.hidden_size)


def test_fw_half_is_causal_and_bw_half_anticausal():
    model = DiSANModel(tiny_config()).eval()
    d_h = model.config.hidden_size
    a = torch.tensor([[3, 4, 5, 6, 7]])
    b = torch.tensor([[3, 4, 5, 20, 21]])  # differs after position 2
    ha, hb = model(input_ids=a).last_hidden_state, model(input_ids=b).last_hidden_state
    assert torch.allclose(ha[0, :3, :d_h], hb[0, :3, :d_h], atol=1e-6)  # fw: j sees only i < j
    assert not torch.allclose(ha[0, :3, d_h:], hb[0, :3, d_h:], atol=1e-6)  # bw sees the change


def test_glorot_init_zero_biases_and_embeddings_survive_post_init():
    cfg = DiSANConfig(vocab_size=200, pair_features="concat_sub_mul", num_labels=3)
    model = DiSANForSequenceClassification(cfg)
    assert_glorot_linears(model)
    block = model.disan.encoder.fw
    assert torch.equal(block.b_att, torch.zeros_like(block.b_att)) and torch.equal(block.b_f, torch.zeros_like(block.b_f))
    emb = model.get_input_embeddings().weight.detach()
    assert emb[:2].abs().sum() == 0  # [PAD], [UNK] are zero vectors
    assert emb[2:].abs().max() <= 0.05 and emb[2:].std() > 0.02  # U(-0.05, 0.05)


def test_pad_and_unk_rows_stay_zero_under_training():
    model = DiSANForSequenceClassification(tiny_config(num_labels=2))
    opt = torch.optim.Adadelta(model.parameters(), lr=0.5)
    ids = torch.tensor([[1, 5, 6], [7, 1, 0]])  # contains [UNK] = 1 and [PAD] = 0
    model(input_ids=ids, labels=torch.tensor([0, 1])).loss.backward()
    opt.step()
    emb = model.get_input_embeddings().weight
    assert emb[:2].abs().sum() == 0
    assert emb[5].abs().sum() > 0


def test_dropout_placement_and_elu():
    """Spec §2: input dropout before every dense layer; one shared draw for W1/W2; values and probabilities
    un-dropped. Per DiSA block 4 dropout calls (x, h for W1/W2, s and h for the gate), s2t 2, classifier 2."""
    model = DiSANForSequenceClassification(tiny_config(num_labels=2)).train()
    calls = []
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.register_forward_hook(lambda m, i, o: calls.append(tuple(i[0].shape)))
    model(input_ids=torch.tensor([[3, 4, 5]]))
    assert len(calls) == 2 * 4 + 2 + 2
    assert isinstance(model.disan.encoder.fw.act, nn.ELU) and isinstance(model.disan.encoder.s2t.act, nn.ELU)
    assert any(isinstance(m, nn.ELU) for m in model.classifier.modules())


def test_block_values_are_undropped_h():
    """With dropout 0.99 the Eq. 11 values must still be h (not dropped): the output of a block equals the formula
    evaluated with the block's own h in eval mode when dropout is disabled."""
    cfg = tiny_config(dropout=0.0)
    block = DirectionalSelfAttention(cfg, "fw").eval()
    x = torch.randn(2, 5, cfg.embedding_dim)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    h = block.act(block.fc(x))
    s = token2token_attention_reference(block.w_query(h) + block.b_att, block.w_key(h), h, mask, "fw", 5.0)
    g = torch.sigmoid(block.w_f1(s) + block.w_f2(h) + block.b_f)
    expected = (g * h + (1 - g) * s) * mask.unsqueeze(-1)
    assert torch.allclose(block(x, mask), expected, atol=1e-6)


def test_without_directions_variant_uses_diag_masks():
    cfg = tiny_config(directions=["diag", "diag"])
    model = DiSANModel(cfg)
    assert model.encoder.fw.direction == "diag" and model.encoder.bw.direction == "diag"
    assert non_embedding_parameters(model) == non_embedding_parameters(DiSANModel(tiny_config()))


ABLATIONS = {"word_additive": 451_803, "word_s2t": 541_803, "bilstm_s2t": 2_884_803, "multihead_s2t": 1_984_203}


@pytest.mark.parametrize("encoder_type, expected", sorted(ABLATIONS.items()))
def test_ablation_baseline_counts_match_spec_section_6(encoder_type, expected):
    """SNLI configuration, classifier included, embeddings excluded; trainable parameters (the Bi-LSTM's second
    PyTorch bias b_hh is frozen at zero: TF's cell has one bias)."""
    model = DiSANForSequenceClassification(
        DiSANConfig(vocab_size=50, pair_features="concat_sub_mul", num_labels=3, encoder_type=encoder_type))
    embedding = model.get_input_embeddings().weight
    assert sum(p.numel() for p in model.parameters() if p.requires_grad and p is not embedding) == expected


@pytest.mark.parametrize("encoder_type", ["disan", *sorted(ABLATIONS)])
def test_every_encoder_type_is_padding_invariant(encoder_type):
    cfg = tiny_config(encoder_type=encoder_type, num_attention_heads=2)
    model = DiSANModel(cfg).eval()
    sentence = torch.tensor([[4, 9, 13, 22, 7]])
    batch = torch.tensor([[30, 31, 32, 33, 34, 35, 36, 37], [4, 9, 13, 22, 7, 0, 0, 0]])
    out = model(input_ids=batch, attention_mask=(batch != 0).long()).pooler_output
    assert out.shape[-1] == cfg.sentence_dim
    assert torch.allclose(out[1], model(input_ids=sentence).pooler_output[0], atol=1e-5)


def test_bilstm_second_bias_stays_zero():
    model = DiSANForSequenceClassification(tiny_config(encoder_type="bilstm_s2t", num_labels=2))
    opt = torch.optim.Adadelta([p for p in model.parameters() if p.requires_grad], lr=0.5)
    model(input_ids=torch.tensor([[3, 4, 5]]), labels=torch.tensor([1])).loss.backward()
    opt.step()
    for name, p in model.named_parameters():
        if "bias_hh" in name:
            assert not p.requires_grad and p.abs().sum() == 0
