"""Bad input gets a ValueError that names the problem, never a stack trace from inside torch."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification

from conftest import tiny_config


@pytest.fixture
def model(tokenizer):
    return AutoModelForSequenceClassification.from_config(tiny_config(vocab_size=len(tokenizer), num_labels=3))


def test_empty_text(model, tokenizer):
    with pytest.raises(ValueError, match="at least one token"):
        model(**tokenizer([""], return_tensors="pt"))
    enc = tokenizer(["Dogs run .", ""], padding=True, return_tensors="pt")
    with pytest.raises(ValueError, match=r"row 1 of the batch has no tokens"):
        model(**enc)


def test_label_outside_label_set(model, tokenizer):
    enc = tokenizer(["Dogs run ."], return_tensors="pt")
    with pytest.raises(ValueError, match=r"label 7 is outside the label set 0..2"):
        model(**enc, labels=torch.tensor([7]))
    with pytest.raises(ValueError, match=r"label -1 is outside the label set"):
        model(**enc, labels=torch.tensor([-1]))


def test_relatedness_score_outside_range(tokenizer):
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(vocab_size=len(tokenizer), problem_type="regression", num_labels=1))
    enc = tokenizer(["Dogs run ."], ["A man ."], return_tensors="pt")
    with pytest.raises(ValueError, match=r"relatedness score 6.0 is outside the score range \[1, 5\]"):
        model(**enc, labels=torch.tensor([6.0]))


def test_token_ids_beyond_vocabulary(model):
    with pytest.raises(ValueError, match=r"token id 999 is outside the vocabulary"):
        model(input_ids=torch.tensor([[3, 999]]))
    with pytest.raises(ValueError, match=r"token id -4 is outside the vocabulary"):
        model(input_ids=torch.tensor([[3, -4]]))


def test_empty_batch(model):
    with pytest.raises(ValueError, match="empty batch"):
        model(input_ids=torch.zeros(0, 5, dtype=torch.long))


def test_mismatched_mask_and_wrong_dtype(model):
    with pytest.raises(ValueError, match="attention_mask shape"):
        model(input_ids=torch.tensor([[3, 4]]), attention_mask=torch.tensor([[1, 1, 1]]))
    with pytest.raises(ValueError, match="integer token ids"):
        model(input_ids=torch.tensor([[3.0, 4.0]]))


def test_over_long_input_names_the_limit(tokenizer):
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(vocab_size=len(tokenizer), num_labels=2, max_length=8))
    with pytest.raises(ValueError, match=r"length 9 exceeds max_length=8"):
        model(input_ids=torch.full((1, 9), 4))


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"hidden_size": 0}, "hidden_size=0 must be a positive integer"),
        ({"vocab_size": 10, "pad_token_id": 12}, r"pad_token_id=12 must be an id inside the vocabulary \[0, 10\)"),
        ({"directions": ["fw", "up"]}, "directions"),
        ({"dropout": 1.5}, r"dropout=1.5 must be a dropout rate in \[0, 1\)"),
        ({"hidden_act": "swishy"}, "hidden_act='swishy' is not one of"),
        ({"encoder_type": "multihead_s2t", "hidden_size": 10, "num_attention_heads": 3},
         "must be divisible by num_attention_heads"),
        ({"pair_features": "concat"}, "pair_features='concat' is not one of"),
        ({"classifier_block": "dropout,act"}, "exactly one 'linear'"),
        ({"problem_type": "regression", "num_labels": 3}, "needs num_labels=1"),
    ],
)
def test_config_with_inconsistent_sizes(fields, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**fields)


def test_unknown_model_type_is_a_clear_error():
    with pytest.raises(ValueError, match="disan_xl"):
        AutoConfig.for_model("disan_xl")


def test_text_that_tokenizes_to_nothing(model, tokenizer):
    for text in ["   ", "\t\n"]:
        with pytest.raises(ValueError, match="at least one token"):
            model(**tokenizer([text], return_tensors="pt"))


def test_truncation_chosen_by_the_user_is_the_way_past_the_limit(tokenizer):
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(vocab_size=len(tokenizer), num_labels=2, max_length=4))
    long_text = "A man is playing a guitar on stage ."
    enc = tokenizer([long_text], truncation=True, max_length=4, return_tensors="pt")
    assert model(**enc).logits.shape == (1, 2)


def test_pair_row_without_second_sentence_in_a_batch(tokenizer):
    model = AutoModelForSequenceClassification.from_config(
        tiny_config(vocab_size=len(tokenizer), pair_features="concat_sub_mul", num_labels=3))
    enc = tokenizer(["Dogs run .", "A man ."], ["A kid .", "Dogs run ."], padding=True, return_tensors="pt")
    enc["token_type_ids"][1] = 0  # the second row lost its second sentence
    with pytest.raises(ValueError, match="row 1 has no second sentence"):
        model(**enc)
