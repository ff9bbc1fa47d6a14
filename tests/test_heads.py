"""Pair splitting, pair features, classifier and relatedness heads (shared by every family)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from modeling_disan import DiSANForSequenceClassification, DiSANModel
from modeling_disan.heads import pair_features, sparse_target_distribution, split_pair

from conftest import tiny_config


def test_split_pair_recovers_each_sentence_as_tokenized_alone(tokenizer):
    a = ["A man is playing a guitar .", "Dogs run ."]
    b = ["The kids are n't sleeping .", "What is the capital of France ?"]
    enc = tokenizer(a, b, padding=True, return_tensors="pt")
    cfg = tiny_config(vocab_size=len(tokenizer), pair_features="concat_sub_mul", num_labels=3)
    (ids_a, mask_a), (ids_b, mask_b) = split_pair(enc["input_ids"], enc["attention_mask"].bool(),
                                                  enc["token_type_ids"], cfg)
    for row in range(2):
        alone_a = tokenizer(a[row])["input_ids"]
        alone_b = tokenizer(b[row])["input_ids"]
        assert ids_a[row][mask_a[row]].tolist() == alone_a
        assert ids_b[row][mask_b[row]].tolist() == alone_b
        assert mask_a[row, : len(alone_a)].all()  # left-aligned: real tokens first


def test_split_pair_without_token_type_ids_uses_the_separator(tokenizer):
    enc = tokenizer(["Dogs run ."], ["A man is playing ."], return_tensors="pt")
    cfg = tiny_config(vocab_size=len(tokenizer), pair_features="concat_sub_mul", num_labels=3)
    with_types = split_pair(enc["input_ids"], enc["attention_mask"].bool(), enc["token_type_ids"], cfg)
    without = split_pair(enc["input_ids"], enc["attention_mask"].bool(), None, cfg)
    for (i1, m1), (i2, m2) in zip(with_types, without):
        assert torch.equal(i1, i2) and torch.equal(m1, m2)


def test_pair_classifier_is_shared_encoder_plus_features(tokenizer):
    cfg = tiny_config(vocab_size=len(tokenizer), pair_features="concat_sub_mul", num_labels=3)
    model = DiSANForSequenceClassification(cfg).eval()
    enc = tokenizer(["Dogs run ."], ["A man is playing a guitar ."], return_tensors="pt")
    logits = model(**enc).logits
    u = model.disan(**tokenizer(["Dogs run ."], return_tensors="pt")).pooler_output
    v = model.disan(**tokenizer(["A man is playing a guitar ."], return_tensors="pt")).pooler_output
    assert torch.allclose(logits, model.classifier(torch.cat([u, v, u - v, u * v], -1)), atol=1e-6)


def test_pair_features_layouts():
    u, v = torch.randn(2, 3), torch.randn(2, 3)
    assert torch.equal(pair_features(u, v, "concat_sub_mul"), torch.cat([u, v, u - v, u * v], -1))
    assert torch.equal(pair_features(u, v, "concat_absdiff_mul"), torch.cat([u, v, (u - v).abs(), u * v], -1))


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1.0, max_value=5.0, allow_nan=False))
def test_sparse_target_distribution_reproduces_the_score(y):
    p = sparse_target_distribution(torch.tensor([y]), 1, 5)[0]
    assert torch.isclose(p.sum(), torch.tensor(1.0), atol=1e-6)
    assert torch.isclose((p * torch.arange(1.0, 6.0)).sum(), torch.tensor(y, dtype=torch.float32), atol=1e-5)
    nonzero = p.nonzero().flatten().tolist()
    assert len(nonzero) <= 2 and (len(nonzero) < 2 or nonzero[1] == nonzero[0] + 1)
    assert (p >= 0).all()


def test_relatedness_head_predicts_scores_in_range_and_kl_loss(tokenizer):
    cfg = tiny_config(vocab_size=len(tokenizer), problem_type="regression", num_labels=1)
    model = DiSANForSequenceClassification(cfg).eval()
    enc = tokenizer(["Dogs run .", "A man is playing ."], ["A man is playing .", "Dogs run ."],
                    padding=True, return_tensors="pt")
    labels = torch.tensor([4.3, 1.0])
    out = model(**enc, labels=labels)
    assert out.logits.shape == (2, 1)
    assert ((out.logits >= 1) & (out.logits <= 5)).all()
    target = sparse_target_distribution(labels, 1, 5)
    expected = F.kl_div(out.score_distribution.log(), target, reduction="batchmean")
    assert torch.isclose(out.loss, expected, atol=1e-5)
    assert torch.allclose(out.logits[:, 0], out.score_distribution @ torch.arange(1.0, 6.0), atol=1e-5)


def test_relatedness_model_is_reachable_through_auto_class(tokenizer):
    from transformers import AutoModelForSequenceClassification

    cfg = tiny_config(vocab_size=len(tokenizer), problem_type="regression", num_labels=1)
    model = AutoModelForSequenceClassification.from_config(cfg)
    assert hasattr(model, "relatedness") and not hasattr(model, "classifier")


def test_single_sentence_model_rejects_pairs_and_pair_model_rejects_singles(tokenizer):
    single = DiSANForSequenceClassification(tiny_config(vocab_size=len(tokenizer), num_labels=2))
    with pytest.raises(ValueError, match="single sentences"):
        single(**tokenizer(["Dogs run ."], ["A man ."], return_tensors="pt"))
    pair = DiSANForSequenceClassification(
        tiny_config(vocab_size=len(tokenizer), pair_features="concat_sub_mul", num_labels=3))
    with pytest.raises(ValueError, match="no second sentence"):
        pair(**tokenizer(["Dogs run ."], return_tensors="pt"))


def test_base_model_and_classifier_share_the_encoder_output(tokenizer):
    cfg = tiny_config(vocab_size=len(tokenizer), num_labels=4)
    clf = DiSANForSequenceClassification(cfg).eval()
    enc = tokenizer(["Dogs run ."], return_tensors="pt")
    out = clf(**enc)
    assert torch.allclose(out.sentence_embeddings, clf.disan(**enc).pooler_output)
    assert isinstance(clf.disan, DiSANModel)
