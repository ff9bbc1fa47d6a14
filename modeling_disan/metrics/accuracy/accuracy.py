# Copyright the modeling_disan authors. Licensed under the Apache License, Version 2.0.
"""Accuracy: the fraction of predictions that equal their reference label.

Self-contained `evaluate` module (numpy only). It is shipped inside the package and loaded by
path with ``modeling_disan.metrics.load_metric("accuracy")``, so no Hub access is needed.
"""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
Accuracy is the proportion of examples whose predicted label equals the reference label:
    accuracy = (number of correct predictions) / (number of predictions)
It is the measure reported for the sentence classification tasks (SST, TREC, MR, CR, SUBJ, MPQA) and for
natural language inference (SNLI, MultiNLI, SICK entailment).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int`): predicted class ids.
    references (`list` of `int`): gold class ids, same length as `predictions`.

Returns:
    accuracy (`float`): fraction of correct predictions, in [0, 1].

Raises:
    ValueError: if there are no predictions or the two inputs differ in length.

Examples:
    >>> from modeling_disan.metrics import load_metric
    >>> accuracy = load_metric("accuracy")
    >>> accuracy.compute(predictions=[0, 1, 2, 1], references=[0, 1, 1, 1])
    {'accuracy': 0.75}
"""

_CITATION = r"""
@article{harris2020array,
  title   = {Array programming with {NumPy}},
  author  = {Harris, Charles R. and Millman, K. Jarrod and van der Walt, St{\'e}fan J. and others},
  journal = {Nature},
  volume  = {585},
  number  = {7825},
  pages   = {357--362},
  year    = {2020}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Accuracy(evaluate.Metric):
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
            raise ValueError("accuracy is undefined for an empty set of predictions")
        return {"accuracy": float(np.mean(predictions == references))}
