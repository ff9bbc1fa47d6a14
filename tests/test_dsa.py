"""DSA exactness: parameter counts (literal and "same_as_block"), routing that never sees padding, padding
invariance through the dense CNN, empty/one-word rows, save/load, He × √keep init, and the plateau LR rule
(DSA spec §1, §2, §6, §7)."""

from __future__ import annotations

import json
import math
import os
from types import SimpleNamespace

import pytest
import torch
from torch import nn
from transformers import AutoModel, AutoModelForSequenceClassification

from modeling_disan import DSAConfig, DSAForSequenceClassification, DSAModel
from modeling_disan.heads import pair_features
from modeling_disan.schedules import PlateauOnTrainingLoss, lr_schedule_callbacks

from conftest import (assert_length_one_rows_train_finitely, assert_padding_invariant, non_embedding_parameters,
                      tiny_config)

MULTIPLE = dict(num_attentions=8, attention_dim=300, classifier_hidden_sizes=[512, 512], classifier_dropout=0.4)



@pytest.mark.parametrize("first_conv_kernel, encoder_counts, totals", [
    (1, (991_650, 1_533_450), (1_808_553, 6_733_581)),  # literal reading (spec §6)
    ("same_as_block", (1_261_650, 1_803_450), (2_078_553, 7_003_581)),  # variant A: the reported 2.1m / 7.0m
])
def test_parameter_counts_match_spec_section_6(first_conv_kernel, encoder_counts, totals):
    for extra, encoder_count, total in zip(({}, MULTIPLE), encoder_counts, totals):
        cfg = DSAConfig(vocab_size=50, num_labels=3, first_conv_kernel=first_conv_kernel, **extra)
        assert non_embedding_parameters(DSAModel(cfg)) == encoder_count  # encoder alone
        assert non_embedding_parameters(DSAForSequenceClassification(cfg)) == total  # + NLI classifier (Table 1)
    if first_conv_kernel == "same_as_block":
        assert round(totals[0] / 1e6, 1) == 2.1 and round(totals[1] / 1e6, 1) == 7.0


@pytest.mark.parametrize("num_labels, head", [(2, 182_102), (5, 183_005)])
def test_sst_parameter_counts(num_labels, head):
    sst = DSAConfig(vocab_size=50, num_labels=num_labels, pair_features=None, classifier_hidden_sizes=[300],
                    classifier_dropout=0.4, embed_dropout=0.4)
    assert non_embedding_parameters(DSAForSequenceClassification(sst)) == 991_650 + head  # spec §6, last line


def test_first_conv_kernel_flag_sets_h1_kernels():
    literal = DSAModel(tiny_config("dsa"))
    flagged = DSAModel(tiny_config("dsa", first_conv_kernel="same_as_block"))
    assert [b.layers[0].conv.kernel_size[0] for b in literal.encoder.cnn.blocks] == [1, 1]
    assert [b.layers[0].conv.kernel_size[0] for b in flagged.encoder.cnn.blocks] == [3, 5]
    assert [b.layers[1].conv.kernel_size[0] for b in literal.encoder.cnn.blocks] == [3, 5]
    assert literal.encoder.cnn.compress.conv.kernel_size[0] == 1
    assert literal.encoder.cnn.compress.conv.in_channels == 2 * (8 + 2 * 4) + 12  # 2·Σd_l + d0 (Eq. 5)


@pytest.mark.parametrize("iters", [2, 3])
def test_pad_routing_weights_are_exactly_zero_at_every_iteration(iters):
    model = DSAModel(tiny_config("dsa", routing_iters=iters)).eval()
    ids = torch.tensor([[3, 4, 5, 6, 7, 8], [9, 10, 11, 0, 0, 0], [12, 0, 0, 0, 0, 0]])
    out = model(input_ids=ids, attention_mask=(ids != 0).long(), return_routing_weights=True)
    assert len(out.routing_weights) == iters
    mask = (ids != 0)
    for t, a in enumerate(out.routing_weights):
        assert a.shape == (3, 6, model.config.num_attentions)
        assert torch.equal(a[~mask], torch.zeros_like(a[~mask])), t  # exactly zero on every pad, every iteration
        assert torch.allclose(a.sum(1), torch.ones(3, model.config.num_attentions), atol=1e-6), t
    first = out.routing_weights[0]  # A1.L2: q = 0, so iteration 1 is uniform over the real words
    assert torch.allclose(first[1, :3], torch.full((3, 2), 1 / 3)) and torch.equal(first[2, 0], torch.ones(2))
    assert model(input_ids=ids).routing_weights is None  # only on request


def test_routing_follows_algorithm_1():
    model = DSAModel(tiny_config("dsa")).eval()
    ids = torch.tensor([[3, 4, 5, 6, 0]])
    mask = ids != 0
    out = model(input_ids=ids, return_routing_weights=True)
    cfg, dsa = model.config, model.encoder.dsa
    xc = out.last_hidden_state[0, :4]  # real words only
    x_hat = nn.functional.leaky_relu(dsa.proj(xc), 0.01).view(4, cfg.num_attentions, cfg.attention_dim)  # Eq. 6
    q = torch.zeros(4, cfg.num_attentions)
    for t in range(cfg.routing_iters):
        a = torch.softmax(q, dim=0)  # A1.L4
        z = torch.tanh((a[..., None] * x_hat).sum(0))  # A1.L5-6
        assert torch.allclose(out.routing_weights[t][0, :4], a, atol=1e-6)
        q = q + (x_hat * z).sum(-1)  # A1.L7
    assert torch.allclose(out.pooler_output[0], z.reshape(-1), atol=1e-6)  # Eq. 7
    assert out.pooler_output.abs().max() < 1  # tanh
    norms = out.last_hidden_state.norm(dim=-1)
    assert torch.allclose(norms[mask], torch.ones(4), atol=1e-5) and norms[0, 4] == 0  # §3.1 L2 norm, pad rows 0


def test_pooler_output_independent_of_padding_and_batch_mates():
    model = DSAModel(tiny_config("dsa")).eval()
    # k = 3/5 convolutions must not see pads as anything but zeros (spec §1.4)
    alone = assert_padding_invariant(model, atol=1e-6)
    other = torch.tensor([[4, 9, 13, 22, 7, 0, 0, 0, 0, 0], [25, 26, 27, 28, 29, 30, 31, 32, 33, 34]])
    assert torch.allclose(model(input_ids=other).pooler_output[0], alone.pooler_output[0], atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_length_one_sentences_forward_backward_finite(dtype):
    single = DSAForSequenceClassification(tiny_config("dsa", num_labels=3)).to(dtype).train()
    pair = DSAForSequenceClassification(
        tiny_config("dsa", num_labels=3, pair_features="concat_absdiff_mul")).to(dtype).train()
    assert_length_one_rows_train_finitely(single, pair)
    encoder = DSAModel(tiny_config("dsa")).to(dtype)
    out = encoder(input_ids=torch.tensor([[5]]), return_routing_weights=True)
    assert torch.isfinite(out.pooler_output.float()).all() and all(torch.equal(a, torch.ones_like(a))
                                                                   for a in out.routing_weights)


def test_pair_order_is_hypothesis_first():
    model = DSAForSequenceClassification(tiny_config("dsa", num_labels=3, pair_features="concat_absdiff_mul")).eval()
    assert model.config.pair_order == "second_first"
    ids, types = torch.tensor([[3, 4, 5, 2, 6, 7]]), torch.tensor([[0, 0, 0, 0, 1, 1]])
    out = model(input_ids=ids, token_type_ids=types)
    s_p, s_h = out.sentence_embeddings, out.second_sentence_embeddings
    expected = model.classifier(pair_features(s_h, s_p, "concat_absdiff_mul"))  # [s_h; s_p; |s_h − s_p|; s_h ⊙ s_p]
    assert torch.allclose(out.logits, expected, atol=1e-6)


def test_save_load_equality_through_auto_classes(tmp_path):
    cfg = tiny_config("dsa", num_labels=3, pair_features="concat_absdiff_mul")
    model = AutoModelForSequenceClassification.from_config(cfg)
    assert isinstance(model, DSAForSequenceClassification)
    model.train()(input_ids=torch.tensor([[3, 4, 2, 5], [6, 2, 7, 8]]))  # move the BatchNorm running statistics
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.eval().save_pretrained(tmp_path)
    files = set(os.listdir(tmp_path))
    assert {"configuration_dsa.py", "modeling_dsa.py", "configuration_common.py", "modeling_common.py",
            "attention.py", "heads.py", "config.json", "model.safetensors"} <= files
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "dsa"
    assert config["auto_map"] == {
        "AutoConfig": "configuration_dsa.DSAConfig",
        "AutoModel": "modeling_dsa.DSAModel",
        "AutoModelForSequenceClassification": "modeling_dsa.DSAForSequenceClassification",
    }
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    for (name, a), b in zip(model.state_dict().items(), reloaded.state_dict().values()):
        assert torch.equal(a, b), name  # no re-initialisation (e.g. a second √keep) of loaded weights
    ids, types = torch.tensor([[3, 4, 2, 5, 6, 7]]), torch.tensor([[0, 0, 0, 1, 1, 1]])
    assert torch.equal(reloaded(input_ids=ids, token_type_ids=types).logits,
                       model(input_ids=ids, token_type_ids=types).logits)
    encoder = AutoModel.from_pretrained(tmp_path).eval()
    assert isinstance(encoder, DSAModel)
    single = torch.tensor([[3, 4, 5]])
    assert torch.equal(encoder(input_ids=single).pooler_output, model.dsa(input_ids=single).pooler_output)


def he_ratio(weight: torch.Tensor) -> float:
    """std / He-normal std √(2 / fan_in) (fan_in = in_channels × kernel for a conv)."""
    fan_in = weight[0].numel()
    return weight.std().item() / math.sqrt(2.0 / fan_in)


@pytest.mark.parametrize("scaling, conv, hidden", [("keep", math.sqrt(0.8), math.sqrt(0.7)),
                                                   ("rate", math.sqrt(0.2), math.sqrt(0.3)), (None, 1.0, 1.0)])
def test_he_init_scaled_by_dropout_survives_post_init(scaling, conv, hidden):
    model = DSAForSequenceClassification(DSAConfig(vocab_size=300, num_labels=3, init_dropout_scaling=scaling))
    cnn = model.dsa.encoder.cnn
    convs = [layer.conv for block in cnn.blocks for layer in block.layers] + [cnn.compress.conv]
    for c in convs:
        assert abs(he_ratio(c.weight) / conv - 1) < 0.05
        assert torch.equal(c.bias, torch.zeros_like(c.bias))
    assert abs(he_ratio(model.dsa.encoder.dsa.proj.weight) - 1) < 0.05  # Eq. 6 has no dropout: plain He
    linears = [m for m in model.classifier.layers if isinstance(m, nn.Linear)]
    for lin in linears[:-1]:  # hidden layers: BN -> Dropout(0.3) -> Linear
        assert abs(he_ratio(lin.weight) / hidden - 1) < 0.05
    assert abs(he_ratio(linears[-1].weight) - 1) < 0.15  # output layer: no dropout (3 × 300 weights: noisy)
    for bn in (m for m in model.classifier.layers if isinstance(m, nn.BatchNorm1d)):
        assert torch.equal(bn.weight, torch.ones_like(bn.weight)) and torch.equal(bn.bias, torch.zeros_like(bn.bias))
    emb = model.get_input_embeddings().weight
    assert not emb.requires_grad and emb[:2].abs().sum() == 0 and emb[2:].abs().max() <= 0.005  # App. A: U(±0.005)


def test_classifier_layout_and_dropout_rates():
    model = DSAForSequenceClassification(DSAConfig(vocab_size=50, num_labels=3, **MULTIPLE))
    ops = [type(m) for m in model.classifier.layers]
    block = [nn.BatchNorm1d, nn.Dropout, nn.Linear, nn.LeakyReLU]
    assert ops == block + block + [nn.Linear]  # spec A13: BN -> Dropout -> Linear -> LeakyReLU, plain output
    assert model.classifier.layers[0].num_features == 4 * 2400
    assert {m.p for m in model.classifier.layers if isinstance(m, nn.Dropout)} == {0.4}
    cnn = model.dsa.encoder.cnn
    assert cnn.embed_drop.p == 0.3 and cnn.compress.drop.p == 0.2


def test_config_validation_names_the_field():
    for field, value in (("kernel_sizes", [3, 4]), ("first_conv_kernel", "wide"), ("first_conv_kernel", 2),
                         ("init_dropout_scaling", "sqrt"), ("routing_iters", 0), ("conv_dropout", 1.0),
                         ("num_attentions", 0), ("leaky_slope", -0.1)):
        with pytest.raises(ValueError, match=field):
            DSAConfig(**{field: value})
    assert DSAConfig(embed_dim=100).embedding_dim == 100
    assert DSAConfig(**MULTIPLE).sentence_dim == 2400 and DSAConfig().sentence_dim == 600


# -- the DSA learning-rate rule (spec A9) -----------------------------------------------------------------------------
def drive(callback, losses, steps_per_epoch=10):
    """Feed one training-loss log per epoch through the callback the way the Trainer does (epoch end, then log)."""
    param = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)  # the Trainer's "constant" schedule
    args, state = SimpleNamespace(logging_strategy="epoch"), SimpleNamespace(global_step=0, epoch=0)
    callback.on_train_begin(args, state, None, optimizer=optimizer)
    lrs = []
    for epoch, loss in enumerate(losses, 1):
        for _ in range(steps_per_epoch):
            optimizer.step()
            scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])  # the rate the epoch trained with
        state.global_step, state.epoch = epoch * steps_per_epoch, epoch
        callback.on_epoch_end(args, state, None)
        callback.on_log(args, state, None, logs={"loss": loss}, optimizer=optimizer, lr_scheduler=scheduler)
    return lrs


def test_plateau_halves_after_n_checks_without_a_0_001_drop():
    (sst,) = lr_schedule_callbacks({"lr_schedule": {"type": "plateau", "factor": 0.5, "patience": 1,
                                                    "threshold": 0.001}})
    # N = 2 checks (SST): 1.0 -> 0.9995 (no 0.001 drop) -> 0.9990 (second one: halve) -> 0.5 (drop) -> ...
    lrs = drive(sst, [1.0, 0.9995, 0.9990, 0.5, 0.4999, 0.4998, 0.4997])
    assert lrs == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]  # the Trainer's LambdaLR does not undo the reductions
    assert [h["learning_rates"][0] for h in sst.history] == [1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]
    assert lr_schedule_callbacks({}) == [] and lr_schedule_callbacks({"lr_schedule": None}) == []
    with pytest.raises(ValueError, match="optimizer.lr_schedule.patiense"):
        lr_schedule_callbacks({"lr_schedule": {"type": "plateau", "patiense": 1}})
    with pytest.raises(ValueError, match="type 'plateau'"):
        lr_schedule_callbacks({"lr_schedule": {"type": "cosine"}})
    with pytest.raises(ValueError, match="factor"):
        PlateauOnTrainingLoss(factor=2.0)


def test_plateau_rule_inside_the_trainer(tmp_path):
    """End to end with the stock Trainer: a threshold no loss can meet halves the rate after every epoch."""
    from datasets import Dataset
    from transformers import TrainingArguments

    from modeling_disan.training import PaperTrainer

    torch.manual_seed(0)
    ids = torch.randint(3, 40, (32, 6)).tolist()
    data = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * 6] * 32, "labels": [i % 2 for i in range(32)]})
    model = AutoModelForSequenceClassification.from_config(tiny_config("dsa", num_labels=2))
    args = TrainingArguments(output_dir=str(tmp_path), num_train_epochs=3, per_device_train_batch_size=8,
                             logging_strategy="epoch", save_strategy="no", report_to=[], max_grad_norm=0.0,
                             lr_scheduler_type="constant", disable_tqdm=True, seed=0, dataloader_pin_memory=False)
    callbacks = lr_schedule_callbacks({"lr_schedule": {"type": "plateau", "patience": 0, "threshold": 100.0}})
    trainer = PaperTrainer(model=model, args=args, train_dataset=data, callbacks=callbacks,
                           optimizer_options={"name": "adadelta", "lr": 1.0, "rho": 0.9, "eps": 1e-6, "l2": 1e-5,
                                              "l2_scope": "all"})
    trainer.train()
    logged = [e["learning_rate"] for e in trainer.state.log_history if "loss" in e]
    assert logged == [1.0, 1.0, 0.5]  # first check sets the best loss; every later one fails by 100 -> halve
    assert trainer.optimizer.param_groups[0]["lr"] == 0.25
