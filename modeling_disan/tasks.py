"""Benchmark tasks: where their data lives (local files, the embedded TREC copy, hub dataset ids), labels, metrics.

Every loader returns a ``datasets.DatasetDict`` with columns ``text`` (+ ``text_pair`` for pairs), ``label`` (class
id, relatedness score or 0/1 relevance) and, for ranking, ``query_id``. Local files follow the ``--data-dir`` layout
of ``shared/data`` (see its README): ``trec/train.tsv``, ``sst/sst5.train.tsv``, ``snli/dev.jsonl.gz``, ...
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
from dataclasses import dataclass, field
from importlib import resources

import datasets

logger = logging.getLogger(__name__)

SINGLE, PAIR, RELATEDNESS, RANKING = "single", "pair", "relatedness", "ranking"


@dataclass(frozen=True)
class Task:
    """One benchmark. ``file_labels`` are the raw labels in the files, in class-id order; ``label_names`` the names
    the model's ``id2label`` gets."""

    name: str
    kind: str
    files: dict  # split -> path relative to the data dir ("" = the split is not available locally)
    file_format: str  # tsv | nli_jsonl | sick_jsonl | wikiqa_tsv
    metrics: tuple
    main_metric: str
    file_labels: tuple = ()
    label_names: tuple = ()
    hub: dict = field(default_factory=dict)  # {"path": id, "name": config, "splits": {ours: theirs}, "columns": {...}}
    dev_fraction: float = 0.0  # >0: no dev split, hold out this seeded slice of train
    cross_validation: int = 0  # >0: one file, evaluated by k-fold CV
    embedded: bool = False  # a copy ships inside the package
    paper_tables: str = ""
    phrase_upsample: int = 1  # SST trees: copies of non-neutral phrases and full sentences in training

    @property
    def num_labels(self) -> int:
        return 1 if self.kind in (RELATEDNESS, RANKING) else len(self.file_labels)

    @property
    def is_pair(self) -> bool:
        return self.kind != SINGLE


TASKS: dict[str, Task] = {}


def register_task(task: Task) -> Task:
    TASKS[task.name] = task
    return task


_TREC_LABELS = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
register_task(Task(
    "trec", SINGLE, {"train": "trec/train.tsv", "test": "trec/test.tsv"}, "tsv", ("accuracy",), "accuracy",
    _TREC_LABELS, _TREC_LABELS,
    hub={"path": "CogComp/trec", "splits": {"train": "train", "test": "test"},
         "columns": {"text": "text", "label": "coarse_label"}},
    dev_fraction=0.1, embedded=True, paper_tables="DiSAN AAAI T5 / arXiv T5",
))
register_task(Task(
    "sst5", SINGLE, {"train": "sst/sst5.train.tsv", "validation": "sst/sst5.dev.tsv", "test": "sst/sst5.test.tsv"},
    "tsv", ("accuracy",), "accuracy",
    ("0", "1", "2", "3", "4"), ("very negative", "negative", "neutral", "positive", "very positive"),
    hub={"path": "SetFit/sst5", "splits": {"train": "train", "validation": "validation", "test": "test"},
         "columns": {"text": "text", "label": "label"}},
    paper_tables="DiSAN T2, DSA T2, NTI T3",
))
register_task(Task(
    "sst2", SINGLE, {"train": "sst/sst2.train.tsv", "validation": "sst/sst2.dev.tsv", "test": "sst/sst2.test.tsv"},
    "tsv", ("accuracy",), "accuracy", ("0", "1"), ("negative", "positive"),
    hub={"path": "SetFit/sst2", "splits": {"train": "train", "validation": "validation", "test": "test"},
         "columns": {"text": "text", "label": "label"}},
    paper_tables="DSA T2, NTI T3",
))
for _name, _labels in (("cr", ("negative", "positive")), ("mpqa", ("negative", "positive")),
                       ("subj", ("subjective", "objective"))):
    register_task(Task(
        _name, SINGLE, {"all": f"senteval/{_name}.tsv"}, "tsv", ("accuracy",), "accuracy", ("0", "1"), _labels,
        cross_validation=10, dev_fraction=0.1, paper_tables="DiSAN arXiv T5",
    ))
_NLI = ("entailment", "neutral", "contradiction")
register_task(Task(
    "snli", PAIR, {"train": "snli/train.jsonl.gz", "validation": "snli/dev.jsonl.gz", "test": "snli/test.jsonl.gz"},
    "nli_jsonl", ("accuracy",), "accuracy", _NLI, _NLI,
    hub={"path": "stanfordnlp/snli", "splits": {"train": "train", "validation": "validation", "test": "test"},
         "columns": {"text": "premise", "text_pair": "hypothesis", "label": "label"}},
    paper_tables="DiSAN T1, Distance-SAN T1, DSA T1, NTI T1",
))
register_task(Task(
    "multinli", PAIR,
    {"train": "multinli/train.jsonl.gz", "validation": "multinli/dev_matched.jsonl.gz",
     "validation_mismatched": "multinli/dev_mismatched.jsonl.gz"},
    "nli_jsonl", ("accuracy",), "accuracy", _NLI, _NLI,
    hub={"path": "nyu-mll/multi_nli",
         "splits": {"train": "train", "validation": "validation_matched",
                    "validation_mismatched": "validation_mismatched"},
         "columns": {"text": "premise", "text_pair": "hypothesis", "label": "label"}},
    paper_tables="DiSAN T6, Distance-SAN T2",
))
register_task(Task(
    "sick", RELATEDNESS, {"train": "sick/train.jsonl", "validation": "sick/trial.jsonl", "test": "sick/test.jsonl"},
    "sick_jsonl", ("pearson", "spearman", "mse"), "pearson", paper_tables="DiSAN T4",
))
register_task(Task(
    "sick_entailment", PAIR,
    {"train": "sick/train.jsonl", "validation": "sick/trial.jsonl", "test": "sick/test.jsonl"},
    "sick_jsonl", ("accuracy",), "accuracy", ("ENTAILMENT", "NEUTRAL", "CONTRADICTION"), _NLI,
))


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}") from None


def embedded_data_dir() -> str:
    """Directory of the data that ships inside the package (TREC)."""
    return str(resources.files("modeling_disan") / "data")


# -- readers: each yields example dicts and names file and line on a malformed line ---------------------------------
def _open_text(path: str):
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")


def _label_id(task: Task, raw: str, path: str, lineno: int) -> int:
    if raw in task.file_labels:
        return task.file_labels.index(raw)
    raise ValueError(f"{path}:{lineno}: label {raw!r} is not one of the {task.name} labels {list(task.file_labels)}")


def _read_tsv(task: Task, path: str):
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if "\t" not in line:
                raise ValueError(f"{path}:{lineno}: malformed line, expected 'label<TAB>text'")
            raw, text = line.split("\t", 1)
            yield lineno, {"text": text.strip(), "label": _label_id(task, raw.strip(), path, lineno)}


def _read_jsonl(path: str):
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: malformed JSON line ({err.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{lineno}: malformed line, expected a JSON object")
            yield lineno, record


def _field(record: dict, keys: tuple, path: str, lineno: int):
    for key in keys:
        if key in record:
            return record[key]
    raise ValueError(f"{path}:{lineno}: missing field {keys[0]!r}")


def _read_nli(task: Task, path: str):
    for lineno, record in _read_jsonl(path):
        raw = _field(record, ("label", "gold_label"), path, lineno)
        if raw == "-" or raw == -1:  # no annotator consensus: dropped (SNLI/NTI/DiSAN practice)
            continue
        label = raw if isinstance(raw, int) and 0 <= raw < len(task.file_labels) else _label_id(
            task, str(raw), path, lineno)
        yield lineno, {
            "text": str(_field(record, ("premise", "sentence1"), path, lineno)).strip(),
            "text_pair": str(_field(record, ("hypothesis", "sentence2"), path, lineno)).strip(),
            "label": label,
        }


def _read_sick(task: Task, path: str):
    for lineno, record in _read_jsonl(path):
        example = {
            "text": str(_field(record, ("sentence_a",), path, lineno)).strip(),
            "text_pair": str(_field(record, ("sentence_b",), path, lineno)).strip(),
        }
        if task.kind == RELATEDNESS:
            score = _field(record, ("relatedness",), path, lineno)
            if not isinstance(score, (int, float)) or not 1.0 <= float(score) <= 5.0:
                raise ValueError(f"{path}:{lineno}: relatedness {score!r} is not a number in [1, 5]")
            example["label"] = float(score)
        else:
            example["label"] = _label_id(task, str(_field(record, ("entailment",), path, lineno)), path, lineno)
        yield lineno, example


READERS = {"tsv": _read_tsv, "nli_jsonl": _read_nli, "sick_jsonl": _read_sick}


def register_reader(name: str, reader) -> None:
    """Add a file format: ``reader(task, path)`` yields ``(line number, example dict)``."""
    READERS[name] = reader


# -- SST phrase-level training from the PTB trees (DiSAN spec §7 item 1; NTI §5.3; Kim 2014) -----------------------
_PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


def parse_sst_tree(line: str) -> list[tuple[int, list[str], bool]]:
    """Every node of one labelled PTB tree as (fine label 0-4, its words, is_root), root last."""
    tokens = re.findall(r"\(|\)|[^\s()]+", line)
    nodes, stack, expect_label = [], [], False
    for token in tokens:
        if token == "(":
            stack.append([None, []])
            expect_label = True
        elif token == ")":
            label, words = stack.pop()
            nodes.append((label, words, not stack))
            if stack:
                stack[-1][1].extend(words)
        elif expect_label:
            stack[-1][0] = int(token)
            expect_label = False
        else:
            stack[-1][1].append(_PTB_ESCAPES.get(token, token.replace("\\/", "/").replace("\\*", "*")))
    if stack or not nodes:
        raise ValueError("unbalanced tree")
    return nodes


def _read_sst_trees(task: Task, path: str):
    """Training file: every phrase node, non-neutral phrases and full sentences ×``phrase_upsample`` (DiSAN code);
    other files: the sentences (roots). Binary tasks drop neutral nodes and merge 0-1 / 3-4."""
    binary = len(task.file_labels) == 2
    phrases = os.path.basename(path).startswith("train")
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                nodes = parse_sst_tree(line)
            except (ValueError, IndexError):
                raise ValueError(f"{path}:{lineno}: malformed tree line") from None
            for fine, words, is_root in nodes if phrases else nodes[-1:]:
                if binary and fine == 2:
                    continue
                label = (int(fine > 2) if binary else fine)
                copies = task.phrase_upsample if phrases and (is_root or fine != 2) else 1
                for _ in range(copies):
                    yield lineno, {"text": " ".join(words), "label": label}


register_reader("sst_trees", _read_sst_trees)
_TREES = {"train": "sst/trees/train.txt", "validation": "sst/trees/dev.txt", "test": "sst/trees/test.txt"}
register_task(Task(
    "sst5_phrases", SINGLE, _TREES, "sst_trees", ("accuracy",), "accuracy",
    ("0", "1", "2", "3", "4"), ("very negative", "negative", "neutral", "positive", "very positive"),
    phrase_upsample=4, paper_tables="DiSAN T2 (trained on phrases, tested on sentences)",
))
register_task(Task(
    "sst2_phrases", SINGLE, _TREES, "sst_trees", ("accuracy",), "accuracy", ("0", "1"), ("negative", "positive"),
    phrase_upsample=4, paper_tables="DSA T2, NTI T3 (trained on phrases, tested on sentences)",
))


def read_split(task: Task, path: str) -> datasets.Dataset:
    """Read one local file; examples whose text is empty are skipped with a warning naming the lines."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{task.name}: data file {path} does not exist")
    rows, empty = [], []
    for lineno, example in READERS[task.file_format](task, path):
        if not example["text"] or ("text_pair" in example and not example["text_pair"]):
            empty.append(lineno)
            continue
        rows.append(example)
    if empty:
        logger.warning("%s: skipped %d examples with empty text (lines %s)", path, len(empty), empty[:10])
    if not rows:
        raise ValueError(f"{path}: no examples could be read")
    return datasets.Dataset.from_list(rows)


def load_local(task: Task, data_dir: str) -> datasets.DatasetDict:
    splits = {}
    for split, rel in task.files.items():
        path = os.path.join(data_dir, rel)
        if os.path.exists(path):
            splits[split] = read_split(task, path)
        elif os.path.exists(path[:-3]) and path.endswith(".gz"):
            splits[split] = read_split(task, path[:-3])
    if not splits:
        raise FileNotFoundError(
            f"no {task.name} files under {data_dir} (expected {sorted(task.files.values())})"
        )
    return datasets.DatasetDict(splits)


def load_hub(task: Task) -> datasets.DatasetDict:
    """Load from a hub dataset id (needs the network) and map its columns and labels to ours."""
    if not task.hub:
        raise ValueError(f"task {task.name} has no hub dataset id: pass --data-dir with its local files")
    raw = datasets.load_dataset(task.hub["path"], task.hub.get("name"))
    columns = task.hub["columns"]
    out = {}
    for ours, theirs in task.hub["splits"].items():
        if theirs not in raw:
            continue
        split = raw[theirs]
        label_feature = split.features.get(columns["label"])
        names = getattr(label_feature, "names", None)

        def convert(batch, names=names):
            result = {"text": batch[columns["text"]]}
            if "text_pair" in columns:
                result["text_pair"] = batch[columns["text_pair"]]
            labels = batch[columns["label"]]
            if names and task.kind in (SINGLE, PAIR):  # ClassLabel: map by name onto our order
                lookup = {n.lower(): i for i, n in enumerate(task.label_names)}
                lookup.update({n.lower(): i for i, n in enumerate(task.file_labels)})
                labels = [lookup[names[x].lower()] if x >= 0 else -1 for x in labels]
            result["label"] = labels
            return result

        split = split.map(convert, batched=True, remove_columns=split.column_names)
        if task.kind == PAIR:
            split = split.filter(lambda b: [x >= 0 for x in b["label"]], batched=True)  # drop no-gold pairs
        out[ours] = split
    return datasets.DatasetDict(out)


def load_task(task: Task | str, data_dir: str | None = None, source: str = "auto", dev_seed: int = 0,
              fold: int | None = None) -> datasets.DatasetDict:
    """Load a task's splits: ``train``, ``validation``, ``test`` (and any extra split its files define).

    ``source``: ``"local"`` (``data_dir``, or the embedded copy), ``"hub"`` or ``"auto"`` (local when available).
    Tasks without a dev split get a fixed seeded slice of train (``dev_seed``, independent of the training seed).
    Cross-validation tasks return fold ``fold`` (default 0) of their seeded stratified k-fold split.
    """
    task = get_task(task) if isinstance(task, str) else task
    if source not in ("auto", "local", "hub"):
        raise ValueError(f"source={source!r} must be 'auto', 'local' or 'hub'")
    if source == "hub":
        splits = load_hub(task)
    elif data_dir is not None:
        splits = load_local(task, data_dir)
    elif task.embedded:
        splits = load_local(task, embedded_data_dir())
    elif source == "auto" and task.hub:
        splits = load_hub(task)
    else:
        raise ValueError(f"task {task.name} has no embedded copy: pass --data-dir (e.g. ../shared/data)")
    if task.cross_validation:
        splits = cross_validation_fold(task, splits["all"], fold or 0, seed=dev_seed)
    if "validation" not in splits and task.dev_fraction and "train" in splits:
        held = splits["train"].train_test_split(test_size=task.dev_fraction, seed=dev_seed, shuffle=True)
        splits["train"], splits["validation"] = held["train"], held["test"]
    return splits


def cross_validation_fold(task: Task, data: datasets.Dataset, fold: int, seed: int = 0) -> datasets.DatasetDict:
    from .cross_validation import stratified_kfold

    if not 0 <= fold < task.cross_validation:
        raise ValueError(f"fold {fold} is outside 0..{task.cross_validation - 1} for {task.name}")
    train_idx, test_idx = stratified_kfold(data["label"], n_folds=task.cross_validation, seed=seed)[fold]
    return datasets.DatasetDict({"train": data.select(train_idx), "test": data.select(test_idx)})


__all__ = ["Task", "TASKS", "register_task", "register_reader", "get_task", "load_task", "read_split",
           "embedded_data_dir", "SINGLE", "PAIR", "RELATEDNESS", "RANKING"]


# -- WikiQA answer-sentence selection (NTI §4.2) ---------------------------------------------------------------------
def _read_wikiqa(task: Task, path: str):
    """The original 7-column WikiQA TSV with its header: one candidate answer sentence per line."""
    with _open_text(path) as handle:
        header = handle.readline().rstrip("\n").split("\t")
        columns = {name: i for i, name in enumerate(header)}
        needed = ("QuestionID", "Question", "Sentence", "Label")
        if any(name not in columns for name in needed):
            raise ValueError(f"{path}:1: expected a header with columns {list(needed)}, got {header}")
        for lineno, line in enumerate(handle, 2):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            cells = line.split("\t")
            if len(cells) != len(header):
                raise ValueError(f"{path}:{lineno}: malformed line, expected {len(header)} tab-separated columns")
            raw = cells[columns["Label"]].strip()
            if raw not in ("0", "1"):
                raise ValueError(f"{path}:{lineno}: label {raw!r} is not 0 or 1")
            yield lineno, {"text": cells[columns["Question"]].strip(), "text_pair": cells[columns["Sentence"]].strip(),
                           "label": int(raw), "query_id": cells[columns["QuestionID"]].strip()}


register_reader("wikiqa_tsv", _read_wikiqa)
register_task(Task(
    "wikiqa", RANKING,
    {"train": "wikiqa/WikiQA-train.tsv.gz", "validation": "wikiqa/WikiQA-dev.tsv.gz", "test": "wikiqa/WikiQA-test.tsv.gz"},
    "wikiqa_tsv", ("map", "mrr"), "map", ("0", "1"), ("relevant",), paper_tables="NTI T2",
))
