"""Shared fixtures: tiny configs and tokenizers, and the optional ../shared/data directory."""

from __future__ import annotations

import math
import os
import sys

import pytest
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import modeling_disan  # noqa: E402,F401  (registers the Auto classes)
from modeling_disan.tokenization import build_tokenizer  # noqa: E402

SHARED_DATA = os.environ.get(
    "MODELING_DISAN_SHARED_DATA",
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data"),
)

SENTENCES = [
    "A man is playing a guitar on stage .",
    "The kids are n't sleeping .",
    "What is the capital of France ?",
    "Dogs run .",
    "A woman slices an onion in the kitchen while singing loudly .",
    "It's 3.5 miles away !",
]


@pytest.fixture(scope="session")
def tokenizer():
    return build_tokenizer(SENTENCES, lowercase=True)


@pytest.fixture
def shared_data():
    if not os.path.isdir(SHARED_DATA):
        pytest.skip(f"needs the benchmark data in {SHARED_DATA} (../shared/data is not on this machine)")
    return SHARED_DATA


def tiny_config(family: str = "disan", **overrides):
    """A small config of ``family`` (dims 8-16) for fast tests."""
    from transformers import AutoConfig

    defaults = {
        "disan": dict(vocab_size=40, embedding_dim=12, hidden_size=8, classifier_hidden_sizes=[10]),
        "distance_san": dict(vocab_size=40, embedding_dim=12, num_heads=3, ffn_dim=16, classifier_hidden_sizes=[10],
                             pair_features=None),
        "dsa": dict(vocab_size=40, embedding_dim=12, first_conv_channels=8, growth_channels=4, num_conv_layers=3,
                    compress_dim=10, num_attentions=2, attention_dim=8, classifier_hidden_sizes=[10],
                    pair_features=None),
        "nti": dict(vocab_size=40, embedding_dim=8, hidden_size=8, classifier_hidden_sizes=[10], pair_features=None),
    }[family]
    return AutoConfig.for_model(family, **{**defaults, **overrides})


def non_embedding_parameters(model) -> int:
    """The papers' |θ|: every parameter except the word-embedding table (buffers are not parameters)."""
    embedding = model.get_input_embeddings().weight
    return sum(p.numel() for p in model.parameters() if p is not embedding)


SENTENCE = torch.tensor([[4, 9, 13, 22, 7]])
PADDED_BATCH = torch.tensor([[30, 31, 32, 33, 34, 35, 36, 37], [4, 9, 13, 22, 7, 0, 0, 0], [11, 0, 0, 0, 0, 0, 0, 0]])


def assert_padding_invariant(model, atol: float):
    """Row 1 of PADDED_BATCH is SENTENCE padded among batch-mates: same pooler_output and per-token states as
    SENTENCE alone, and exact zeros at its pad positions. Returns the model's output for SENTENCE alone."""
    alone = model(input_ids=SENTENCE)
    out = model(input_ids=PADDED_BATCH, attention_mask=(PADDED_BATCH != 0).long())
    assert torch.allclose(out.pooler_output[1], alone.pooler_output[0], atol=atol)
    assert torch.allclose(out.last_hidden_state[1, :5], alone.last_hidden_state[0], atol=atol)
    assert torch.equal(out.last_hidden_state[1, 5:], torch.zeros_like(out.last_hidden_state[1, 5:]))
    return alone


def assert_length_one_rows_train_finitely(single, pair):
    """A batch with a length-1 sentence (and a pair with a one-token side) gives finite logits, loss and gradients,
    for a single-sentence and a pair classifier."""
    ids = torch.tensor([[5, 0, 0], [6, 7, 8]])
    pair_ids = torch.tensor([[5, 2, 6, 0], [6, 7, 2, 8]])
    types = torch.tensor([[0, 0, 1, 0], [0, 0, 0, 1]])
    for model, kwargs in ((single, dict(input_ids=ids)), (pair, dict(input_ids=pair_ids, token_type_ids=types))):
        out = model(**kwargs, labels=torch.tensor([0, 2]))
        out.loss.backward()
        assert torch.isfinite(out.logits.float()).all() and torch.isfinite(out.loss.float())
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g.float()).all() for g in grads)


def assert_glorot_linears(model):
    """Every Linear: Xavier-uniform weights (|w| <= b, sd b/√3 within 5%) and zero bias."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            fan_out, fan_in = module.weight.shape
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            w = module.weight.detach()
            assert w.abs().max() <= bound + 1e-7, name
            assert abs(w.std().item() - bound / math.sqrt(3)) < 0.05 * bound, name  # U(-b, b) has sd b/√3
            if module.bias is not None:
                assert torch.equal(module.bias, torch.zeros_like(module.bias)), name


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
