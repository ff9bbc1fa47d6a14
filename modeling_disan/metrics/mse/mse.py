# Copyright the modeling_disan authors. Licensed under the Apache License, Version 2.0.
"""Mean squared error between predicted and gold scores.

Self-contained `evaluate` module (numpy only). It is shipped inside the package and loaded by
path with ``modeling_disan.metrics.load_metric("mse")``, so no Hub access is needed.
"""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = """\
Mean squared error of real-valued predictions, e.g. the 1-5 relatedness scores of SICK:
    MSE = mean((predictions - references) ** 2),
computed in float64. Lower is better; 0 is a perfect fit.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): predicted scores.
    references (`list` of `float`): gold scores, same length as `predictions`.

Returns:
    mse (`float`): mean squared error, >= 0.

Raises:
    ValueError: if there are no predictions or the two inputs differ in length.

Examples:
    >>> from modeling_disan.metrics import load_metric
    >>> mse = load_metric("mse")
    >>> mse.compute(predictions=[1.0, 2.0, 4.0], references=[1.0, 3.0, 2.0])
    {'mse': 1.6666666666666667}
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
class MSE(evaluate.Metric):
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
        if predictions.size == 0:
            raise ValueError("MSE is undefined for an empty set of predictions")
        return {"mse": float(np.mean(np.square(predictions - references)))}
