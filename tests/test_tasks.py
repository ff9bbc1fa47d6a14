"""Task registry: embedded TREC, local file formats, hub dataset ids (intercepted), errors naming file and line."""

from __future__ import annotations

import gzip
import math
import json

import datasets
import pytest

from modeling_disan import tasks
from modeling_disan.tasks import get_task, load_task


def test_embedded_trec_is_the_offline_default():
    splits = load_task("trec")
    assert len(splits["test"]) == 500
    assert len(splits["train"]) + len(splits["validation"]) == 5452
    assert len(splits["validation"]) == math.ceil(0.1 * 5452)  # datasets rounds the test share up
    assert set(splits["test"]["label"]) == set(range(6))
    assert get_task("trec").label_names == ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


def test_trec_dev_slice_is_fixed_and_disjoint_from_train():
    from collections import Counter

    a, b = load_task("trec"), load_task("trec")
    assert a["validation"]["text"] == b["validation"]["text"]
    full = tasks.read_split(get_task("trec"), f"{tasks.embedded_data_dir()}/trec/train.tsv")
    # train and dev partition the original training file (as multisets: TREC repeats a few questions)
    assert Counter(a["train"]["text"]) + Counter(a["validation"]["text"]) == Counter(full["text"])
    assert load_task("trec", dev_seed=1)["validation"]["text"] != a["validation"]["text"]


def test_local_files_of_each_format(tmp_path):
    (tmp_path / "sst").mkdir()
    (tmp_path / "sst" / "sst2.train.tsv").write_text("1\tgood movie\n0\tbad movie\n\n")
    (tmp_path / "sst" / "sst2.dev.tsv").write_text("1\tfine\n")
    (tmp_path / "sst" / "sst2.test.tsv").write_text("0\tawful\n")
    sst = load_task("sst2", data_dir=str(tmp_path))
    assert sst["train"]["label"] == [1, 0] and sst["test"]["text"] == ["awful"]

    (tmp_path / "snli").mkdir()
    rows = [{"premise": "A man .", "hypothesis": "A person .", "label": "entailment"},
            {"sentence1": "A dog .", "sentence2": "A cat .", "gold_label": "contradiction"},
            {"premise": "x", "hypothesis": "y", "label": "-"}]
    with gzip.open(tmp_path / "snli" / "train.jsonl.gz", "wt") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows))
    snli = load_task("snli", data_dir=str(tmp_path))
    assert snli["train"]["label"] == [0, 2] and snli["train"]["text_pair"] == ["A person .", "A cat ."]

    (tmp_path / "sick").mkdir()
    (tmp_path / "sick" / "train.jsonl").write_text(json.dumps(
        {"pair_id": 1, "sentence_a": "A", "sentence_b": "B", "relatedness": 3.6, "entailment": "NEUTRAL"}) + "\n")
    assert load_task("sick", data_dir=str(tmp_path))["train"]["label"] == [3.6]
    assert load_task("sick_entailment", data_dir=str(tmp_path))["train"]["label"] == [1]


def test_malformed_line_names_file_and_line(tmp_path):
    (tmp_path / "sst").mkdir()
    (tmp_path / "sst" / "sst2.train.tsv").write_text("1\tgood\nno tab here\n")
    with pytest.raises(ValueError, match=r"sst2.train.tsv:2: malformed line"):
        load_task("sst2", data_dir=str(tmp_path))
    (tmp_path / "sst" / "sst2.train.tsv").write_text("1\tgood\n7\tbad label\n")
    with pytest.raises(ValueError, match=r"sst2.train.tsv:2: label '7' is not one of the sst2 labels"):
        load_task("sst2", data_dir=str(tmp_path))
    (tmp_path / "snli").mkdir()
    (tmp_path / "snli" / "dev.jsonl").write_text('{"premise": "a", "hypothesis": "b", "label": "neutral"}\n{oops\n')
    with pytest.raises(ValueError, match=r"dev.jsonl:2: malformed JSON line"):
        load_task("snli", data_dir=str(tmp_path))


def test_empty_texts_are_skipped_not_fatal(tmp_path):
    (tmp_path / "senteval").mkdir()
    (tmp_path / "senteval" / "cr.tsv").write_text("".join(f"{i % 2}\ttext {i}\n" for i in range(40)) + "1\t\n")
    splits = load_task("cr", data_dir=str(tmp_path))
    assert len(splits["train"]) + len(splits["validation"]) + len(splits["test"]) == 40


def test_hub_dataset_ids_map_columns_and_class_names(monkeypatch):
    names = ["ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM"]  # the hub's order differs from ours
    features = datasets.Features({"text": datasets.Value("string"), "coarse_label": datasets.ClassLabel(names=names),
                                  "fine_label": datasets.Value("int32")})
    fake = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"text": ["Who ?", "What ?"], "coarse_label": [3, 1],
                                             "fine_label": [0, 0]}, features=features),
        "test": datasets.Dataset.from_dict({"text": ["Where ?"], "coarse_label": [4], "fine_label": [0]},
                                           features=features),
    })
    seen = {}

    def fake_load(path, name=None, **kwargs):
        seen["path"] = path
        return fake

    monkeypatch.setattr(tasks.datasets, "load_dataset", fake_load)
    splits = load_task("trec", source="hub")
    assert seen["path"] == "CogComp/trec"
    ours = get_task("trec").label_names
    assert [ours[i] for i in splits["train"]["label"]] + [ours[i] for i in splits["validation"]["label"]] \
        in (["HUM", "ENTY"], ["ENTY", "HUM"])
    assert [ours[i] for i in splits["test"]["label"]] == ["LOC"]


def test_hub_nli_drops_examples_without_gold_label(monkeypatch):
    features = datasets.Features({"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"])})
    data = datasets.Dataset.from_dict({"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [2, -1]},
                                      features=datasets.Features({**features, "label": datasets.Value("int64")}))
    monkeypatch.setattr(tasks.datasets, "load_dataset",
                        lambda path, name=None, **kw: datasets.DatasetDict({"validation": data}))
    splits = load_task("snli", source="hub")
    assert splits["validation"]["label"] == [2] and splits["validation"]["text_pair"] == ["c"]


def test_unknown_task_and_missing_data_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown task 'sst7'"):
        get_task("sst7")
    with pytest.raises(FileNotFoundError, match="no sst5 files under"):
        load_task("sst5", data_dir=str(tmp_path))


def test_shared_data_counts(shared_data):
    sst5 = load_task("sst5", data_dir=shared_data)
    assert [len(sst5[s]) for s in ("train", "validation", "test")] == [8544, 1101, 2210]
    snli = load_task("snli", data_dir=shared_data)
    assert len(snli["validation"]) == 9842 and len(snli["test"]) == 9824
    sick = load_task("sick", data_dir=shared_data)
    assert [len(sick[s]) for s in ("train", "validation", "test")] == [4500, 500, 4927]
