"""Save -> load through the Auto classes, complete checkpoints, and the text-classification pipeline."""

from __future__ import annotations

import json
import os

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer, pipeline

from conftest import tiny_config

CODE_FILES = {"configuration_common.py", "modeling_common.py", "attention.py", "heads.py"}


def family_files(model_type: str) -> set:
    return CODE_FILES | {f"configuration_{model_type}.py", f"modeling_{model_type}.py"}


@pytest.fixture
def pair_model(tokenizer):
    cfg = tiny_config(vocab_size=len(tokenizer), pair_features="concat_sub_mul", num_labels=3,
                      id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                      label2id={"entailment": 0, "neutral": 1, "contradiction": 2})
    return AutoModelForSequenceClassification.from_config(cfg).eval()


def test_save_load_equality_through_auto_classes(tmp_path, tokenizer, pair_model):
    pair_model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    enc = tokenizer(["Dogs run ."], ["A man is playing a guitar ."], return_tensors="pt")
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert torch.equal(reloaded(**enc).logits, pair_model(**enc).logits)
    # the encoder alone out of the head checkpoint (base_model_prefix)
    encoder = AutoModel.from_pretrained(tmp_path).eval()
    single = tokenizer(["Dogs run ."], return_tensors="pt")
    assert torch.equal(encoder(**single).pooler_output, pair_model.disan(**single).pooler_output)
    assert AutoTokenizer.from_pretrained(tmp_path)("Dogs run .")["input_ids"] == tokenizer("Dogs run .")["input_ids"]


def test_checkpoint_is_complete_for_remote_code(tmp_path, pair_model):
    pair_model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "disan"
    assert config["auto_map"] == {
        "AutoConfig": "configuration_disan.DiSANConfig",
        "AutoModel": "modeling_disan.DiSANModel",
        "AutoModelForSequenceClassification": "modeling_disan.DiSANForSequenceClassification",
    }
    assert config["id2label"]["1"] == "neutral"
    files = set(os.listdir(tmp_path))
    assert "model.safetensors" in files
    assert family_files("disan") <= files, family_files("disan") - files


def test_base_model_checkpoint_also_has_full_auto_map(tmp_path):
    AutoModel.from_config(tiny_config()).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSequenceClassification"}
    assert isinstance(AutoConfig.from_pretrained(tmp_path), type(tiny_config()))


def test_pipeline_single_and_pair_inputs(tokenizer, pair_model):
    single_model = AutoModelForSequenceClassification.from_config(
        tiny_config(vocab_size=len(tokenizer), num_labels=2, id2label={0: "neg", 1: "pos"},
                    label2id={"neg": 0, "pos": 1})).eval()
    single = pipeline("text-classification", model=single_model, tokenizer=tokenizer)
    out = single("Dogs run .")
    assert out[0]["label"] in {"neg", "pos"} and 0 <= out[0]["score"] <= 1
    pair = pipeline("text-classification", model=pair_model, tokenizer=tokenizer)
    out = pair({"text": "A man sleeps .", "text_pair": "A person rests ."})
    assert out["label"] in {"entailment", "neutral", "contradiction"}
    enc = tokenizer("A man sleeps .", "A person rests .", return_tensors="pt")
    expected = torch.softmax(pair_model(**enc).logits, -1).max().item()
    assert abs(out["score"] - expected) < 1e-5
    batch = pair([{"text": "Dogs run .", "text_pair": "A man ."}, {"text": "A kid .", "text_pair": "Dogs ."}])
    assert len(batch) == 2
