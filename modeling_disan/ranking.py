"""Answer-sentence selection evaluation (WikiQA; NTI §4.2, Table 2): MAP and MRR of model scores per question.

The metrics are the package's shipped ``map`` / ``mrr`` evaluate modules. The standard ("filtered") protocol evaluates
only the questions listed in WikiQA's ``WikiQA-{dev,test}-filtered.ref`` qrels (trec_eval format ``qid 0 docid rel``;
qid k is the k-th question of the split file, docid the candidate's index within its question): questions with at
least one correct and one incorrect candidate, 122 dev / 237 test questions. The unfiltered numbers use every question;
like trec_eval, the metrics leave out questions without a correct candidate (243 test questions remain).

With ``train_sampling_strategy="group_by_length"`` the Trainer also length-groups evaluation batches, so
``Trainer.predict`` returns predictions in sampler order, not dataset order; :func:`predict_scores` puts them back.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict

import numpy as np

logger = logging.getLogger(__name__)

FILTERED_REFS = {"validation": "wikiqa/WikiQA-dev-filtered.ref", "test": "wikiqa/WikiQA-test-filtered.ref"}


def read_ref(path: str) -> "OrderedDict[int, list[tuple[int, int]]]":
    """trec_eval qrels ``qid iter docid rel`` -> {qid: [(docid, rel), ...]} in file order."""
    qrels: OrderedDict[int, list[tuple[int, int]]] = OrderedDict()
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 4:
                raise ValueError(f"{path}:{lineno}: malformed qrels line, expected 'qid iter docid rel'")
            qid, _, docid, rel = (int(p) for p in parts)
            qrels.setdefault(qid, []).append((docid, rel))
    return qrels


def questions_in_order(query_ids) -> list:
    """Distinct question ids in order of first appearance (qid k of a .ref file is the k-th of these)."""
    return list(OrderedDict.fromkeys(query_ids))


def filtered_questions(query_ids, labels, ref_path: str | None = None) -> set:
    """The questions the standard protocol evaluates.

    With ``ref_path`` (a ``*-filtered.ref`` file): its qids, mapped to question ids; every listed question's candidate
    count and labels are checked against the split. Without: the questions with both a correct and an incorrect
    candidate (the rule the filtered files follow).
    """
    groups: OrderedDict = OrderedDict()
    for query_id, label in zip(query_ids, labels):
        groups.setdefault(query_id, []).append(int(label))
    if ref_path is None:
        return {q for q, rels in groups.items() if 0 < sum(rels) < len(rels)}
    order = list(groups)
    keep = set()
    for qid, candidates in read_ref(ref_path).items():
        if not 1 <= qid <= len(order):
            raise ValueError(f"{ref_path}: question {qid} is outside the split's {len(order)} questions")
        query_id = order[qid - 1]
        rels = [rel for _, rel in sorted(candidates)]
        if rels != groups[query_id]:
            raise ValueError(f"{ref_path}: the qrels of question {qid} ({query_id}) do not match the split's labels")
        keep.add(query_id)
    return keep


def ranking_metrics(scores, labels, query_ids, keep: set | None = None) -> dict:
    """MAP, MRR and the number of evaluated questions; ``keep``: evaluate only these questions."""
    from .metrics import compute_metrics

    scores, labels = np.asarray(scores, dtype=np.float64).reshape(-1), np.asarray(labels).reshape(-1)
    query_ids = [str(q) for q in query_ids]
    if keep is not None:
        rows = [i for i, q in enumerate(query_ids) if q in keep]
        scores, labels, query_ids = scores[rows], labels[rows], [query_ids[i] for i in rows]
    return compute_metrics(["map", "mrr"], predictions=scores.tolist(), references=labels.astype(int).tolist(),
                           query_ids=query_ids)


def eval_order(trainer, dataset) -> np.ndarray | None:
    """Dataset row of every prediction ``trainer.predict(dataset)`` returns (None: dataset order).

    The Trainer builds a fresh, seeded sampler for every evaluation (``_get_eval_sampler``), so this order is the
    order of the next prediction run."""
    sampler = trainer._get_eval_sampler(dataset)
    if sampler is None:
        return None
    order = np.fromiter(iter(sampler), dtype=np.int64)
    return None if np.array_equal(order, np.arange(len(dataset))) else order


def to_dataset_order(values: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    if order is None:
        return values
    if len(order) != len(values):
        raise RuntimeError(f"got {len(values)} predictions for {len(order)} sampled rows")
    out = np.empty_like(values)
    out[order] = values
    return out


def scores_of(predictions) -> np.ndarray:
    """The relevance score of each candidate: the single logit (sigmoid is monotone; logits do not saturate)."""
    logits = predictions[0] if isinstance(predictions, tuple) else predictions
    logits = np.asarray(logits)
    return logits.reshape(len(logits), -1)[:, -1]


def predict_scores(trainer, dataset) -> tuple[np.ndarray, dict]:
    """``trainer.predict`` scores in dataset order, and its metrics (loss, runtime)."""
    output = trainer.predict(dataset)
    return to_dataset_order(scores_of(output.predictions), eval_order(trainer, dataset)), output.metrics


class RankingEvaluator:
    """MAP/MRR for a ranking task inside :func:`modeling_disan.training.train`.

    ``splits``: the raw splits (with ``query_id``); ``encoded``: the tokenized splits the Trainer sees (same rows);
    ``data_dir``: where ``wikiqa/*-filtered.ref`` live (without them the filter rule is applied directly).
    """

    def __init__(self, splits, encoded, data_dir: str | None = None):
        self.encoded = encoded
        self.query_ids, self.labels, self.keep = {}, {}, {}
        for name, split in splits.items():
            if "query_id" not in split.column_names:
                raise ValueError(f"ranking split {name!r} has no query_id column")
            self.query_ids[name] = [str(q) for q in split["query_id"]]
            self.labels[name] = np.asarray(split["label"], dtype=np.int64)
            ref = os.path.join(data_dir, FILTERED_REFS[name]) if data_dir and name in FILTERED_REFS else None
            ref = ref if ref and os.path.exists(ref) else None
            self.keep[name] = filtered_questions(self.query_ids[name], self.labels[name], ref)
            rule = filtered_questions(self.query_ids[name], self.labels[name])
            if self.keep[name] != rule:
                logger.warning("%s: the filtered qrels list %d questions, the filter rule %d", name,
                               len(self.keep[name]), len(rule))
        self.trainer = None

    def attach(self, trainer) -> None:
        self.trainer = trainer

    def metrics(self, split: str, scores: np.ndarray, prefix: str | None = None) -> dict:
        """Filtered (standard) MAP/MRR under ``map``/``mrr``, unfiltered under ``map_unfiltered``/``mrr_unfiltered``."""
        ids, labels = self.query_ids[split], self.labels[split]
        filtered = ranking_metrics(scores, labels, ids, keep=self.keep[split])
        everything = ranking_metrics(scores, labels, ids)
        out = {"map": filtered["map"], "mrr": filtered["mrr"], "num_queries": filtered["num_queries"],
               "map_unfiltered": everything["map"], "mrr_unfiltered": everything["mrr"],
               "num_queries_unfiltered": everything["num_queries"]}
        return {f"{prefix}_{k}": v for k, v in out.items()} if prefix else out

    def compute_metrics(self, split: str = "validation"):
        """``compute_metrics`` for the Trainer's evaluation of ``split`` during training (model selection)."""

        def compute(eval_pred) -> dict:
            order = eval_order(self.trainer, self.encoded[split]) if self.trainer is not None else None
            labels = to_dataset_order(np.asarray(eval_pred.label_ids).reshape(-1), order)
            if not np.array_equal(labels.astype(np.int64), self.labels[split]):
                raise RuntimeError(f"ranking: predictions for {split!r} could not be aligned with its questions")
            return self.metrics(split, to_dataset_order(scores_of(eval_pred.predictions), order))

        return compute

    def evaluate(self, split: str) -> dict:
        """Final evaluation of ``split``: ``trainer.predict`` (scores put back in dataset order) + MAP/MRR."""
        trainer, compute = self.trainer, self.trainer.compute_metrics
        trainer.compute_metrics = None  # the training-time closure is bound to the validation rows
        try:
            scores, predict_metrics = predict_scores(trainer, self.encoded[split])
        finally:
            trainer.compute_metrics = compute
        results = {f"{split}_{k.split('_', 1)[1]}": v for k, v in predict_metrics.items()}
        results.update(self.metrics(split, scores, prefix=split))
        return results


__all__ = ["read_ref", "filtered_questions", "ranking_metrics", "eval_order", "predict_scores", "RankingEvaluator",
           "FILTERED_REFS"]
