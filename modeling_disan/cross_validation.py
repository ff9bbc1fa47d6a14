"""Stratified k-fold splits for the datasets without an official test split (MR, CR, SUBJ, MPQA: 10-fold CV).

Pure numpy. The folds depend only on the labels, ``n_folds`` and ``seed``, so they are identical across calls,
processes and machines for the same inputs.
"""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["stratified_kfold"]


def _as_int(value, name: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def stratified_kfold(labels, n_folds: int = 10, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split example indices into `n_folds` stratified folds; return ``(train_indices, test_indices)`` per fold.

    Algorithm: the indices of each class (classes in sorted order) are shuffled with
    ``np.random.default_rng(seed)``; the shuffled classes are concatenated and dealt round-robin to the folds,
    the deal carrying on from one class to the next. Hence

    * each index is in exactly one test fold, and the test folds are disjoint;
    * fold f holds either ``floor(n_c / n_folds)`` or ``ceil(n_c / n_folds)`` examples of class c, i.e. its class
      proportions match the whole data set within one example per class (a class with fewer than `n_folds`
      examples is simply absent from some folds);
    * fold sizes differ by at most one;
    * the result is a deterministic function of ``(labels, n_folds, seed)``.

    Args:
        labels: 1-D sequence of class labels (ints, strings, ... anything `np.unique` can sort).
        n_folds: number of folds, at least 2 and at most ``len(labels)``.
        seed: non-negative integer seed of the within-class shuffle.

    Returns:
        A list of `n_folds` pairs ``(train_indices, test_indices)`` of sorted int64 arrays; for every fold the
        two arrays partition ``range(len(labels))``.

    Raises:
        ValueError: for empty or non-1-D labels, ``n_folds < 2``, more folds than examples, or a negative or
            non-integer `n_folds` / `seed`.
    """
    n_folds = _as_int(n_folds, "n_folds")
    seed = _as_int(seed, "seed")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be a 1-D sequence, got an array of shape {labels.shape}")
    n_examples = labels.shape[0]
    if n_examples == 0:
        raise ValueError("labels is empty: there is nothing to split into folds")
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    if n_folds > n_examples:
        raise ValueError(f"n_folds={n_folds} is larger than the number of examples ({n_examples})")

    _, class_of = np.unique(labels, return_inverse=True)
    class_of = class_of.reshape(-1)
    rng = np.random.default_rng(seed)
    dealing_order = np.concatenate(
        [rng.permutation(np.flatnonzero(class_of == c)) for c in range(int(class_of.max()) + 1)]
    )
    fold_of = np.empty(n_examples, dtype=np.int64)
    fold_of[dealing_order] = np.arange(n_examples) % n_folds

    all_indices = np.arange(n_examples, dtype=np.int64)
    folds = []
    for fold in range(n_folds):
        in_test = fold_of == fold
        folds.append((all_indices[~in_test], all_indices[in_test]))
    return folds
