# Copyright the modeling_disan authors. Licensed under the Apache License, Version 2.0.
"""Macro-averaged F1 over the labels present in references or predictions.

Self-contained `evaluate` module (numpy only). It is shipped inside the package and loaded by
path with ``modeling_disan.metrics.load_metric("f1_macro")``, so no Hub access is needed.
"""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
Macro F1 is the unweighted mean, over a label set, of the per-label F1 scores
    precision_c = TP_c / (TP_c + FP_c),  recall_c = TP_c / (TP_c + FN_c),
    F1_c = 2 * precision_c * recall_c / (precision_c + recall_c).
The label set is the union of the labels occurring in `references` and in `predictions` (the default of
scikit-learn's `f1_score(average="macro")`). A ratio whose denominator is zero counts as 0, so a label that is
predicted but never occurs in the references (or the reverse) contributes F1 = 0.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int`): predicted class ids.
    references (`list` of `int`): gold class ids, same length as `predictions`.

Returns:
    f1 (`float`): macro-averaged F1, in [0, 1].

Raises:
    ValueError: if there are no predictions or the two inputs differ in length.

Examples:
    >>> from modeling_disan.metrics import load_metric
    >>> f1 = load_metric("f1_macro")
    >>> round(f1.compute(predictions=[0, 1, 1, 2], references=[0, 1, 2, 2])["f1"], 4)
    0.7778
"""

_CITATION = r"""
@article{sokolova2009systematic,
  title   = {A systematic analysis of performance measures for classification tasks},
  author  = {Sokolova, Marina and Lapalme, Guy},
  journal = {Information Processing \& Management},
  volume  = {45},
  number  = {4},
  pages   = {427--437},
  year    = {2009}
}
"""


def _safe_divide(numerator, denominator):
    out = np.zeros(np.shape(numerator), dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class F1Macro(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("int64"),
                    "references": datasets.Value("int64"),
                }
            ),
            # no format="numpy": datasets' numpy formatter would hand float columns over as float32
        )

    def _compute(self, predictions, references):
        predictions = np.asarray(predictions, dtype=np.int64).reshape(-1)
        references = np.asarray(references, dtype=np.int64).reshape(-1)
        if predictions.shape != references.shape:
            raise ValueError(
                f"predictions and references differ in length: {predictions.size} vs {references.size}"
            )
        if predictions.size == 0:
            raise ValueError("macro F1 is undefined for an empty set of predictions")
        labels = np.union1d(references, predictions)
        pred_idx = np.searchsorted(labels, predictions)
        ref_idx = np.searchsorted(labels, references)
        n_labels = labels.size
        true_pos = np.bincount(ref_idx[predictions == references], minlength=n_labels).astype(np.float64)
        pred_count = np.bincount(pred_idx, minlength=n_labels).astype(np.float64)
        ref_count = np.bincount(ref_idx, minlength=n_labels).astype(np.float64)
        precision = _safe_divide(true_pos, pred_count)
        recall = _safe_divide(true_pos, ref_count)
        f1 = _safe_divide(2.0 * precision * recall, precision + recall)
        return {"f1": float(np.mean(f1))}
