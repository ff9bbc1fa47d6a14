# Copyright the modeling_disan authors. Licensed under the Apache License, Version 2.0.
"""Pearson correlation coefficient between predicted and gold scores.

Self-contained `evaluate` module (numpy/scipy only). It is shipped inside the package and loaded by
path with ``modeling_disan.metrics.load_metric("pearson")``, so no Hub access is needed.
"""

import datasets
import evaluate
import numpy as np
from scipy import stats

_DESCRIPTION = """\
Pearson's r measures the linear correlation between predicted and gold real-valued scores, e.g. the relatedness
scores of SICK or STS-B:
    r = cov(predictions, references) / (std(predictions) * std(references)),
in [-1, 1]. It is computed in float64 with `scipy.stats.pearsonr`. If either input is constant the coefficient is
undefined and NaN is returned (scipy emits a ConstantInputWarning).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): predicted scores.
    references (`list` of `float`): gold scores, same length as `predictions`.

Returns:
    pearson (`float`): Pearson correlation coefficient in [-1, 1] (NaN for constant input).

Raises:
    ValueError: if fewer than 2 pairs are given or the two inputs differ in length.

Examples:
    >>> from modeling_disan.metrics import load_metric
    >>> pearson = load_metric("pearson")
    >>> round(pearson.compute(predictions=[1.0, 2.0, 3.5], references=[1.0, 2.0, 3.0])["pearson"], 4)
    0.9934
"""

_CITATION = r"""
@article{pearson1895note,
  title   = {Note on regression and inheritance in the case of two parents},
  author  = {Pearson, Karl},
  journal = {Proceedings of the Royal Society of London},
  volume  = {58},
  pages   = {240--242},
  year    = {1895}
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
class Pearson(evaluate.Metric):
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
            raise ValueError(f"Pearson correlation needs at least 2 pairs, got {predictions.size}")
        result = stats.pearsonr(predictions, references)
        return {"pearson": float(result[0])}
