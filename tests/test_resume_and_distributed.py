"""Resumable training (a really killed child process) and multi-process training (torchrun, gloo, 2 CPU workers)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "scripts", "train.py")
RECIPE = os.path.join(ROOT, "configuration", "disan-trec.json")
SMALL = ["model.embedding_dim=16", "model.hidden_size=16", "model.classifier_hidden_sizes=[16]",
         "tokenizer.max_length=24", "data.max_eval_examples=32", "training.disable_tqdm=true",
         "training.per_device_eval_batch_size=64"]


def run_train(output_dir, *extra, wait=True):
    cmd = [sys.executable, TRAIN, "--recipe", RECIPE, "--output-dir", str(output_dir), "--seed", "3", *extra]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def weights(path) -> dict[str, torch.Tensor]:
    return load_file(os.path.join(path, "model.safetensors"))


def complete_checkpoints(checkpoints_dir) -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(checkpoints_dir, "checkpoint-*"))
                  if os.path.exists(os.path.join(p, "trainer_state.json")))


def test_killed_run_resumes_to_the_same_weights(tmp_path):
    settings = ["--set", *SMALL, "data.max_train_examples=320", "training.num_train_epochs=8",
                "training.per_device_train_batch_size=32", "training.save_total_limit=null", "--keep-checkpoints"]
    run_train(tmp_path / "straight", *settings)

    interrupted = tmp_path / "interrupted"
    proc = run_train(interrupted, *settings, wait=False)
    deadline = time.time() + 300
    while len(complete_checkpoints(interrupted / "checkpoints")) < 2:  # two epochs done and saved
        assert proc.poll() is None, "training ended before it could be killed: " + proc.stderr.read().decode()[-2000:]
        assert time.time() < deadline, "no checkpoint appeared"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # a real kill, mid-run
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not os.path.exists(interrupted / "model.safetensors")  # it never finished

    run_train(interrupted, *settings, "--resume")
    a, b = weights(tmp_path / "straight"), weights(interrupted)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name  # bit-exact on CPU with a fixed seed
    straight = json.loads((tmp_path / "straight" / "results.json").read_text())
    resumed = json.loads((interrupted / "results.json").read_text())
    assert straight["metrics"]["test"]["test_accuracy"] == resumed["metrics"]["test"]["test_accuracy"]


def test_checkpoint_killed_while_saving_leaves_the_previous_one(tmp_path):
    from modeling_disan.training import last_complete_checkpoint

    checkpoints = tmp_path / "checkpoints"
    good, partial = checkpoints / "checkpoint-10", checkpoints / "checkpoint-20"
    good.mkdir(parents=True)
    (good / "model.safetensors").write_bytes(b"x")
    (good / "trainer_state.json").write_text("{}")
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"x")  # killed before trainer_state.json was written
    assert last_complete_checkpoint(str(checkpoints)) == str(good)
    assert (checkpoints / "incomplete-checkpoint-20").exists() and not partial.exists()


def test_final_save_is_atomic(tmp_path, monkeypatch):
    """A crash while the final checkpoint is written leaves the previous checkpoint loadable."""
    from transformers import AutoModelForSequenceClassification

    from modeling_disan import training
    from modeling_disan.training import load_recipe, train

    recipe = load_recipe(RECIPE)
    recipe["model"].update(embedding_dim=8, hidden_size=8, classifier_hidden_sizes=[8])
    recipe["data"] = {"max_train_examples": 64, "max_eval_examples": 16}
    recipe["training"].update(num_train_epochs=1, disable_tqdm=True)
    out = tmp_path / "run"
    train(recipe, str(out), seed=1)
    before = weights(out)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed while saving")

    monkeypatch.setattr(training.PaperTrainer, "save_model", crash)
    with pytest.raises(KeyboardInterrupt):
        train(recipe, str(out), seed=2)
    model = AutoModelForSequenceClassification.from_pretrained(out)
    for name, tensor in before.items():
        assert torch.equal(model.state_dict()[name], tensor)


@pytest.mark.skipif(shutil.which("torchrun") is None and not os.path.exists(
    os.path.join(os.path.dirname(sys.executable), "torchrun")), reason="torchrun is not installed")
def test_two_process_training_matches_one_process(tmp_path):
    """Same global batch (2 × 16 vs 1 × 32), sequential order, dropout off, same number of optimizer steps: DDP
    over gloo with 2 CPU processes ends with the single-process weights (within float tolerance)."""
    settings = [*SMALL, "data.max_train_examples=256", "training.num_train_epochs=2", "model.dropout=0.0",
                "model.classifier_dropout=0.0", "training.train_sampling_strategy=sequential",
                "training.eval_strategy=no", "training.save_strategy=no", "training.load_best_model_at_end=false"]
    run_train(tmp_path / "single", "--set", *settings, "training.per_device_train_batch_size=32")
    torchrun = shutil.which("torchrun") or os.path.join(os.path.dirname(sys.executable), "torchrun")
    cmd = [torchrun, "--nproc_per_node=2", "--master_port=29533", TRAIN, "--recipe", RECIPE, "--output-dir",
           str(tmp_path / "ddp"), "--seed", "3", "--set", *settings, "training.per_device_train_batch_size=16"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=500,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    single, ddp = weights(tmp_path / "single"), weights(tmp_path / "ddp")
    steps_single = json.loads((tmp_path / "single" / "results.json").read_text())["log_history"][-1]["step"]
    steps_ddp = json.loads((tmp_path / "ddp" / "results.json").read_text())["log_history"][-1]["step"]
    assert steps_single == steps_ddp == 16
    for name in single:
        assert torch.allclose(single[name], ddp[name], atol=1e-5, rtol=1e-4), name
    biases = [n for n in single if n.startswith("classifier") and n.endswith("bias")]
    assert biases and all(single[n].abs().sum() > 0 for n in biases)  # zero-initialised, so training moved them
