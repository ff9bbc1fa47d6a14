"""Property-based tests (hypothesis) for every family: padding and batch-composition invariance, determinism,
finite outputs and gradients for every length and for all-[UNK] input (fp32, bf16), save -> load -> same logits;
for DiSAN also directional causality."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import AutoModel, AutoModelForSequenceClassification

import modeling_disan

from conftest import tiny_config

FAMILIES = sorted(modeling_disan.FAMILIES)
VOCAB = 40
MAX_LEN = 11
PROPERTY_SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

sentences = st.lists(st.integers(min_value=3, max_value=VOCAB - 1), min_size=1, max_size=MAX_LEN)
batches = st.lists(sentences, min_size=1, max_size=4)

_MODELS: dict = {}


def encoder(family: str):
    """One tiny encoder per family, in eval mode (dropout off), shared by the examples of a test."""
    if family not in _MODELS:
        torch.manual_seed(0)
        _MODELS[family] = AutoModel.from_config(tiny_config(family, vocab_size=VOCAB)).eval()
    return _MODELS[family]


def pad(rows: list[list[int]], extra: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows) + extra
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    return ids, (ids != 0).long()


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY_SETTINGS
@given(batch=batches, extra=st.integers(min_value=0, max_value=4))
def test_pooler_output_ignores_padding_and_batch_mates(family, batch, extra):
    model = encoder(family)
    ids, mask = pad(batch, extra)
    with torch.no_grad():
        together = model(input_ids=ids, attention_mask=mask).pooler_output
        for i, row in enumerate(batch):
            alone = model(input_ids=torch.tensor([row])).pooler_output[0]
            assert torch.allclose(together[i], alone, atol=2e-5, rtol=1e-4), (family, i)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_finite_outputs_and_gradients_for_every_length_and_all_unk(family, dtype):
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(family, vocab_size=VOCAB, num_labels=3)).to(dtype).train()
    for n in range(1, MAX_LEN + 1):
        for ids in (torch.randint(3, VOCAB, (2, n)), torch.full((2, n), 1)):  # random words, then all [UNK]
            ids[1, n // 2 + 1:] = 0  # the second row is shorter (padded)
            model.zero_grad()
            out = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=torch.tensor([0, 2]))
            out.loss.backward()
            assert torch.isfinite(out.logits.float()).all(), (family, n)
            for name, p in model.named_parameters():
                if p.grad is not None:
                    assert torch.isfinite(p.grad.float()).all(), (family, n, name)


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_model_same_outputs(family):
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    outs = []
    for _ in range(2):
        torch.manual_seed(123)
        model = AutoModelForSequenceClassification.from_config(tiny_config(family, vocab_size=VOCAB, num_labels=3))
        model.train()  # dropout active: the seed fixes it too
        torch.manual_seed(7)
        outs.append(model(input_ids=ids, attention_mask=(ids != 0).long()).logits)
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=batches)
def test_save_load_gives_identical_logits(tmp_path_factory, family, batch):
    torch.manual_seed(1)
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(family, vocab_size=VOCAB, num_labels=4)).eval()
    path = tmp_path_factory.mktemp(family)
    model.save_pretrained(path)
    reloaded = AutoModelForSequenceClassification.from_pretrained(path).eval()
    ids, mask = pad(batch)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids, attention_mask=mask).logits,
                           reloaded(input_ids=ids, attention_mask=mask).logits)


@PROPERTY_SETTINGS
@given(prefix=st.lists(st.integers(3, VOCAB - 1), min_size=1, max_size=6),
       suffix_a=st.lists(st.integers(3, VOCAB - 1), min_size=1, max_size=5),
       suffix_b=st.lists(st.integers(3, VOCAB - 1), min_size=1, max_size=5))
def test_disan_directional_causality(prefix, suffix_a, suffix_b):
    """fw half at position j ignores tokens after j; bw half ignores tokens before j."""
    model = encoder("disan")
    d_h = model.config.hidden_size
    with torch.no_grad():
        a = model(input_ids=torch.tensor([prefix + suffix_a])).last_hidden_state[0]
        b = model(input_ids=torch.tensor([prefix + suffix_b])).last_hidden_state[0]
        assert torch.allclose(a[: len(prefix), :d_h], b[: len(prefix), :d_h], atol=1e-6)
        c = model(input_ids=torch.tensor([suffix_a + prefix])).last_hidden_state[0]
        d = model(input_ids=torch.tensor([suffix_b[: len(suffix_a)] + [3] * (len(suffix_a) - len(suffix_b))
                                          + prefix])).last_hidden_state[0]
        k = len(suffix_a)
        assert torch.allclose(c[k:, d_h:], d[k:, d_h:], atol=1e-6)
