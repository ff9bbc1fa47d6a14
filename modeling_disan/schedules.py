"""Learning-rate rules from the papers that the stock Trainer schedulers do not cover, as ``TrainerCallback``s.

Recipe key ``optimizer.lr_schedule``, e.g. DSA App. A/B (spec A9): "halve the learning rate when the training loss
fails to drop by at least 0.001 for N checks" =
``{"type": "plateau", "factor": 0.5, "patience": N - 1, "threshold": 0.001}``.
"""

from __future__ import annotations

import logging

import torch
from transformers import TrainerCallback

logger = logging.getLogger(__name__)

PLATEAU_OPTIONS = {"type": "plateau", "factor": 0.5, "patience": 0, "threshold": 1e-3, "min_lr": 0.0}


class PlateauOnTrainingLoss(TrainerCallback):
    """Steps ``torch.optim.lr_scheduler.ReduceLROnPlateau`` (mode ``min``, absolute threshold) once per epoch on the
    epoch's mean training loss. ``patience`` is PyTorch's: the rate drops after ``patience + 1`` checks that fail to
    improve on the best loss by ``threshold``.

    The check runs on the first training-loss log after each epoch end (the recipes log once per epoch, so that is
    the epoch's loss; with step logging, the mean of the epoch's logs). The Trainer's own per-step scheduler
    (``lr_scheduler_type``, a ``LambdaLR``) would reset the rate from its ``base_lrs``; the callback scales those
    too, so the reduction composes with any Trainer schedule. Its state is not part of Trainer checkpoints: a
    resumed run starts the plateau count afresh.
    """

    def __init__(self, factor: float = 0.5, patience: int = 0, threshold: float = 1e-3, min_lr: float = 0.0):
        if not 0.0 < factor < 1.0:
            raise ValueError(f"optimizer.lr_schedule.factor={factor!r} must be in (0, 1) (DSA: 0.5)")
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ValueError(f"optimizer.lr_schedule.patience={patience!r} must be an integer >= 0")
        if not (isinstance(threshold, (int, float)) and threshold >= 0):
            raise ValueError(f"optimizer.lr_schedule.threshold={threshold!r} must be a number >= 0 (DSA: 0.001)")
        self.factor, self.patience, self.threshold, self.min_lr = factor, patience, threshold, min_lr
        self.plateau: torch.optim.lr_scheduler.ReduceLROnPlateau | None = None
        self._loss_sum, self._steps, self._last_step, self._epoch_done = 0.0, 0, 0, False
        self.history: list[dict] = []  # one entry per check: epoch, training loss, learning rates after it

    def on_train_begin(self, args, state, control, optimizer=None, **kwargs):
        if args.logging_strategy == "no":
            logger.warning("optimizer.lr_schedule needs training-loss logs; logging_strategy='no' disables it")
        self.plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=self.factor, patience=self.patience, threshold=self.threshold,
            threshold_mode="abs", min_lr=self.min_lr,
        )
        self._last_step = state.global_step

    def on_epoch_end(self, args, state, control, **kwargs):
        self._epoch_done = True  # the epoch's last loss log follows this event

    def on_log(self, args, state, control, logs=None, optimizer=None, lr_scheduler=None, **kwargs):
        if not logs or "loss" not in logs or self.plateau is None:
            return
        steps = state.global_step - self._last_step  # the logged loss is the mean over these steps
        self._loss_sum += logs["loss"] * steps
        self._steps += steps
        self._last_step = state.global_step
        if not self._epoch_done or self._steps == 0:
            return
        loss = self._loss_sum / self._steps
        self._loss_sum, self._steps, self._epoch_done = 0.0, 0, False
        before = [group["lr"] for group in optimizer.param_groups]
        self.plateau.step(loss)
        after = [group["lr"] for group in optimizer.param_groups]
        scheduler = getattr(lr_scheduler, "scheduler", lr_scheduler)  # accelerate wraps the Trainer's scheduler
        if hasattr(scheduler, "base_lrs"):
            scheduler.base_lrs = [base * new / old if old else base
                                  for base, old, new in zip(scheduler.base_lrs, before, after)]
        self.history.append({"epoch": state.epoch, "train_loss": loss, "learning_rates": after})
        if after != before:
            logger.info("training loss %.4f did not improve: learning rate %s -> %s", loss, before, after)


def lr_schedule_callbacks(options: dict) -> list[TrainerCallback]:
    """Callbacks for the recipe's ``optimizer`` section (``lr_schedule`` absent or null: none)."""
    schedule = options.get("lr_schedule")
    if not schedule:
        return []
    if not isinstance(schedule, dict) or schedule.get("type") != "plateau":
        raise ValueError(f"optimizer.lr_schedule={schedule!r} must be an object with type 'plateau'")
    unknown = sorted(set(schedule) - set(PLATEAU_OPTIONS))
    if unknown:
        raise ValueError(f"unknown field(s) {[f'optimizer.lr_schedule.{u}' for u in unknown]} in the recipe")
    settings = {**PLATEAU_OPTIONS, **schedule}
    settings.pop("type")
    return [PlateauOnTrainingLoss(**settings)]


__all__ = ["PlateauOnTrainingLoss", "lr_schedule_callbacks"]
