"""Shared fixtures: tiny configs and tokenizers, and the optional ../shared/data directory."""

from __future__ import annotations

import os
import sys

import pytest
import torch

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


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
