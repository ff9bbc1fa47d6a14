"""Tests of the evaluate metric modules shipped in modeling_disan/metrics, loaded by path with no network.

Every value is checked against an independent computation made here: numpy/scipy for accuracy, MSE, Pearson and
Spearman, and brute-force pure-python implementations of macro-F1, AP and RR.
"""

from __future__ import annotations

import ast
import json
import math
import os
import socket
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from modeling_disan.metrics import METRIC_NAMES, METRICS_DIR, compute_metrics, load_metric, metric_path

REPO_ROOT = Path(__file__).resolve().parents[1]
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
RESULT_KEYS = {
    "accuracy": {"accuracy"},
    "f1_macro": {"f1"},
    "pearson": {"pearson"},
    "spearman": {"spearman"},
    "mse": {"mse"},
    "map": {"map", "num_queries"},
    "mrr": {"mrr", "num_queries"},
}


def _refuse_network(*args, **kwargs):
    raise OSError("network access is disabled in this test")


@pytest.fixture(scope="module", autouse=True)
def offline(tmp_path_factory):
    """Offline env vars, a fresh HF_HOME, and sockets that refuse to connect, for every test of this module.

    `evaluate` reads HF_HOME / HF_MODULES_CACHE / HF_EVALUATE_OFFLINE once, when it is first imported, so for
    the already-imported library the offline flag and the metrics cache are patched in `evaluate.config` too.
    The dynamic-modules cache cannot be switched inside a process that has already imported a module from
    another one (`evaluate_modules` stays bound to the first directory); the fresh-cache case is covered in a
    new interpreter by `test_loading_offline_in_a_fresh_process_with_fresh_caches`.
    """
    import evaluate.config

    hf_home = tmp_path_factory.mktemp("hf_home")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in OFFLINE_ENV.items():
            mp.setenv(key, value)
        mp.setenv("HF_HOME", str(hf_home))
        mp.setenv("HF_MODULES_CACHE", str(hf_home / "modules"))
        mp.setattr(evaluate.config, "HF_EVALUATE_OFFLINE", True)
        mp.setattr(evaluate.config, "HF_METRICS_CACHE", hf_home / "metrics")
        mp.setattr(socket.socket, "connect", _refuse_network)
        mp.setattr(socket.socket, "connect_ex", _refuse_network)
        mp.setattr(socket, "create_connection", _refuse_network)
        mp.setattr(socket, "getaddrinfo", _refuse_network)
        yield hf_home


# ----------------------------------------------------------------------------------------- independent references


def brute_macro_f1(predictions, references):
    labels = sorted(set(predictions) | set(references))
    total = 0.0
    for label in labels:
        tp = sum(1 for p, r in zip(predictions, references) if p == label and r == label)
        fp = sum(1 for p, r in zip(predictions, references) if p == label and r != label)
        fn = sum(1 for p, r in zip(predictions, references) if p != label and r == label)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        total += 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return total / len(labels)


def brute_ranking(scores, relevance, query_ids, drop_all_positive=False):
    """(MAP, MRR, number of evaluated queries) by direct enumeration; ties ranked by input position."""
    by_query = {}
    for position, query_id in enumerate(query_ids):
        by_query.setdefault(query_id, []).append(position)
    average_precisions, reciprocal_ranks = [], []
    for positions in by_query.values():
        ranked = sorted(positions, key=lambda i: (-scores[i], i))
        labels = [relevance[i] for i in ranked]
        if sum(labels) == 0:
            continue
        if drop_all_positive and sum(labels) == len(labels):
            continue
        hits, precisions, first = 0, [], None
        for rank, label in enumerate(labels, start=1):
            if label:
                hits += 1
                precisions.append(hits / rank)
                if first is None:
                    first = rank
        average_precisions.append(sum(precisions) / len(precisions))
        reciprocal_ranks.append(1 / first)
    if not average_precisions:
        return math.nan, math.nan, 0
    n = len(average_precisions)
    return sum(average_precisions) / n, sum(reciprocal_ranks) / n, n


def random_ranking_case(seed, n_queries=12, tie_prone=False):
    rng = np.random.default_rng(seed)
    scores, relevance, query_ids = [], [], []
    for q in range(n_queries):
        n_candidates = int(rng.integers(1, 9))
        for _ in range(n_candidates):
            score = float(rng.integers(0, 4)) / 4 if tie_prone else float(rng.normal())
            scores.append(score)
            relevance.append(int(rng.random() < 0.35))
            query_ids.append(f"Q{q}")
    order = rng.permutation(len(scores))  # interleave the queries
    return [scores[i] for i in order], [relevance[i] for i in order], [query_ids[i] for i in order]


def assert_same(actual, expected, tol=1e-12):
    if math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert actual == pytest.approx(expected, rel=tol, abs=tol)


# ------------------------------------------------------------------------------------------------ loading / API


def _imported_top_level_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import in {path}"
            modules.add(node.module.split(".")[0])
    return modules


def test_every_metric_is_a_single_module_file_named_like_its_directory():
    on_disk = sorted(p.name for p in METRICS_DIR.iterdir() if p.is_dir() and not p.name.startswith("__"))
    assert on_disk == sorted(METRIC_NAMES)
    for name in METRIC_NAMES:
        files = sorted(p.name for p in (METRICS_DIR / name).iterdir() if p.suffix == ".py")
        assert files == [f"{name}.py"]
        assert Path(metric_path(name)).is_absolute()
        assert metric_path(name) == str(METRICS_DIR / name / f"{name}.py")
        # shipped as package data: imports only third-party libraries, nothing from modeling_disan
        imported = _imported_top_level_modules(METRICS_DIR / name / f"{name}.py")
        assert imported <= {"datasets", "evaluate", "numpy", "scipy"}
    assert "modeling_disan" not in _imported_top_level_modules(METRICS_DIR / "__init__.py")


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_load_metric_gives_a_documented_evaluate_metric(name):
    import evaluate

    metric = load_metric(name)
    assert isinstance(metric, evaluate.Metric)
    assert metric.name == name
    assert metric.description.strip() and metric.citation.strip() and metric.inputs_description.strip()
    expected_inputs = ["predictions", "references"] + (["query_ids"] if name in ("map", "mrr") else [])
    assert list(metric.features) == expected_inputs


@pytest.mark.parametrize("bad_name", ["bleu", "Accuracy", "f1", "", "../cross_validation", None])
def test_unknown_metric_name_raises_value_error_listing_available_names(bad_name):
    with pytest.raises(ValueError) as excinfo:
        load_metric(bad_name)
    message = str(excinfo.value)
    assert repr(bad_name) in message
    for name in METRIC_NAMES:
        assert name in message


def test_network_is_really_blocked_inside_these_tests():
    with pytest.raises(OSError, match="disabled"):
        socket.create_connection(("huggingface.co", 443), timeout=1)


def test_loading_offline_in_a_fresh_process_with_fresh_caches(tmp_path):
    """A new interpreter with offline env vars, empty HF_HOME/HF_MODULES_CACHE and no sockets loads every metric.

    metrics/__init__.py is loaded by file path, which also shows it needs nothing else from modeling_disan.
    """
    hf_home = tmp_path / "hf_home"
    modules_cache = tmp_path / "modules_cache"
    xdg_cache = tmp_path / "xdg_cache"
    script = textwrap.dedent(
        f"""
        import importlib.util, json, socket, sys

        # evaluate imports transformers.pipelines (and with it torch) only for its Evaluator classes; hiding it
        # keeps this interpreter fast to start and shows that the shipped metrics do not need it
        sys.modules["transformers.pipelines"] = None

        def refuse(*args, **kwargs):
            raise OSError("network access is disabled in this test")

        socket.socket.connect = socket.socket.connect_ex = refuse
        socket.create_connection = socket.getaddrinfo = refuse

        spec = importlib.util.spec_from_file_location("shipped_metrics", {str(METRICS_DIR / "__init__.py")!r})
        metrics = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(metrics)

        import evaluate.config
        cache = {{"modules": str(evaluate.config.HF_MODULES_CACHE), "metrics": str(evaluate.config.HF_METRICS_CACHE)}}
        cls = {{"predictions": [0, 1, 2, 2, 1], "references": [0, 1, 1, 2, 0]}}
        reg = {{"predictions": [0.5, 2.0, 1.0, 4.0], "references": [1.0, 2.5, 0.5, 3.0]}}
        rank = {{"predictions": [0.2, 0.9, 0.4, 0.3, 0.8], "references": [1, 0, 1, 0, 1],
                 "query_ids": ["a", "a", "a", "b", "b"]}}
        results = {{}}
        for name in metrics.METRIC_NAMES:
            inputs = cls if name in ("accuracy", "f1_macro") else rank if name in ("map", "mrr") else reg
            results[name] = metrics.load_metric(name).compute(**inputs)
        results["combined"] = metrics.compute_metrics(["map", "mrr"], **rank)
        print(json.dumps({{"results": results, "cache": cache, "offline": evaluate.config.HF_EVALUATE_OFFLINE}}))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(OFFLINE_ENV)
    env.update(HF_HOME=str(hf_home), HF_MODULES_CACHE=str(modules_cache), XDG_CACHE_HOME=str(xdg_cache))
    env.pop("PYTHONPATH", None)  # nothing from the repository is importable by name in the child
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["offline"] is True
    assert report["cache"] == {"modules": str(modules_cache), "metrics": str(hf_home / "metrics")}

    # the module copies landed in the fresh cache, one per metric
    copied = modules_cache / "evaluate_modules" / "metrics"
    assert sorted(p.name for p in copied.iterdir() if p.is_dir()) == sorted(METRIC_NAMES)
    for name in METRIC_NAMES:
        assert list((copied / name).glob(f"*/{name}.py")), name
    assert not (xdg_cache / "huggingface" / "modules").exists()

    results = report["results"]
    for name in METRIC_NAMES:
        assert set(results[name]) == RESULT_KEYS[name]
    cls_p, cls_r = [0, 1, 2, 2, 1], [0, 1, 1, 2, 0]
    reg_p, reg_r = np.array([0.5, 2.0, 1.0, 4.0]), np.array([1.0, 2.5, 0.5, 3.0])
    assert_same(results["accuracy"]["accuracy"], sum(p == r for p, r in zip(cls_p, cls_r)) / len(cls_p))
    assert_same(results["f1_macro"]["f1"], brute_macro_f1(cls_p, cls_r))
    assert_same(results["pearson"]["pearson"], np.corrcoef(reg_p, reg_r)[0, 1])
    assert_same(results["spearman"]["spearman"], np.corrcoef(stats.rankdata(reg_p), stats.rankdata(reg_r))[0, 1])
    assert_same(results["mse"]["mse"], float(np.mean((reg_p - reg_r) ** 2)))
    expected_map, expected_mrr, n = brute_ranking(
        [0.2, 0.9, 0.4, 0.3, 0.8], [1, 0, 1, 0, 1], ["a", "a", "a", "b", "b"]
    )
    assert results["map"] == pytest.approx({"map": expected_map, "num_queries": n})
    assert results["mrr"] == pytest.approx({"mrr": expected_mrr, "num_queries": n})
    assert results["combined"] == pytest.approx({"map": expected_map, "mrr": expected_mrr, "num_queries": n})


# ---------------------------------------------------------------------------------------- classification metrics


@pytest.mark.parametrize("seed", range(5))
def test_accuracy_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    references = rng.integers(0, 4, size=n)
    predictions = np.where(rng.random(n) < 0.6, references, rng.integers(0, 4, size=n))
    result = load_metric("accuracy").compute(predictions=predictions.tolist(), references=references.tolist())
    assert set(result) == {"accuracy"}
    assert_same(result["accuracy"], float(np.count_nonzero(predictions == references)) / n)


def test_accuracy_accepts_numpy_arrays_and_rejects_empty_input():
    metric = load_metric("accuracy")
    result = metric.compute(predictions=np.array([1, 0, 1]), references=np.array([1, 1, 1]))
    assert_same(result["accuracy"], 2 / 3)
    with pytest.raises(ValueError):
        metric.compute(predictions=[], references=[])


@pytest.mark.parametrize("seed", range(8))
def test_macro_f1_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 40))
    n_labels = int(rng.integers(1, 6))
    references = rng.integers(0, n_labels, size=n).tolist()
    # predictions may use labels never seen in the references, and vice versa
    predictions = [r if rng.random() < 0.5 else int(rng.integers(0, n_labels + 2)) for r in references]
    result = load_metric("f1_macro").compute(predictions=predictions, references=references)
    assert set(result) == {"f1"}
    assert_same(result["f1"], brute_macro_f1(predictions, references))


def test_macro_f1_hand_built_cases():
    metric = load_metric("f1_macro")
    # perfect predictions: every per-label F1 is 1
    assert_same(metric.compute(predictions=[2, 0, 1, 2], references=[2, 0, 1, 2])["f1"], 1.0)
    # label 3 only predicted (F1 0) and label 1 only in references (F1 0); label 0: P = 1/2, R = 1, F1 = 2/3
    predictions, references = [0, 0, 3], [0, 1, 1]
    assert_same(metric.compute(predictions=predictions, references=references)["f1"], (2 / 3 + 0 + 0) / 3)
    result = metric.compute(predictions=predictions, references=references)["f1"]
    assert_same(result, brute_macro_f1(predictions, references))


# -------------------------------------------------------------------------------------------- regression metrics


@pytest.mark.parametrize("seed", range(5))
def test_pearson_spearman_mse_match_numpy_scipy(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(3, 80))
    references = rng.uniform(1, 5, size=n)
    predictions = references + rng.normal(scale=1.0, size=n)
    if seed % 2:  # many ties, as with SICK's coarse relatedness scores
        references, predictions = np.round(references), np.round(predictions * 2) / 2
    kwargs = {"predictions": predictions.tolist(), "references": references.tolist()}
    pearson = load_metric("pearson").compute(**kwargs)
    spearman = load_metric("spearman").compute(**kwargs)
    mse = load_metric("mse").compute(**kwargs)
    assert set(pearson) == {"pearson"} and set(spearman) == {"spearman"} and set(mse) == {"mse"}
    assert_same(pearson["pearson"], np.corrcoef(predictions, references)[0, 1], tol=1e-10)
    rank_corr = np.corrcoef(stats.rankdata(predictions), stats.rankdata(references))[0, 1]
    assert_same(spearman["spearman"], rank_corr, tol=1e-10)
    assert_same(mse["mse"], sum((p - r) ** 2 for p, r in zip(predictions, references)) / n, tol=1e-10)


def test_regression_metrics_keep_float64_precision():
    references = [1.0, 1.0 + 1e-9, 1.0 + 3e-9]
    predictions = [2.0, 2.0 + 2e-9, 2.0 + 3e-9]
    expected = np.corrcoef(np.array(predictions) - 2.0, np.array(references) - 1.0)[0, 1]
    kwargs = {"predictions": predictions, "references": references}
    assert_same(load_metric("pearson").compute(**kwargs)["pearson"], expected, 1e-6)  # float32 would give NaN
    assert_same(load_metric("spearman").compute(**kwargs)["spearman"], 1.0)


def test_correlations_of_constant_input_are_nan_and_too_few_pairs_raise():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        constant = {"predictions": [1.0, 1.0, 1.0], "references": [1.0, 2.0, 3.0]}
        assert math.isnan(load_metric("pearson").compute(**constant)["pearson"])
        assert math.isnan(load_metric("spearman").compute(**constant)["spearman"])
    for name in ("pearson", "spearman"):
        with pytest.raises(ValueError):
            load_metric(name).compute(predictions=[1.0], references=[2.0])


# ----------------------------------------------------------------------------------------------- ranking metrics


@pytest.mark.parametrize("tie_prone", [False, True])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("drop_all_positive", [False, True])
def test_map_mrr_match_brute_force_on_random_cases(seed, tie_prone, drop_all_positive):
    scores, relevance, query_ids = random_ranking_case(300 + seed, tie_prone=tie_prone)
    expected_map, expected_mrr, n = brute_ranking(scores, relevance, query_ids, drop_all_positive)
    kwargs = dict(predictions=scores, references=relevance, query_ids=query_ids, drop_all_positive=drop_all_positive)
    map_result = load_metric("map").compute(**kwargs)
    mrr_result = load_metric("mrr").compute(**kwargs)
    assert set(map_result) == {"map", "num_queries"} and set(mrr_result) == {"mrr", "num_queries"}
    assert map_result["num_queries"] == mrr_result["num_queries"] == n
    assert_same(map_result["map"], expected_map)
    assert_same(mrr_result["mrr"], expected_mrr)


def test_map_mrr_hand_built_case_excludes_query_without_positives():
    # A: ranked 0.9(-) 0.5(+) 0.3(-) 0.1(+): relevant at ranks 2 and 4 -> AP = (1/2 + 2/4) / 2, RR = 1/2
    # B: ranked 0.8(+) 0.2(-): relevant at rank 1 -> AP = 1, RR = 1
    # C: no relevant candidate -> excluded from both means
    rows = [
        ("A", 0.1, 1), ("B", 0.2, 0), ("A", 0.9, 0), ("C", 0.7, 0),
        ("A", 0.5, 1), ("B", 0.8, 1), ("C", 0.6, 0), ("A", 0.3, 0),
    ]
    query_ids, scores, relevance = (list(column) for column in zip(*rows))
    kwargs = dict(predictions=scores, references=relevance, query_ids=query_ids)
    ap_a, rr_a = (1 / 2 + 2 / 4) / 2, 1 / 2
    ap_b, rr_b = 1.0, 1.0
    assert load_metric("map").compute(**kwargs) == pytest.approx({"map": (ap_a + ap_b) / 2, "num_queries": 2})
    assert load_metric("mrr").compute(**kwargs) == pytest.approx({"mrr": (rr_a + rr_b) / 2, "num_queries": 2})
    expected_map, expected_mrr, n = brute_ranking(scores, relevance, query_ids)
    assert (expected_map, expected_mrr, n) == pytest.approx(((ap_a + ap_b) / 2, (rr_a + rr_b) / 2, 2))

    # dropping C changes nothing; a query without positives adds nothing to the mean
    kept = [i for i, q in enumerate(query_ids) if q != "C"]
    without_c = {k: [v[i] for i in kept] for k, v in kwargs.items()}
    assert load_metric("map").compute(**without_c) == load_metric("map").compute(**kwargs)
    assert load_metric("mrr").compute(**without_c) == load_metric("mrr").compute(**kwargs)


def test_ties_are_broken_by_original_input_order():
    # all scores equal: the ranking is the input order
    kwargs = dict(predictions=[0.5, 0.5, 0.5], references=[0, 0, 1], query_ids=["q", "q", "q"])
    assert_same(load_metric("mrr").compute(**kwargs)["mrr"], 1 / 3)  # relevant at rank 3
    assert_same(load_metric("map").compute(**kwargs)["map"], 1 / 3)  # precision@3 = 1/3
    reversed_kwargs = {k: v[::-1] for k, v in kwargs.items()}
    assert_same(load_metric("mrr").compute(**reversed_kwargs)["mrr"], 1.0)
    assert_same(load_metric("map").compute(**reversed_kwargs)["map"], 1.0)
    # other queries interleaved in between do not change the order within a query
    interleaved = dict(
        predictions=[0.5, 0.9, 0.5, 0.1, 0.5],
        references=[0, 1, 0, 0, 1],
        query_ids=["q", "x", "q", "x", "q"],
    )
    result = load_metric("mrr").compute(**interleaved)
    assert result == pytest.approx({"mrr": (1 / 3 + 1.0) / 2, "num_queries": 2})
    # a tie with a higher-scored relevant candidate: 0.7(+) first, then the 0.4 ties in input order
    partial = dict(predictions=[0.4, 0.7, 0.4], references=[0, 1, 1], query_ids=["q"] * 3)
    assert_same(load_metric("map").compute(**partial)["map"], (1 / 1 + 2 / 3) / 2)


def test_scores_are_ranked_in_float64():
    # these two scores are equal in float32; in float64 the relevant one is ranked first
    kwargs = dict(predictions=[0.1, 0.1 + 1e-12], references=[0, 1], query_ids=["q", "q"])
    assert np.float32(kwargs["predictions"][0]) == np.float32(kwargs["predictions"][1])
    assert_same(load_metric("mrr").compute(**kwargs)["mrr"], 1.0)


def test_drop_all_positive_excludes_queries_whose_candidates_are_all_relevant():
    kwargs = dict(
        predictions=[0.3, 0.1, 0.9, 0.2, 0.5, 0.4],
        references=[1, 1, 0, 1, 0, 0],
        query_ids=["all_pos", "all_pos", "mixed", "mixed", "no_pos", "no_pos"],
    )
    # all_pos: AP = RR = 1; mixed: ranked 0.9(-) 0.2(+) -> AP = RR = 1/2; no_pos: always excluded
    assert load_metric("map").compute(**kwargs) == pytest.approx({"map": (1 + 1 / 2) / 2, "num_queries": 2})
    assert load_metric("mrr").compute(**kwargs) == pytest.approx({"mrr": (1 + 1 / 2) / 2, "num_queries": 2})
    filtered = dict(kwargs, drop_all_positive=True)
    assert load_metric("map").compute(**filtered) == pytest.approx({"map": 1 / 2, "num_queries": 1})
    assert load_metric("mrr").compute(**filtered) == pytest.approx({"mrr": 1 / 2, "num_queries": 1})
    # a single-candidate query with a relevant answer is "all positive" too
    single = dict(predictions=[0.3], references=[1], query_ids=["q"])
    assert load_metric("map").compute(**single) == {"map": 1.0, "num_queries": 1}
    dropped = load_metric("map").compute(**single, drop_all_positive=True)
    assert math.isnan(dropped["map"]) and dropped["num_queries"] == 0


def test_no_evaluable_query_gives_nan_and_zero_queries():
    kwargs = dict(predictions=[0.3, 0.2], references=[0, 0], query_ids=["q", "r"])
    for name in ("map", "mrr"):
        result = load_metric(name).compute(**kwargs)
        assert math.isnan(result[name]) and result["num_queries"] == 0


def test_add_batch_across_batches_equals_single_compute():
    scores, relevance, query_ids = random_ranking_case(400, n_queries=20)
    for name in ("map", "mrr"):
        metric = load_metric(name)
        for start in range(0, len(scores), 7):  # queries are split across batches
            metric.add_batch(
                predictions=scores[start : start + 7],
                references=relevance[start : start + 7],
                query_ids=query_ids[start : start + 7],
            )
        batched = metric.compute()
        whole = load_metric(name).compute(predictions=scores, references=relevance, query_ids=query_ids)
        assert batched == whole


def test_ranking_metrics_reject_bad_inputs():
    for name in ("map", "mrr"):
        # keep_in_memory: a module whose compute raised keeps its Arrow cache-file lock, so reusing an on-disk
        # instance waits out evaluate's 1 s lock timeout before it falls back to a new cache file
        metric = load_metric(name, keep_in_memory=True)
        with pytest.raises(ValueError, match="0 .*or 1"):
            metric.compute(predictions=[0.1, 0.2], references=[1, 2], query_ids=["q", "q"])
        with pytest.raises(ValueError, match="NaN"):
            metric.compute(predictions=[0.1, float("nan")], references=[1, 0], query_ids=["q", "q"])
        with pytest.raises(ValueError):  # query_ids missing
            metric.compute(predictions=[0.1, 0.2], references=[1, 0])
        # the instance is still usable after the errors
        assert metric.compute(predictions=[0.1, 0.2], references=[1, 0], query_ids=["q", "q"])["num_queries"] == 1


# ---------------------------------------------------------------------------------------------- compute_metrics


def test_compute_metrics_merges_results_and_routes_keyword_arguments():
    scores, relevance, query_ids = random_ranking_case(500)
    merged = compute_metrics(["map", "mrr"], scores, relevance, query_ids=query_ids, drop_all_positive=True)
    expected_map, expected_mrr, n = brute_ranking(scores, relevance, query_ids, drop_all_positive=True)
    assert set(merged) == {"map", "mrr", "num_queries"}
    assert_same(merged["map"], expected_map)
    assert_same(merged["mrr"], expected_mrr)
    assert merged["num_queries"] == n

    predictions, references = [0, 1, 1, 2, 2, 0], [0, 1, 2, 2, 1, 1]
    merged = compute_metrics(["accuracy", "f1_macro", "accuracy"], predictions, references)
    assert set(merged) == {"accuracy", "f1"}
    assert_same(merged["accuracy"], sum(p == r for p, r in zip(predictions, references)) / len(predictions))
    assert_same(merged["f1"], brute_macro_f1(predictions, references))

    single = compute_metrics("mse", [1.0, 2.0], [2.0, 2.0])
    assert single == {"mse": pytest.approx(((1.0 - 2.0) ** 2 + 0.0) / 2)}


def test_compute_metrics_errors():
    with pytest.raises(ValueError, match="not accepted"):
        compute_metrics(["accuracy"], [0, 1], [0, 1], query_ids=["a", "b"])
    with pytest.raises(ValueError, match="not accepted"):
        compute_metrics(["map"], [0.1, 0.2], [0, 1], query_ids=["a", "a"], drop_all_positives=True)  # typo
    with pytest.raises(ValueError, match="Unknown metric 'rouge'"):
        compute_metrics(["accuracy", "rouge"], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="no metric names"):
        compute_metrics([], [0, 1], [0, 1])
