# Copyright the modeling_disan authors. Licensed under the Apache License, Version 2.0.
"""Mean average precision (MAP) for answer selection (WikiQA, TrecQA), scored like trec_eval.

Self-contained `evaluate` module (numpy only). It is shipped inside the package and loaded by
path with ``modeling_disan.metrics.load_metric("map")``, so no Hub access is needed.
The sibling module ``mrr/mrr.py`` uses the same grouping, ranking and exclusion rules.
"""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
Mean average precision of answer selection. Every input row is one candidate answer with a predicted score, a
0/1 relevance label and the id of the question (query) it belongs to. Within each query the candidates are ranked
by descending score; ties are broken deterministically by original input order (the candidate that comes first in
the inputs, across all `add_batch` calls, is ranked higher). Note that trec_eval breaks ties by document id
instead, so with tied scores the two can differ.

    precision@k    = (relevant candidates among the top k) / k
    AP(query)      = mean of precision@rank(c) over the relevant candidates c of the query
    MAP            = mean of AP over the evaluated queries

Queries without any relevant candidate are left out of the mean, as trec_eval leaves out queries that have no
qrels entry with relevance > 0. With `drop_all_positive=True`, queries whose candidates are all relevant are
left out as well; together these give the "filtered" WikiQA protocol (Yang et al., 2015), which evaluates only
questions that have both correct and incorrect candidates. Queries need not be contiguous in the inputs.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): score of each candidate, higher = more likely correct. NaN is rejected.
    references (`list` of `int`): relevance of each candidate, 0 or 1.
    query_ids (`list` of `str`): id of the question each candidate belongs to.
    drop_all_positive (`bool`, defaults to `False`): also leave out queries whose candidates are all relevant.

Returns:
    map (`float`): mean average precision over the evaluated queries, in [0, 1]; NaN if no query is evaluated.
    num_queries (`int`): number of queries evaluated (i.e. that entered the mean).

Raises:
    ValueError: if the inputs differ in length, a reference is not 0/1 or a score is NaN.

Examples:
    >>> from modeling_disan.metrics import load_metric
    >>> map_metric = load_metric("map")
    >>> map_metric.compute(
    ...     predictions=[0.9, 0.8, 0.7, 0.2, 0.6],
    ...     references=[0, 1, 1, 1, 0],
    ...     query_ids=["q1", "q1", "q1", "q2", "q2"],
    ... )
    {'map': 0.5416666666666666, 'num_queries': 2}

    (q1: relevant at ranks 2 and 3, AP = (1/2 + 2/3) / 2 = 7/12; q2: relevant at rank 2, AP = 1/2.)
"""

_CITATION = r"""
@inproceedings{yang2015wikiqa,
  title     = {{WikiQA}: A Challenge Dataset for Open-Domain Question Answering},
  author    = {Yang, Yi and Yih, Wen-tau and Meek, Christopher},
  booktitle = {Proceedings of the 2015 Conference on Empirical Methods in Natural Language Processing},
  pages     = {2013--2018},
  year      = {2015}
}
@misc{trec_eval,
  title  = {trec\_eval: the standard tool used by the TREC community for evaluating ad hoc retrieval runs},
  author = {{NIST}},
  url    = {https://github.com/usnistgov/trec_eval}
}
"""


def _relevant_ranks_per_query(predictions, references, query_ids, drop_all_positive):
    """1-based ranks of the relevant candidates of every evaluated query, in query first-appearance order."""
    scores = np.asarray(predictions, dtype=np.float64).reshape(-1)
    relevance = np.asarray(references).reshape(-1)
    query_ids = np.asarray(query_ids, dtype=object).reshape(-1)
    if not (scores.size == relevance.size == query_ids.size):
        raise ValueError(
            "predictions, references and query_ids differ in length: "
            f"{scores.size}, {relevance.size}, {query_ids.size}"
        )
    if np.isnan(scores).any():
        raise ValueError("predictions contain NaN scores; candidates with NaN scores cannot be ranked")
    if relevance.size and not np.isin(relevance, (0, 1)).all():
        bad = sorted(set(relevance[~np.isin(relevance, (0, 1))].tolist()))
        raise ValueError(f"references must be 0 (not relevant) or 1 (relevant), got {bad}")
    relevance = relevance.astype(np.int64)

    groups = {}
    for position, query_id in enumerate(query_ids.tolist()):
        groups.setdefault(query_id, []).append(position)

    ranks = []
    for positions in groups.values():
        positions = np.asarray(positions, dtype=np.int64)  # ascending input order
        # A stable sort on the negated score ranks higher scores first and keeps tied candidates in input order.
        order = np.argsort(-scores[positions], kind="stable")
        ranked_relevance = relevance[positions][order]
        n_relevant = int(ranked_relevance.sum())
        if n_relevant == 0:
            continue
        if drop_all_positive and n_relevant == ranked_relevance.size:
            continue
        ranks.append(np.flatnonzero(ranked_relevance) + 1)
    return ranks


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class MAP(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("float64"),
                    "references": datasets.Value("int64"),
                    "query_ids": datasets.Value("string"),
                }
            ),
            # no format="numpy": datasets' numpy formatter would hand float columns over as float32
        )

    def _compute(self, predictions, references, query_ids, drop_all_positive: bool = False):
        ranks = _relevant_ranks_per_query(predictions, references, query_ids, bool(drop_all_positive))
        if not ranks:
            return {"map": float("nan"), "num_queries": 0}
        average_precisions = [np.mean(np.arange(1, r.size + 1) / r) for r in ranks]
        return {"map": float(np.mean(average_precisions)), "num_queries": len(ranks)}
