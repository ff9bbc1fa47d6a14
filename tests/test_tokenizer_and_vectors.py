"""Word-level tokenizer and GloVe-format vector loading."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from modeling_disan.tokenization import build_tokenizer, build_vocab
from modeling_disan.vectors import load_glove_into, read_vectors

from conftest import tiny_config


def test_special_tokens_and_ptb_like_split(tokenizer):
    assert tokenizer.convert_tokens_to_ids(["[PAD]", "[UNK]", "[SEP]"]) == [0, 1, 2]
    assert tokenizer.pad_token_id == 0 and tokenizer.unk_token_id == 1 and tokenizer.sep_token_id == 2
    assert tokenizer.tokenize("The kids aren't sleeping.") == ["the", "kids", "are", "n't", "sleeping", "."]
    assert tokenizer.tokenize("It's 3.5 miles!") == ["it", "'s", "3.5", "miles", "!"]


def test_pair_encoding_has_separator_and_type_ids(tokenizer):
    enc = tokenizer("Dogs run .", "A man .")
    sep = enc["input_ids"].index(2)
    assert enc["token_type_ids"] == [0] * (sep + 1) + [1] * (len(enc["input_ids"]) - sep - 1)
    assert tokenizer("Dogs zebra .")["input_ids"][1] == tokenizer.unk_token_id


def test_vocab_from_training_texts_is_deterministic_and_cased_by_choice():
    texts = ["b a a", "c b a", "Zed"]
    assert build_vocab(texts) == build_vocab(list(reversed(texts)))
    vocab = build_vocab(texts)
    assert list(vocab)[:6] == ["[PAD]", "[UNK]", "[SEP]", "a", "b", "c"]  # most frequent first
    assert "Zed" in build_vocab(texts, lowercase=False) and "zed" in vocab


def test_tokenizer_round_trip_through_auto_tokenizer(tmp_path, tokenizer):
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    for a, b in [("A man is playing .", None), ("Dogs run .", "It's 3.5 miles !")]:
        assert loaded(a, b) == tokenizer(a, b)


def write_vectors(path, rows):
    path.write_text("".join(f"{w} " + " ".join(f"{x:.4f}" for x in v) + "\n" for w, v in rows.items()))


def test_glove_file_loads_after_post_init_with_coverage(tmp_path):
    tok = build_tokenizer(["the cat sat on the mat", "New York"], lowercase=False)
    d = 12
    rows = {"the": [0.1] * d, "cat": [0.2] * d, "new": [0.3] * d, "York": [0.4] * d, "unrelated": [0.9] * d,
            "with space": [0.5] * d}
    vec_file = tmp_path / "glove.small.txt"
    write_vectors(vec_file, rows)
    model = AutoModelForSequenceClassification.from_config(tiny_config(vocab_size=len(tok), num_labels=2))
    before = model.get_input_embeddings().weight.detach().clone()
    report = load_glove_into(model, tok, str(vec_file), trainable=False)
    emb = model.get_input_embeddings().weight.detach().clone()
    vocab = tok.get_vocab()
    assert torch.allclose(emb[vocab["the"]], torch.full((d,), 0.1))
    assert torch.allclose(emb[vocab["York"]], torch.full((d,), 0.4))
    assert torch.allclose(emb[vocab["New"]], torch.full((d,), 0.3))  # lower-case fallback
    assert torch.equal(emb[vocab["sat"]], before[vocab["sat"]])  # not in the file: random init kept
    assert emb[:2].abs().sum() == 0
    assert report.found == 4 and report.lowercase_matches == 1
    assert abs(report.coverage - 4 / (len(vocab) - 3)) < 1e-9
    # frozen rows stay fixed under training, the others move
    opt = torch.optim.Adadelta([p for p in model.parameters() if p.requires_grad], lr=0.5)
    ids = torch.tensor([[vocab["the"], vocab["sat"], vocab["cat"]]])
    model(input_ids=ids, labels=torch.tensor([1])).loss.backward()
    opt.step()
    after = model.get_input_embeddings().weight.detach()
    assert torch.equal(after[vocab["the"]], emb[vocab["the"]])
    assert not torch.equal(after[vocab["sat"]], emb[vocab["sat"]])


def test_trainable_vectors_keep_learning(tmp_path):
    tok = build_tokenizer(["the cat"], lowercase=True)
    write_vectors(tmp_path / "v.txt", {"the": [0.1] * 12, "cat": [0.2] * 12})
    model = AutoModelForSequenceClassification.from_config(tiny_config(vocab_size=len(tok), num_labels=2))
    load_glove_into(model, tok, str(tmp_path / "v.txt"), trainable=True)
    opt = torch.optim.Adadelta(model.parameters(), lr=0.5)
    model(input_ids=torch.tensor([[3, 4]]), labels=torch.tensor([1])).loss.backward()
    opt.step()
    assert not torch.allclose(model.get_input_embeddings().weight[3], torch.full((12,), 0.1))


def test_vector_file_with_wrong_dimension_names_file_and_line(tmp_path):
    vec_file = tmp_path / "bad.txt"
    vec_file.write_text("the 0.1 0.2 0.3\ncat 0.1 0.2\n")
    with pytest.raises(ValueError, match=r"bad.txt:1: vector has 3 values but the model's embedding_dim is 12"):
        read_vectors(str(vec_file), {"the": 3}, 12)


def test_vector_vocab_mismatch_is_an_error(tmp_path, tokenizer):
    write_vectors(tmp_path / "v.txt", {"the": [0.1] * 12})
    model = AutoModelForSequenceClassification.from_config(tiny_config(vocab_size=len(tokenizer) + 5, num_labels=2))
    with pytest.raises(ValueError, match="same vocabulary"):
        load_glove_into(model, tokenizer, str(tmp_path / "v.txt"))
