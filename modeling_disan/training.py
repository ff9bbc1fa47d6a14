"""Recipes and training with the stock ``transformers.Trainer``.

A recipe (``configuration/<checkpoint>.json``) holds the model config overrides, the data, the tokenizer, the
optimizer and the ``TrainingArguments``; :func:`train` turns one into a checkpoint directory plus ``results.json``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
import random
import shutil
import sys
import time

import numpy as np
import torch
import transformers
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    set_seed,
)

from .schedules import lr_schedule_callbacks
from .tasks import RANKING, RELATEDNESS, get_task, load_task
from .tokenization import build_tokenizer

logger = logging.getLogger(__name__)

RECIPE_SECTIONS = {
    "name": None, "description": None, "task": None, "seed": None, "sources": None,
    "model": "config", "training": "training_arguments",
    "tokenizer": ("lowercase", "min_freq", "max_size", "max_length"),
    "embeddings": ("vectors", "trainable"),
    "optimizer": ("name", "lr", "rho", "eps", "betas", "l2", "l2_scope", "l2_exclude", "momentum", "lr_schedule"),
    "data": ("data_dir", "source", "dev_seed", "fold", "max_train_examples", "max_eval_examples"),
}
DEFAULT_SECTIONS = {
    "tokenizer": {"lowercase": True, "min_freq": 1, "max_size": None, "max_length": 512},
    "embeddings": {"vectors": None, "trainable": True},
    "optimizer": {"name": "adadelta", "lr": 0.5, "rho": 0.95, "eps": 1e-8, "l2": 0.0, "l2_scope": "matrices",
                  "l2_exclude": []},
    "data": {"data_dir": None, "source": "auto", "dev_seed": 0, "fold": None, "max_train_examples": None,
             "max_eval_examples": None},
}
# Trainer defaults that differ from the papers: no gradient clipping, constant learning rate, no decoupled decay
PAPER_TRAINING_DEFAULTS = {
    "per_device_train_batch_size": 64, "per_device_eval_batch_size": 128, "num_train_epochs": 10,
    "lr_scheduler_type": "constant", "max_grad_norm": 0.0, "weight_decay": 0.0, "warmup_steps": 0,
    "eval_strategy": "epoch", "save_strategy": "epoch", "logging_strategy": "epoch", "save_total_limit": 2,
    "load_best_model_at_end": True, "report_to": [], "dataloader_num_workers": 0, "dataloader_pin_memory": False,
}


# -- recipes -------------------------------------------------------------------------------------------------------
def load_recipe(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            recipe = json.load(handle)
    except FileNotFoundError:
        raise FileNotFoundError(f"recipe {path} does not exist") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: recipe is not valid JSON ({err.msg})") from None
    validate_recipe(recipe, source=path)
    return recipe


def _known_fields(kind, recipe: dict) -> set:
    if kind == "training_arguments":
        return {f.name for f in dataclasses.fields(TrainingArguments)}
    if kind == "config":
        model_type = recipe.get("model", {}).get("model_type")
        try:
            config_cls = type(AutoConfig.for_model(model_type)) if model_type else None
        except ValueError:
            raise ValueError(f"recipe model.model_type={model_type!r} is not a known model type") from None
        if config_cls is None:
            raise ValueError("recipe field model.model_type is required (e.g. 'disan')")
        return {f.name for f in dataclasses.fields(config_cls)} | {"model_type"}
    return set(kind)


def validate_recipe(recipe: dict, source: str = "recipe") -> None:
    """Every field must be known: a typo is an error, not a silently ignored setting."""
    if not isinstance(recipe, dict):
        raise ValueError(f"{source}: a recipe is a JSON object")
    unknown = sorted(set(recipe) - set(RECIPE_SECTIONS))
    if unknown:
        raise ValueError(f"{source}: unknown recipe field(s) {unknown}; known: {sorted(RECIPE_SECTIONS)}")
    if "task" not in recipe:
        raise ValueError(f"{source}: the recipe needs a 'task'")
    get_task(recipe["task"])
    for section, kind in RECIPE_SECTIONS.items():
        if kind is None or section not in recipe:
            continue
        if not isinstance(recipe[section], dict):
            raise ValueError(f"{source}: recipe field {section!r} must be an object")
        bad = sorted(set(recipe[section]) - _known_fields(kind, recipe))
        if bad:
            raise ValueError(f"{source}: unknown field(s) {[f'{section}.{b}' for b in bad]} in the recipe")


def apply_overrides(recipe: dict, assignments: list[str]) -> dict:
    """``["training.num_train_epochs=3", "model.dropout=0.3"]`` -> a new recipe. Values parse as JSON if they can."""
    recipe = copy.deepcopy(recipe)
    for item in assignments or []:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like section.field=value")
        key, raw = item.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        parts = key.strip().split(".")
        target = recipe
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    validate_recipe(recipe, source="recipe with overrides")
    return recipe


def section(recipe: dict, name: str) -> dict:
    return {**DEFAULT_SECTIONS.get(name, {}), **recipe.get(name, {})}


# -- optimisation --------------------------------------------------------------------------------------------------
def l2_parameter_groups(model: torch.nn.Module, l2: float, scope: str = "matrices", exclude=()) -> list[dict]:
    """Parameter groups with coupled L2 ``γ/2·‖W‖²`` (as optimizer ``weight_decay=γ``) on weight matrices only
    (DiSAN spec §2, TF ``l2_loss``) or on every trainable parameter (``scope="all"``, NTI's Chainer WeightDecay).
    Embeddings are never decayed."""
    if scope not in ("matrices", "all"):
        raise ValueError(f"optimizer.l2_scope={scope!r} must be 'matrices' or 'all'")
    embedding = model.get_input_embeddings().weight
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        is_decayed = param is not embedding and (scope == "all" or param.ndim >= 2)
        is_decayed = is_decayed and not any(pattern in name for pattern in exclude)
        (decay if is_decayed and l2 > 0 else no_decay).append(param)
    groups = [{"params": decay, "weight_decay": l2}] if decay else []
    return groups + [{"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: torch.nn.Module, options: dict) -> torch.optim.Optimizer:
    groups = l2_parameter_groups(model, options.get("l2", 0.0), options.get("l2_scope", "matrices"),
                                 options.get("l2_exclude", ()))
    name = options.get("name", "adadelta")
    if name == "adadelta":  # DiSAN: lr 0.5, TF constants rho 0.95, eps 1e-8 (PyTorch's defaults differ)
        return torch.optim.Adadelta(groups, lr=options["lr"], rho=options.get("rho", 0.95),
                                    eps=options.get("eps", 1e-8))
    if name == "adam":
        return torch.optim.Adam(groups, lr=options["lr"], betas=tuple(options.get("betas", (0.9, 0.999))),
                                eps=options.get("eps", 1e-8))
    if name == "sgd":
        return torch.optim.SGD(groups, lr=options["lr"], momentum=options.get("momentum", 0.0))
    raise ValueError(f"optimizer.name={name!r} must be 'adadelta', 'adam' or 'sgd'")


class PaperTrainer(Trainer):
    """The stock Trainer with the recipe's optimizer (Adadelta/Adam with L2 on weight matrices only)."""

    def __init__(self, *args, optimizer_options: dict | None = None, **kwargs):
        self.optimizer_options = optimizer_options or dict(DEFAULT_SECTIONS["optimizer"])
        super().__init__(*args, **kwargs)

    def create_optimizer(self, model=None):
        if self.optimizer is None:
            self.optimizer = build_optimizer(self.model if model is None else model, self.optimizer_options)
        return self.optimizer


# -- metrics -------------------------------------------------------------------------------------------------------
def make_compute_metrics(task):
    """``compute_metrics`` for the Trainer, from the package's evaluate modules (no network)."""
    from .metrics import load_metric

    modules = {name: load_metric(name, keep_in_memory=True) for name in task.metrics}

    def compute(eval_pred) -> dict:
        logits = eval_pred.predictions[0] if isinstance(eval_pred.predictions, tuple) else eval_pred.predictions
        labels = eval_pred.label_ids
        predictions = logits[:, 0] if task.kind == RELATEDNESS else np.argmax(logits, axis=-1)
        results = {}
        for module in modules.values():
            results.update(module.compute(predictions=predictions, references=labels))
        return results

    return compute


# -- data ----------------------------------------------------------------------------------------------------------
def tokenize_splits(splits, tokenizer, max_length: int):
    def encode(batch):
        pair = batch.get("text_pair")
        return tokenizer(batch["text"], pair, truncation=True, max_length=max_length)

    keep = {"label"}
    return {name: split.map(encode, batched=True, remove_columns=[c for c in split.column_names if c not in keep])
            for name, split in splits.items()}


def limit_splits(splits, max_train: int | None, max_eval: int | None):
    """Keep a fixed random sample of each split (quick runs and tests). A sample, not the first examples: some data
    files are sorted by label (SentEval CR/MPQA/SUBJ), and their first examples would all be of one class."""
    limited = {}
    for name, split in splits.items():
        cap = max_train if name == "train" else max_eval
        if cap and cap < len(split):
            keep = sorted(random.Random(0).sample(range(len(split)), cap))
            split = split.select(keep)
        limited[name] = split
    return limited


def training_texts(train_split):
    texts = list(train_split["text"])
    if "text_pair" in train_split.column_names:
        texts += list(train_split["text_pair"])
    return texts


def model_config_for(recipe: dict, task, tokenizer):
    """The model config: recipe ``model`` fields + what the task and vocabulary fix."""
    fields = dict(recipe.get("model", {}))
    model_type = fields.pop("model_type")
    task_fields = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                   "unk_token_id": tokenizer.unk_token_id, "sep_token_id": tokenizer.sep_token_id}
    if task.kind == RELATEDNESS:
        task_fields.update(problem_type="regression", num_labels=1, id2label={0: "relatedness"},
                           label2id={"relatedness": 0}, pair_features=None)
    elif task.kind == RANKING:  # one relevance logit per candidate: HF's sigmoid/BCE convention (NTI Eq. 20)
        task_fields.update(problem_type="multi_label_classification", num_labels=1, id2label={0: "relevant"},
                           label2id={"relevant": 0})
        fields.setdefault("pair_features", "concat_sub_mul")
    else:
        names = list(task.label_names)
        task_fields.update(num_labels=len(names), id2label=dict(enumerate(names)),
                           label2id={n: i for i, n in enumerate(names)}, problem_type="single_label_classification")
        if task.is_pair:
            fields.setdefault("pair_features", "concat_sub_mul")
        else:
            fields["pair_features"] = None
    return AutoConfig.for_model(model_type, **{**fields, **task_fields})


def count_parameters(model) -> dict:
    embedding = model.get_input_embeddings().weight
    total = sum(p.numel() for p in model.parameters())
    return {"total": total, "without_embeddings": total - embedding.numel(),
            "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad)}


# -- the whole run -------------------------------------------------------------------------------------------------
def train(recipe: dict, output_dir: str, data_dir: str | None = None, seed: int | None = None,
          keep_checkpoints: bool = False, resume_from_checkpoint: str | bool | None = None,
          extra_training_args: dict | None = None, push_to_hub: str | None = None) -> dict:
    """Train a recipe; writes the best checkpoint (model, config with auto_map, code, tokenizer) and results.json
    to ``output_dir`` and returns the results dict. ``push_to_hub="user/name"`` pushes the final model with the
    Trainer (``TrainingArguments(push_to_hub=True, hub_model_id=...)``) and then the generated model card."""
    from .paper_results import paper_reference
    from .vectors import load_glove_into

    started = time.time()
    validate_recipe(recipe)
    seed = int(seed if seed is not None else recipe.get("seed", 42))
    set_seed(seed)
    task = get_task(recipe["task"])
    data = section(recipe, "data")
    tok_opts = section(recipe, "tokenizer")
    splits = load_task(task, data_dir or data["data_dir"], source=data["source"], dev_seed=data["dev_seed"],
                       fold=data["fold"])
    if "train" not in splits:
        raise ValueError(f"task {task.name}: no training split was found")
    splits = limit_splits(splits, data["max_train_examples"], data["max_eval_examples"])
    tokenizer = build_tokenizer(training_texts(splits["train"]), lowercase=tok_opts["lowercase"],
                                min_freq=tok_opts["min_freq"], max_size=tok_opts["max_size"],
                                model_max_length=tok_opts["max_length"])
    encoded = tokenize_splits(splits, tokenizer, tok_opts["max_length"])
    config = model_config_for(recipe, task, tokenizer)
    model = AutoModelForSequenceClassification.from_config(config)
    coverage = None
    emb = section(recipe, "embeddings")
    if emb["vectors"]:
        coverage = load_glove_into(model, tokenizer, emb["vectors"], trainable=emb["trainable"]).to_dict()

    checkpoints = os.path.join(output_dir, "checkpoints")
    training = {**PAPER_TRAINING_DEFAULTS, "metric_for_best_model": task.main_metric,
                "greater_is_better": True, "seed": seed, **recipe.get("training", {}),
                **(extra_training_args or {})}
    if push_to_hub:
        training.update(push_to_hub=True, hub_model_id=push_to_hub, hub_strategy="end")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not torch.cuda.is_available():
        # several CPU processes (torchrun / accelerate launch --cpu): accelerate only builds a multi-CPU (DDP) state
        # with cpu=True; otherwise every process would train alone on its shard
        training.setdefault("ddp_backend", "gloo")
        training.setdefault("use_cpu", True)
    args = TrainingArguments(output_dir=checkpoints, **training)
    eval_split = "validation" if "validation" in encoded else None
    ranking = None
    if task.kind == RANKING:  # MAP/MRR per question (ranking.py): model selection and the final numbers
        from .ranking import RankingEvaluator

        ranking = RankingEvaluator(splits, encoded, data_dir or data["data_dir"])
    trainer = PaperTrainer(
        model=model, args=args, train_dataset=encoded["train"],
        eval_dataset=encoded[eval_split] if eval_split else None,
        processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=ranking.compute_metrics() if ranking else make_compute_metrics(task),
        optimizer_options=section(recipe, "optimizer"),
        callbacks=lr_schedule_callbacks(section(recipe, "optimizer")),
    )
    if ranking:
        ranking.attach(trainer)
    if resume_from_checkpoint is True:  # the newest checkpoint that was written completely
        resume_from_checkpoint = last_complete_checkpoint(checkpoints)
    train_output = trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    metrics = {"train": train_output.metrics}
    for split in ("validation", "test", "validation_mismatched"):
        if split in encoded:
            metrics[split] = (ranking.evaluate(split) if ranking else
                              trainer.evaluate(encoded[split], metric_key_prefix=split))
    results = {
        "name": recipe.get("name"), "task": task.name, "seed": seed, "recipe": recipe, "metrics": metrics,
        "paper_reference": paper_reference(config.model_type, task.name),
        "best_checkpoint": trainer.state.best_model_checkpoint, "parameters": count_parameters(model),
        "log_history": trainer.state.log_history,
        "vectors": coverage, "wall_time_seconds": round(time.time() - started, 1),
        "command": " ".join(sys.argv), "versions": versions(),
        "data": {split: len(ds) for split, ds in splits.items()}, "vocab_size": len(tokenizer),
    }
    if trainer.is_world_process_zero():
        save_atomically(trainer, output_dir, results)
        if push_to_hub:
            publish_with_trainer(trainer, output_dir)
        if not keep_checkpoints:
            shutil.rmtree(checkpoints, ignore_errors=True)
    return results


def save_atomically(trainer: Trainer, output_dir: str, results: dict) -> None:
    """Write the final checkpoint into a staging folder, then move each file into place with an atomic rename
    (``config.json`` last): a run killed while saving leaves the previous checkpoint in ``output_dir`` loadable."""
    staging = os.path.join(output_dir, ".incoming")
    shutil.rmtree(staging, ignore_errors=True)
    trainer.save_model(staging)
    write_json(os.path.join(staging, "results.json"), results)
    for name in sorted(os.listdir(staging), key=lambda n: (n == "config.json", n)):
        os.replace(os.path.join(staging, name), os.path.join(output_dir, name))
    os.rmdir(staging)


def last_complete_checkpoint(checkpoints_dir: str) -> str | None:
    """The newest Trainer checkpoint whose files were all written (its trainer_state.json, saved last, parses);
    incomplete ones (a run killed while saving) are set aside as ``incomplete-checkpoint-N``."""
    if not os.path.isdir(checkpoints_dir):
        return None
    found = sorted((int(name.split("-")[1]), name) for name in os.listdir(checkpoints_dir)
                   if name.startswith("checkpoint-") and name.split("-")[1].isdigit())
    for _, name in reversed(found):
        path = os.path.join(checkpoints_dir, name)
        try:
            with open(os.path.join(path, "trainer_state.json"), encoding="utf-8") as handle:
                json.load(handle)
            if os.path.isfile(os.path.join(path, "model.safetensors")):
                return path
        except (OSError, json.JSONDecodeError):
            pass
        logger.warning("checkpoint %s is incomplete (killed while saving?); resuming from an earlier one", path)
        os.replace(path, os.path.join(checkpoints_dir, f"incomplete-{name}"))
    return None


def publish_with_trainer(trainer: Trainer, output_dir: str) -> None:
    """The Trainer pushes model, config and tokenizer; then the card generated from results.json goes last."""
    from .cards import write_card
    from .hub import push_card

    trainer.push_to_hub(commit_message="Upload model (modeling-disan)")
    card = write_card(os.path.join(output_dir, "results.json"))
    push_card(trainer.args.hub_model_id, card, token=trainer.args.hub_token)


def versions() -> dict:
    from . import __version__

    return {"modeling_disan": __version__, "transformers": transformers.__version__, "torch": torch.__version__}


def write_json(path: str, payload: dict) -> None:
    """Write JSON atomically (temp file + rename): a crash never leaves a half-written file."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, default=str)
        handle.write("\n")
    os.replace(tmp, path)


__all__ = ["load_recipe", "validate_recipe", "apply_overrides", "build_optimizer", "l2_parameter_groups",
           "PaperTrainer", "make_compute_metrics", "train", "count_parameters", "write_json"]
