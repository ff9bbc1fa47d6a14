"""Benchmark protocols: run plans, aggregation, the results file and table, SST phrase-level data."""

from __future__ import annotations

import json
import os
import statistics

import pytest

from modeling_disan.benchmark import markdown_table, mean_sd, plan_runs, run_benchmark, variant_name
from modeling_disan.tasks import get_task, load_task, parse_sst_tree
from modeling_disan.training import load_recipe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_protocol_plans():
    assert [r["seed"] for r in plan_runs("trec", None, None)] == [1, 2, 3, 4, 5]  # TREC: 5 seeds
    cv = plan_runs("subj", None, None)
    assert len(cv) == 10 and sorted(r["fold"] for r in cv) == list(range(10))  # 10-fold CV
    assert plan_runs("sst5", [7], None) == [{"seed": 7, "fold": None}]
    with pytest.raises(ValueError, match="fixed splits"):
        plan_runs("sst5", None, 10)


def test_best_epoch_is_the_first_of_the_best_dev_scores():
    from modeling_disan.benchmark import best_epoch

    history = [{"loss": 1.0, "epoch": 1.0}, {"eval_accuracy": 0.5, "epoch": 1.0}, {"eval_accuracy": 0.7, "epoch": 2.0},
               {"eval_accuracy": 0.7, "epoch": 3.0}, {"eval_accuracy": 0.6, "epoch": 4.0}]
    assert best_epoch({"log_history": history}, "accuracy") == {"best_epoch": 2.0, "last_epoch": 4.0}
    assert best_epoch({"log_history": history}, "pearson") == {}


def test_mean_and_sample_sd():
    values = [0.91, 0.93, 0.92, 0.95]
    mean, sd = mean_sd(values)
    assert mean == pytest.approx(statistics.mean(values)) and sd == pytest.approx(statistics.stdev(values))
    assert mean_sd([0.5]) == (0.5, 0.0)


def test_variant_names_pick_the_paper_row():
    assert variant_name({"model": {"model_type": "disan"}}) == "disan"
    assert variant_name({"model": {"model_type": "disan", "directions": ["diag", "diag"]}}) == "disan:no_directions"
    assert variant_name({"model": {"model_type": "disan", "encoder_type": "word_s2t"}}) == "disan:word_s2t"


def test_cross_validation_folds_partition_the_data(tmp_path):
    (tmp_path / "senteval").mkdir()
    (tmp_path / "senteval" / "mpqa.tsv").write_text("".join(f"{int(i % 3 == 0)}\tphrase {i}\n" for i in range(60)))
    seen = []
    for fold in range(10):
        splits = load_task("mpqa", data_dir=str(tmp_path), fold=fold)
        test = set(splits["test"]["text"])
        assert not test & (set(splits["train"]["text"]) | set(splits["validation"]["text"]))
        seen += list(test)
    assert sorted(seen) == sorted(f"phrase {i}" for i in range(60))


def test_sst_tree_parsing():
    nodes = parse_sst_tree(r"(3 (2 (2 The) (2 Rock)) (4 (2 -LRB-) (4 (4 great\/good) (2 -RRB-))))")
    assert nodes[-1] == (3, ["The", "Rock", "(", "great/good", ")"], True)
    assert (2, ["The", "Rock"], False) in nodes and len(nodes) == 9


def test_phrase_level_training_data(tmp_path):
    (tmp_path / "sst" / "trees").mkdir(parents=True)
    tree = "(3 (2 (2 The) (2 Rock)) (4 (2 is) (4 great)))\n"
    for split in ("train", "dev", "test"):
        (tmp_path / "sst" / "trees" / f"{split}.txt").write_text(tree)
    fine = load_task("sst5_phrases", data_dir=str(tmp_path))
    # 7 nodes: 4 neutral phrases once, 2 non-neutral phrases and the sentence ×4
    assert len(fine["train"]) == 4 + 3 * 4 and fine["test"]["text"] == ["The Rock is great"]
    binary = load_task("sst2_phrases", data_dir=str(tmp_path))
    assert set(binary["train"]["label"]) == {1} and len(binary["train"]) == 3 * 4


def test_shared_sst_trees_match_sentence_files(shared_data):
    phrases = load_task("sst5_phrases", data_dir=shared_data)
    sentences = load_task("sst5", data_dir=shared_data)
    assert sorted(phrases["test"]["label"]) == sorted(sentences["test"]["label"])
    assert len(phrases["train"]) > 10 * len(sentences["train"])


def test_small_benchmark_writes_results_and_table(tmp_path):
    recipe = load_recipe(os.path.join(ROOT, "configuration", "disan-trec.json"))
    recipe["model"].update(embedding_dim=8, hidden_size=8, classifier_hidden_sizes=[8])
    recipe["data"] = {"max_train_examples": 96, "max_eval_examples": 32}
    recipe["training"].update(num_train_epochs=1, per_device_train_batch_size=32, disable_tqdm=True)
    results = run_benchmark(recipe, str(tmp_path), seeds=[1, 2])
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [r["seed"] for r in saved["runs"]] == [1, 2]
    accs = [r["metrics"]["accuracy"] for r in saved["runs"]]
    assert saved["summary"]["accuracy"]["mean"] == pytest.approx(sum(accs) / 2)
    assert saved["summary"]["accuracy"]["sd"] == pytest.approx(statistics.stdev(accs))
    assert saved["paper_reference"]["value"] == 94.4 and saved["cnn_rand_reference"]["value"] == 91.2
    assert saved["versions"]["modeling_disan"] and saved["recipe"]["task"] == "trec"
    table = (tmp_path / "table.md").read_text()
    assert "| accuracy |" in table and "94.4" in table and "91.2" in table
    assert table.strip() == markdown_table(results).strip()
    assert not any(f.endswith(".safetensors") for _, _, files in os.walk(tmp_path) for f in files)


def test_interrupted_protocol_keeps_finished_runs_and_continues(tmp_path, monkeypatch):
    """A protocol killed after its first seed leaves a partial results file; the same command then trains only
    the missing seed and reuses the finished one (a changed recipe is trained again)."""
    import modeling_disan.benchmark as benchmark

    recipe = load_recipe(os.path.join(ROOT, "configuration", "disan-trec.json"))
    recipe["model"].update(embedding_dim=8, hidden_size=8, classifier_hidden_sizes=[8])
    recipe["data"] = {"max_train_examples": 64, "max_eval_examples": 32}
    recipe["training"].update(num_train_epochs=1, per_device_train_batch_size=32, disable_tqdm=True)
    real_train, trained = benchmark.train, []

    def killed_after_first(run_recipe, run_dir, data_dir=None, seed=None):
        if trained:
            raise KeyboardInterrupt
        trained.append(seed)
        return real_train(run_recipe, run_dir, data_dir=data_dir, seed=seed)

    monkeypatch.setattr(benchmark, "train", killed_after_first)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(recipe, str(tmp_path), seeds=[1, 2])
    partial = json.loads((tmp_path / "results.json").read_text())
    assert partial["complete"] is False and [r["seed"] for r in partial["runs"]] == [1]
    assert "Incomplete" in (tmp_path / "table.md").read_text()

    def counting(run_recipe, run_dir, data_dir=None, seed=None):
        trained.append(seed)
        return real_train(run_recipe, run_dir, data_dir=data_dir, seed=seed)

    monkeypatch.setattr(benchmark, "train", counting)
    trained.clear()
    results = run_benchmark(recipe, str(tmp_path), seeds=[1, 2])
    assert trained == [2] and results["complete"] and [r["reused"] for r in results["runs"]] == [True, False]
    assert results["runs"][0]["metrics"] == partial["runs"][0]["metrics"]
    trained.clear()
    recipe["optimizer"]["lr"] = 0.25  # another recipe: nothing is reused
    run_benchmark(recipe, str(tmp_path), seeds=[1, 2])
    assert trained == [1, 2]


def test_every_task_has_a_metric_module():
    from modeling_disan.metrics import METRIC_NAMES
    from modeling_disan.tasks import TASKS

    for task in TASKS.values():
        assert set(task.metrics) <= set(METRIC_NAMES) and task.main_metric in task.metrics
    assert get_task("sick").metrics == ("pearson", "spearman", "mse")


def test_quick_run_limits_sample_every_class_of_a_label_sorted_split():
    from datasets import Dataset

    from modeling_disan.training import limit_splits

    sorted_split = Dataset.from_dict({"text": [f"t{i}" for i in range(100)], "label": [1] * 60 + [0] * 40})
    limited = limit_splits({"train": sorted_split, "test": sorted_split}, 20, 10)
    assert len(limited["train"]) == 20 and len(limited["test"]) == 10
    assert set(limited["train"]["label"]) == {0, 1} and set(limited["test"]["label"]) == {0, 1}
    assert limit_splits({"train": sorted_split}, 20, None)["train"]["text"] == limited["train"]["text"]  # fixed
    assert len(limit_splits({"train": sorted_split}, 500, None)["train"]) == 100


def test_summary_table_puts_cnn_rand_beside_ours(tmp_path, capsys):
    from modeling_disan.benchmark import summarize, summary_table
    from modeling_disan.cli import summarize_main

    recipe = load_recipe(os.path.join(ROOT, "configuration", "disan-trec.json"))
    runs = [{"seed": s, "fold": None, "metrics": {"accuracy": a}, "wall_time_seconds": 10.0,
             "parameters": {"total": 2_000_000, "without_embeddings": 1_623_000}}
            for s, a in ((1, 0.85), (2, 0.87))]
    results = summarize(recipe, "trec", runs, started=0.0, complete=True)
    sick = summarize(load_recipe(os.path.join(ROOT, "configuration", "disan-sick.json")), "sick",
                     [{"seed": 1, "fold": None, "metrics": {"pearson": 0.8, "spearman": 0.7, "mse": 0.4},
                       "wall_time_seconds": 5.0, "parameters": None}], started=0.0, complete=False)
    table = summary_table([results, sick]).splitlines()
    assert table[2] == "| trec | disan | 86.00 ± 1.41 | 2 | 40 | 94.4 | 91.2 | -5.20 | 1,623,000 | 20.0 |"
    assert table[3] == "| sick | disan | 0.8000 (pearson) (incomplete) | 1 | 15 | 0.8695 | – | – | – | 5.0 |"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert summarize_main([str(path), "--output", str(tmp_path / "table.md")]) == 0
    assert (tmp_path / "table.md").read_text().strip() == summary_table([results]).strip()
    (tmp_path / "other.json").write_text(json.dumps({"name": "x"}))
    assert summarize_main([str(tmp_path / "other.json")]) == 2
    assert "not a benchmark results file" in capsys.readouterr().err


def test_benchmark_command_line_records_itself(tmp_path, capsys):
    from modeling_disan.cli import benchmark_main

    argv = ["--recipe", os.path.join(ROOT, "configuration", "disan-trec.json"), "--seeds", "3",
            "--output-dir", str(tmp_path), "--set", "model.embedding_dim=8", "model.hidden_size=8",
            "model.classifier_hidden_sizes=[8]", "data.max_train_examples=64", "data.max_eval_examples=16",
            "training.num_train_epochs=1", "training.disable_tqdm=true"]
    assert benchmark_main(argv) == 0
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["command"].startswith("python scripts/benchmark.py --recipe ") and "--seeds 3" in saved["command"]
    assert saved["complete"] and saved["seeds"] == [3] and "| accuracy |" in capsys.readouterr().out
    assert saved["runs"][0]["best_epoch"] == saved["runs"][0]["last_epoch"] == 1.0
    assert benchmark_main(argv[:4] + ["--set", "model.hiden_size=8"]) == 2
    assert "hiden_size" in capsys.readouterr().err


def test_cross_validation_split_across_two_invocations(tmp_path, monkeypatch):
    """Half the folds in one process, the other half in another, then the whole command: nothing trains twice and
    the complete results hold all ten folds."""
    import modeling_disan.benchmark as benchmark
    from modeling_disan.training import write_json

    trained = []

    def fake_train(recipe, run_dir, data_dir=None, seed=None):
        trained.append(recipe["data"]["fold"])
        result = {"recipe": recipe, "seed": seed, "wall_time_seconds": 1.0, "parameters": None, "log_history": [],
                  "metrics": {"test": {"test_accuracy": 0.5 + recipe["data"]["fold"] / 100}}}
        os.makedirs(run_dir, exist_ok=True)
        write_json(os.path.join(run_dir, "results.json"), result)
        return result

    monkeypatch.setattr(benchmark, "train", fake_train)
    recipe = load_recipe(os.path.join(ROOT, "configuration", "disan-cr.json"))
    first = run_benchmark(recipe, str(tmp_path), only_folds=[0, 1, 2, 3, 4])
    assert trained == [0, 1, 2, 3, 4] and not first["complete"] and first["summary"]["accuracy"]["n"] == 5
    assert first["protocol"] == "stratified 10-fold cross-validation (seeded), seeds [1], folds [0, 1, 2, 3, 4] only"
    run_benchmark(recipe, str(tmp_path), only_folds=[5, 6, 7, 8, 9])
    trained.clear()
    whole = run_benchmark(recipe, str(tmp_path))
    assert trained == [] and whole["complete"] and [r["fold"] for r in whole["runs"]] == list(range(10))
    assert whole["protocol"] == "stratified 10-fold cross-validation (seeded), seeds [1]"
    assert whole["summary"]["accuracy"]["mean"] == pytest.approx(0.545)
    with pytest.raises(ValueError, match=r"fold\(s\) \[10\] are not in the protocol of cr"):
        run_benchmark(recipe, str(tmp_path), only_folds=[10])
