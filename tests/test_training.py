"""Training with the stock Trainer: optimizer and L2, recipes, a short run whose loss falls, the checkpoint layout."""

from __future__ import annotations

import json
import os

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from modeling_disan.training import (
    apply_overrides,
    build_optimizer,
    l2_parameter_groups,
    load_recipe,
    train,
    validate_recipe,
)

from conftest import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPES = os.path.join(ROOT, "configuration")


def test_adadelta_constants_and_l2_only_on_weight_matrices():
    model = AutoModelForSequenceClassification.from_config(tiny_config(num_labels=3))
    opt = build_optimizer(model, {"name": "adadelta", "lr": 0.5, "rho": 0.95, "eps": 1e-8, "l2": 1e-4})
    assert isinstance(opt, torch.optim.Adadelta)
    assert opt.defaults["lr"] == 0.5 and opt.defaults["rho"] == 0.95 and opt.defaults["eps"] == 1e-8
    decayed = {id(p) for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    for name, p in model.named_parameters():
        expected = p.ndim >= 2 and "embeddings" not in name
        assert (id(p) in decayed) == expected, name
    assert sum(len(g["params"]) for g in opt.param_groups) == len([p for p in model.parameters() if p.requires_grad])


def test_coupled_weight_decay_equals_l2_term_in_the_loss():
    """Adadelta(weight_decay=γ) on matrices == plain Adadelta on loss + γ/2·Σ‖W‖² (DiSAN spec §2)."""
    gamma = 1e-2
    torch.manual_seed(0)
    a = AutoModelForSequenceClassification.from_config(tiny_config(num_labels=2, dropout=0.0, classifier_dropout=0.0))
    b = AutoModelForSequenceClassification.from_config(a.config)
    b.load_state_dict(a.state_dict())
    ids, labels = torch.tensor([[3, 4, 5], [6, 7, 0]]), torch.tensor([0, 1])
    opt_a = build_optimizer(a, {"name": "adadelta", "lr": 0.5, "l2": gamma})
    opt_b = build_optimizer(b, {"name": "adadelta", "lr": 0.5, "l2": 0.0})
    for _ in range(3):
        opt_a.zero_grad(), opt_b.zero_grad()
        a(input_ids=ids, labels=labels).loss.backward()
        matrices = [p for g in l2_parameter_groups(b, 1.0) if g["weight_decay"] > 0 for p in g["params"]]
        (b(input_ids=ids, labels=labels).loss + gamma / 2 * sum((w ** 2).sum() for w in matrices)).backward()
        opt_a.step(), opt_b.step()
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-6), name


def test_recipes_validate_and_unknown_fields_are_errors(tmp_path):
    for name in os.listdir(RECIPES):
        validate_recipe(load_recipe(os.path.join(RECIPES, name)), source=name)
    recipe = load_recipe(os.path.join(RECIPES, "disan-trec.json"))
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['model.hiden_size'\]"):
        apply_overrides(recipe, ["model.hiden_size=10"])
    with pytest.raises(ValueError, match=r"training.num_epochs"):
        apply_overrides(recipe, ["training.num_epochs=1"])
    with pytest.raises(ValueError, match=r"unknown recipe field\(s\) \['optimiser'\]"):
        validate_recipe({**recipe, "optimiser": {}})
    bad = tmp_path / "bad.json"
    bad.write_text('{"task": "trec",\n "model": }')
    with pytest.raises(ValueError, match=r"bad.json:2: recipe is not valid JSON"):
        load_recipe(str(bad))
    changed = apply_overrides(recipe, ["training.num_train_epochs=3", "model.dropout=0.3", "model.directions=[\"diag\",\"diag\"]"])
    assert changed["training"]["num_train_epochs"] == 3 and changed["model"]["dropout"] == 0.3
    assert changed["model"]["directions"] == ["diag", "diag"]
    assert recipe["training"]["num_train_epochs"] != 3  # the original is untouched


def small_recipe(**training):
    recipe = load_recipe(os.path.join(RECIPES, "disan-trec.json"))
    recipe["model"].update(embedding_dim=16, hidden_size=16, classifier_hidden_sizes=[16], dropout=0.0,
                           classifier_dropout=0.0)
    recipe["data"] = {"max_train_examples": 256, "max_eval_examples": 64}
    recipe["training"].update({"num_train_epochs": 4, "per_device_train_batch_size": 32,
                               "disable_tqdm": True, **training})
    return recipe


def test_short_trainer_run_loss_falls_and_checkpoint_is_complete(tmp_path):
    out = tmp_path / "run"
    results = train(small_recipe(), str(out), seed=3)
    assert "train_loss" in results["metrics"]["train"]
    files = set(os.listdir(out))
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "results.json",
            "modeling_disan.py", "configuration_disan.py", "attention.py", "heads.py"} <= files
    assert not os.path.exists(out / "checkpoints")  # intermediate Trainer checkpoints are cleaned up
    config = json.loads((out / "config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSequenceClassification"}
    assert config["id2label"]["0"] == "ABBR"
    saved = json.loads((out / "results.json").read_text())
    assert saved["seed"] == 3 and saved["task"] == "trec" and saved["wall_time_seconds"] > 0
    assert 0.0 <= saved["metrics"]["test"]["test_accuracy"] <= 1.0
    losses = [e["loss"] for e in saved["log_history"] if "loss" in e]
    assert len(losses) == 4 and losses[-1] < losses[0]
    model = AutoModelForSequenceClassification.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    assert model(**tok("What is a cat ?", return_tensors="pt")).logits.shape == (1, 6)


def test_trainer_loss_falls():
    """Loss logged per epoch by the stock Trainer goes down on a small TREC subset."""
    from transformers import DataCollatorWithPadding, TrainingArguments

    from modeling_disan.tasks import load_task
    from modeling_disan.tokenization import build_tokenizer
    from modeling_disan.training import PaperTrainer

    data = load_task("trec")["train"].select(range(128))
    tok = build_tokenizer(data["text"])
    encoded = data.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(vocab_size=len(tok), num_labels=6, dropout=0.0, classifier_dropout=0.0))
    args = TrainingArguments(output_dir="/tmp/unused-trainer-dir", num_train_epochs=6, per_device_train_batch_size=32,
                             logging_strategy="epoch", save_strategy="no", report_to=[], max_grad_norm=0.0,
                             lr_scheduler_type="constant", disable_tqdm=True, seed=0,
                             dataloader_pin_memory=False)
    trainer = PaperTrainer(model=model, args=args, train_dataset=encoded, processing_class=tok,
                           data_collator=DataCollatorWithPadding(tok),
                           optimizer_options={"name": "adadelta", "lr": 0.5, "rho": 0.95, "eps": 1e-8, "l2": 1e-4})
    trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    # Adadelta's first steps are tiny (the update starts at sqrt(eps)-scale), so look for a steady fall
    assert len(losses) == 6 and all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < losses[0] - 0.005
