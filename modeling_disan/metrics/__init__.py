"""Evaluation metrics shipped with the package as `evaluate` modules and loaded by path (no Hub access).

Each metric lives in ``metrics/<name>/<name>.py`` (a self-contained ``evaluate.Metric`` written with numpy/scipy
only) and is loaded with ``evaluate.load(<absolute path of that file>)``, so it works with no network:

    >>> from modeling_disan.metrics import load_metric, compute_metrics
    >>> load_metric("accuracy").compute(predictions=[0, 1, 1], references=[0, 1, 0])
    {'accuracy': 0.6666666666666666}
    >>> compute_metrics(["mse", "spearman"], predictions=[0.5, 2.5, 2.0], references=[1.0, 3.0, 2.0])
    {'mse': 0.16666666666666666, 'spearman': 1.0}

==========  =====================================  =================================================
name        inputs                                 result keys
==========  =====================================  =================================================
accuracy    predictions int, references int        accuracy
f1_macro    predictions int, references int        f1 (macro over labels in references ∪ predictions)
pearson     predictions float, references float    pearson
spearman    predictions float, references float    spearman
mse         predictions float, references float    mse
map         predictions float (score),             map, num_queries
            references int 0/1, query_ids str      (compute kwarg ``drop_all_positive=False``)
mrr         same as map                            mrr, num_queries
==========  =====================================  =================================================

`evaluate.load` copies a module into its dynamic-modules cache (``$HF_MODULES_CACHE``, default
``$HF_HOME/modules``) and, unless ``keep_in_memory=True``, writes the predictions to an Arrow file under
``$HF_HOME/metrics`` (or ``cache_dir``) while computing. Both directories are read from the environment when
`evaluate` is first imported. This file imports `evaluate` only when a metric is loaded, and it imports nothing
else from `modeling_disan`: the metric directories are shipped as package data.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # pragma: no cover
    import evaluate

__all__ = ["METRIC_NAMES", "METRICS_DIR", "compute_metrics", "load_metric", "metric_path"]

METRIC_NAMES: tuple[str, ...] = ("accuracy", "f1_macro", "pearson", "spearman", "mse", "map", "mrr")
METRICS_DIR: Path = Path(__file__).resolve().parent


def metric_path(name: str) -> str:
    """Absolute path of the `evaluate` module file of metric `name` (one of :data:`METRIC_NAMES`)."""
    if not isinstance(name, str) or name not in METRIC_NAMES:
        raise ValueError(f"Unknown metric {name!r}; available metrics: {', '.join(METRIC_NAMES)}")
    path = METRICS_DIR / name / f"{name}.py"
    if not path.is_file():  # the package was installed without its data files
        raise FileNotFoundError(f"metric module file for {name!r} is missing: {path}")
    return str(path)


def load_metric(name: str, **load_kwargs: Any) -> "evaluate.EvaluationModule":
    """Load the shipped metric `name` with ``evaluate.load(<absolute path>)``; no network is used.

    Args:
        name: one of :data:`METRIC_NAMES`.
        **load_kwargs: forwarded to :func:`evaluate.load` (e.g. ``keep_in_memory=True``, ``cache_dir``,
            ``experiment_id``, ``process_id``/``num_process`` for distributed evaluation).

    Raises:
        ValueError: if `name` is not a shipped metric (the message lists the available ones).
    """
    path = metric_path(name)
    import evaluate  # imported lazily: `import evaluate` pulls in transformers and takes seconds

    return evaluate.load(path, **load_kwargs)


def _input_names(metric: "evaluate.EvaluationModule") -> set[str]:
    features = metric.features
    if isinstance(features, (list, tuple)):
        features = features[0]
    return set(features)


def _compute_kwarg_names(metric: "evaluate.EvaluationModule") -> set[str] | None:
    """Names of the extra keyword arguments `metric._compute` accepts (None: it takes **kwargs)."""
    parameters = inspect.signature(metric._compute).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compute_metrics(names: str | Iterable[str], predictions: Any, references: Any, **kwargs: Any) -> dict[str, Any]:
    """Load the metrics `names` and compute them all on the same inputs; return the merged result dict.

    Every keyword argument is passed to each metric that accepts it, as an input (e.g. ``query_ids`` for
    ``map``/``mrr``) or as a compute option (e.g. ``drop_all_positive``); a keyword that none of the requested
    metrics accepts raises ``ValueError``. Metrics are loaded with ``keep_in_memory=True`` (no Arrow cache files).
    Repeated names are computed once. A result key produced by several metrics (``num_queries`` of ``map`` and
    ``mrr``) must have the same value in each.

    Example (WikiQA, filtered protocol)::

        compute_metrics(["map", "mrr"], scores, labels, query_ids=question_ids, drop_all_positive=True)
        # -> {"map": ..., "num_queries": ..., "mrr": ...}
    """
    if isinstance(names, str):
        names = [names]
    names = list(dict.fromkeys(names))
    if not names:
        raise ValueError(f"no metric names given; available metrics: {', '.join(METRIC_NAMES)}")
    for name in names:
        metric_path(name)  # validate every name before loading anything

    metrics = {name: load_metric(name, keep_in_memory=True) for name in names}
    routed: dict[str, dict[str, Any]] = {}
    for name, metric in metrics.items():
        accepted = _compute_kwarg_names(metric)
        inputs = _input_names(metric)
        routed[name] = {
            key: value for key, value in kwargs.items() if key in inputs or accepted is None or key in accepted
        }
    unused = sorted(set(kwargs).difference(*(set(r) for r in routed.values())))
    if unused:
        raise ValueError(f"keyword arguments {unused} are not accepted by any of the metrics {names}")

    results: dict[str, Any] = {}
    for name, metric in metrics.items():
        output = metric.compute(predictions=predictions, references=references, **routed[name])
        for key, value in output.items():
            if key in results and not _same_value(results[key], value):
                raise ValueError(
                    f"metrics disagree on result {key!r}: {results[key]!r} vs {value!r} (from {name!r})"
                )
            results[key] = value
    return results
