# Copyright the modeling_disan authors. Licensed under the Apache License, Version 2.0.
"""Spearman rank correlation coefficient between predicted and gold scores.

Self-contained `evaluate` module (numpy/scipy only). It is shipped inside the package and loaded by
path with ``modeling_disan.metrics.load_metric("spearman")``, so no Hub access is needed.
"""

import datasets
import evaluate
import numpy as np
from scipy import stats

_DESCRIPTION = """\
Spearman's rho is the Pearson correlation of the ranks of the predicted and gold scores (tied values get the
average of the ranks they span), in [-1, 1]. It measures how well the predictions order the examples, e.g. the
relatedness scores of SICK or STS-B. Computed in float64 with `scipy.stats.spearmanr`. If either input is
constant the coefficient is undefined and NaN is returned (scipy emits a ConstantInputWarning).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): predicted scores.
    references (`list` of `float`): gold scores, same length as `predictions`.

Returns:
    spearman (`float`): Spearman rank correlation in [-1, 1] (NaN for constant input).

Raises:
    ValueError: if fewer than 2 pairs are given or the two inputs differ in length.

Examples:
    >>> from modeling_disan.metrics import load_metric
    >>> spearman = load_metric("spearman")
    >>> spearman.compute(predictions=[0.1, 0.4, 0.3], references=[1.0, 3.0, 2.0])
    {'spearman': 1.0}
"""

_CITATION = r"""
@article{spearman1904proof,
  title   = {The proof and measurement of association between two things},
  author  = {Spearman, Charles},
  journal = {The American Journal of Psychology},
  volume  = {15},
  number  = {1},
  pages   = {72--101},
  year    = {1904}
}
@article{virtanen2020scipy,
  title   = {{SciPy} 1.0: Fundamental Algorithms for Scientific Computing in Python},
  author  = {Virtanen, Pauli and Gommers, Ralf and Oliphant, Travis E. and others},
  journal = {Nature Methods},
  volume  = {17},
  pages   = {261--272},
  year    = {2020}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Spearman(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("float64"),
                    "references": datasets.Value("float64"),
                }
            ),
            # no format="numpy": datasets' numpy formatter would hand float columns over as float32
        )

    def _compute(self, predictions, references):
        predictions = np.asarray(predictions, dtype=np.float64).reshape(-1)
        references = np.asarray(references, dtype=np.float64).reshape(-1)
        if predictions.shape != references.shape:
            raise ValueError(
                f"predictions and references differ in length: {predictions.size} vs {references.size}"
            )
        if predictions.size < 2:
            raise ValueError(f"Spearman correlation needs at least 2 pairs, got {predictions.size}")
        result = stats.spearmanr(predictions, references)
        return {"spearman": float(result[0])}
