"""Tests of modeling_disan.cross_validation.stratified_kfold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from modeling_disan.cross_validation import stratified_kfold

REPO_ROOT = Path(__file__).resolve().parents[1]
CV_FILE = REPO_ROOT / "modeling_disan" / "cross_validation.py"


def _random_labels(n: int, n_classes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # skewed class distribution, every class present
    weights = rng.dirichlet(np.ones(n_classes))
    labels = rng.choice(n_classes, size=n, p=weights)
    labels[:n_classes] = np.arange(n_classes)
    return labels


CASES = [
    # (labels, n_folds)
    (_random_labels(1000, 2, seed=1), 10),  # MR/CR/SUBJ/MPQA-like binary task
    (_random_labels(537, 5, seed=2), 10),
    (_random_labels(103, 7, seed=3), 4),
    (np.array(["pos"] * 9 + ["neg"] * 3 + ["neu"]), 5),  # string labels, a class rarer than n_folds
    (np.zeros(11, dtype=int), 11),  # one class, leave-one-out
    (np.arange(6), 3),  # every example its own class
]


@pytest.mark.parametrize("labels,n_folds", CASES)
def test_folds_are_disjoint_and_cover_every_index_once(labels, n_folds):
    folds = stratified_kfold(labels, n_folds=n_folds, seed=0)
    n = len(labels)
    assert len(folds) == n_folds
    all_test = np.concatenate([test for _, test in folds])
    assert sorted(all_test.tolist()) == list(range(n))  # each index in exactly one test fold
    for train, test in folds:
        assert isinstance(train, np.ndarray) and isinstance(test, np.ndarray)
        assert np.issubdtype(train.dtype, np.integer) and np.issubdtype(test.dtype, np.integer)
        assert len(test) > 0
        assert not set(train.tolist()) & set(test.tolist())  # disjoint
        assert sorted(train.tolist() + test.tolist()) == list(range(n))  # train ∪ test = everything
        assert len(set(test.tolist())) == len(test) and len(set(train.tolist())) == len(train)


@pytest.mark.parametrize("labels,n_folds", CASES)
def test_folds_are_stratified_within_one_example_per_class(labels, n_folds):
    folds = stratified_kfold(labels, n_folds=n_folds, seed=5)
    totals = Counter(labels.tolist())
    sizes = [len(test) for _, test in folds]
    assert max(sizes) - min(sizes) <= 1
    for _, test in folds:
        counts = Counter(labels[test].tolist())
        for label, total in totals.items():
            # the fold's count of the class is within one example of the class's share (total / n_folds)
            count = counts.get(label, 0)
            assert abs(count - total / n_folds) < 1, (label, counts, totals)
            assert count in (total // n_folds, -(-total // n_folds))


def test_same_seed_gives_identical_folds_across_calls():
    labels = _random_labels(300, 3, seed=7)
    a = stratified_kfold(labels, n_folds=10, seed=42)
    b = stratified_kfold(list(labels), n_folds=10, seed=42)
    assert len(a) == len(b)
    for (train_a, test_a), (train_b, test_b) in zip(a, b):
        np.testing.assert_array_equal(train_a, train_b)
        np.testing.assert_array_equal(test_a, test_b)


def test_same_seed_gives_identical_folds_across_processes():
    labels = _random_labels(200, 4, seed=8)
    # load the module by path: the package __init__ imports transformers, which would only cost time here
    code = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('cv', {str(CV_FILE)!r})\n"
        "cv = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(cv)\n"
        "stratified_kfold = cv.stratified_kfold\n"
        "labels = json.loads(sys.stdin.read())\n"
        "folds = stratified_kfold(labels, n_folds=7, seed=123)\n"
        "print(json.dumps([test.tolist() for _, test in folds]))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="random")  # hash randomisation must not matter
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(labels.tolist()),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO_ROOT),
        timeout=60,
        check=True,
    )
    other_process = json.loads(out.stdout)
    here = [test.tolist() for _, test in stratified_kfold(labels, n_folds=7, seed=123)]
    assert other_process == here


def test_different_seeds_give_different_folds():
    labels = _random_labels(300, 3, seed=9)
    reference = [test.tolist() for _, test in stratified_kfold(labels, n_folds=10, seed=0)]
    for seed in (1, 2, 3):
        other = [test.tolist() for _, test in stratified_kfold(labels, n_folds=10, seed=seed)]
        assert other != reference
        # still a valid stratified partition
        assert sorted(sum(other, [])) == list(range(len(labels)))


def test_folds_are_shuffled_not_contiguous():
    labels = np.zeros(100, dtype=int)
    folds = stratified_kfold(labels, n_folds=10, seed=0)
    contiguous = [list(range(10 * f, 10 * f + 10)) for f in range(10)]
    assert [test.tolist() for _, test in folds] != contiguous


@pytest.mark.parametrize(
    "labels,n_folds,seed,match",
    [
        ([0, 1, 0, 1], 1, 0, "at least 2"),
        ([0, 1, 0, 1], 0, 0, "at least 2"),
        ([0, 1, 0, 1], -3, 0, "at least 2"),
        ([0, 1, 0], 4, 0, "larger than the number of examples"),
        ([], 2, 0, "empty"),
        (np.array([], dtype=int), 10, 0, "empty"),
        ([[0, 1], [1, 0]], 2, 0, "1-D"),
        ([0, 1, 0, 1], 2.5, 0, "n_folds must be an integer"),
        ([0, 1, 0, 1], True, 0, "n_folds must be an integer"),
        ([0, 1, 0, 1], 2, -1, "non-negative"),
        ([0, 1, 0, 1], 2, "0", "seed must be an integer"),
    ],
)
def test_invalid_inputs_raise_value_error(labels, n_folds, seed, match):
    with pytest.raises(ValueError, match=match):
        stratified_kfold(labels, n_folds=n_folds, seed=seed)


def test_defaults_are_ten_folds_seed_zero():
    labels = _random_labels(50, 2, seed=10)
    default = stratified_kfold(labels)
    explicit = stratified_kfold(labels, n_folds=10, seed=0)
    assert len(default) == 10
    for (train_a, test_a), (train_b, test_b) in zip(default, explicit):
        np.testing.assert_array_equal(train_a, train_b)
        np.testing.assert_array_equal(test_a, test_b)
