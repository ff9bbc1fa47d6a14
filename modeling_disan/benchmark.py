"""Reproduce the papers' tables: each task's protocol, run through :func:`modeling_disan.training.train`.

Protocols: TREC = mean ± sd over 5 seeds (DiSAN arXiv T5); CR, MPQA, SUBJ = stratified seeded 10-fold
cross-validation (a seeded 10% of each training fold selects the epoch); SST-5/SST-2 on their splits, sentence-level
or phrase-level training (``phrase_level=True``: every tree node, non-neutral phrases and sentences ×4, DiSAN spec §7
item 1); SICK relatedness (Pearson, Spearman, MSE); SNLI/MultiNLI dev and test; WikiQA MAP/MRR. Every run's
metrics, their mean and sd, the recipe, versions and wall time go to one results file, and a markdown table puts
the paper's figure beside ours.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time

from .paper_results import CNN_RAND, paper_reference
from .tasks import get_task
from .training import train, versions, write_json

PROTOCOLS = {
    "trec": {"seeds": [1, 2, 3, 4, 5]},
    "cr": {"folds": 10}, "mpqa": {"folds": 10}, "subj": {"folds": 10},
}
METRIC_ORDER = ("accuracy", "f1", "pearson", "spearman", "mse", "map", "mrr")


def variant_name(recipe: dict) -> str:
    """``disan``, ``disan:no_directions``, ``disan:word_s2t``, ... (the row name in the paper's ablation table)."""
    model = recipe.get("model", {})
    family = model.get("model_type", "disan")
    encoder = model.get("encoder_type", "disan")
    if encoder != "disan":
        return f"{family}:{encoder}"
    if list(model.get("directions", ["fw", "bw"])) == ["diag", "diag"]:
        return f"{family}:no_directions"
    return family


def mean_sd(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


def test_metrics(results: dict) -> dict:
    test = results["metrics"].get("test", {})
    return {m: test[f"test_{m}"] for m in METRIC_ORDER if f"test_{m}" in test}


def plan_runs(task_name: str, seeds: list[int] | None, folds: int | None) -> list[dict]:
    """The (seed, fold) runs of a task's protocol."""
    protocol = PROTOCOLS.get(task_name, {})
    folds = folds if folds is not None else protocol.get("folds")
    seeds = seeds or protocol.get("seeds") or [1]
    task = get_task(task_name)
    if folds:
        if not task.cross_validation:
            raise ValueError(f"task {task_name} has fixed splits: cross-validation folds do not apply")
        if folds > task.cross_validation:
            raise ValueError(f"{task_name} defines {task.cross_validation} folds, asked for {folds}")
        return [{"seed": seed, "fold": fold} for seed in seeds for fold in range(folds)]
    return [{"seed": seed, "fold": None} for seed in seeds]


def run_benchmark(recipe: dict, output_dir: str, task: str | None = None, seeds: list[int] | None = None,
                  folds: int | None = None, data_dir: str | None = None, phrase_level: bool = False,
                  keep_models: bool = False, command: str | None = None,
                  only_folds: list[int] | None = None) -> dict:
    """Run every (seed, fold) of the protocol; write ``results.json`` and ``table.md`` to ``output_dir``
    (``command``: the command line to record in the results file). ``only_folds`` runs part of a cross-validation
    (for instance half the folds on another machine into the same ``output_dir``); running the whole protocol
    afterwards reuses the finished folds and writes the complete results."""
    started = time.time()
    task_name = task or recipe["task"]
    if phrase_level:
        if task_name not in ("sst5", "sst2"):
            raise ValueError(f"phrase-level training exists for sst5 and sst2, not {task_name}")
        task_name = f"{task_name}_phrases"
    base = copy.deepcopy(recipe)
    base["task"] = task_name
    base.setdefault("data", {})
    plan = plan_runs(task_name, seeds, folds)
    todo = plan
    if only_folds is not None:
        unknown = sorted(set(only_folds) - {run["fold"] for run in plan})
        if unknown:
            raise ValueError(f"fold(s) {unknown} are not in the protocol of {task_name} "
                             f"(folds: {sorted({run['fold'] for run in plan}, key=str)})")
        todo = [run for run in plan if run["fold"] in only_folds]
    runs = []
    for run in todo:
        run_recipe = copy.deepcopy(base)
        run_recipe["data"]["fold"] = run["fold"]
        label = f"seed{run['seed']}" + (f"-fold{run['fold']}" if run["fold"] is not None else "")
        run_dir = os.path.join(output_dir, "runs", label)
        result = completed_run(run_dir, run_recipe, run["seed"])
        reused = result is not None
        if not reused:
            result = train(run_recipe, run_dir, data_dir=data_dir, seed=run["seed"])
        runs.append({**run, "metrics": test_metrics(result), "validation": result["metrics"].get("validation", {}),
                     "wall_time_seconds": result["wall_time_seconds"], "parameters": result["parameters"],
                     "reused": reused, **best_epoch(result, get_task(task_name).main_metric)})
        if not keep_models:
            for name in os.listdir(run_dir):
                if name.endswith(".safetensors"):
                    os.remove(os.path.join(run_dir, name))
        # after every run, so that an interrupted protocol keeps what it finished ("complete": false)
        results = summarize(base, task_name, runs, started, complete=len(runs) == len(plan), command=command)
        write_results(output_dir, results)
    return results


def best_epoch(result: dict, metric: str) -> dict:
    """The epoch whose dev score was kept, and the last epoch trained: a best epoch at the very end says the run
    was still improving when its epoch budget ran out."""
    scores = [(entry[f"eval_{metric}"], entry["epoch"]) for entry in result.get("log_history", [])
              if f"eval_{metric}" in entry]
    if not scores:
        return {}
    best = max(scores, key=lambda pair: pair[0])  # the first of equal scores, as the Trainer keeps it
    return {"best_epoch": best[1], "last_epoch": scores[-1][1]}


def completed_run(run_dir: str, recipe: dict, seed: int) -> dict | None:
    """The results of an earlier run of exactly this recipe and seed in ``run_dir`` (a protocol run again after an
    interruption picks up where it stopped), or None."""
    try:
        with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None
    return stored if stored.get("recipe") == recipe and stored.get("seed") == seed else None


def summarize(base: dict, task_name: str, runs: list[dict], started: float, complete: bool,
              command: str | None = None) -> dict:
    summary = {}
    for metric in METRIC_ORDER:
        values = [r["metrics"][metric] for r in runs if metric in r["metrics"]]
        if values:
            mean, sd = mean_sd(values)
            summary[metric] = {"mean": mean, "sd": sd, "n": len(values)}
    model_type = base.get("model", {}).get("model_type", "disan")
    variant = variant_name(base)
    reference_task = task_name.replace("_phrases", "")
    return {
        "name": base.get("name"), "task": task_name, "variant": variant, "protocol": protocol_text(task_name, runs),
        "complete": complete, "seeds": sorted({r["seed"] for r in runs}), "runs": runs, "summary": summary,
        "recipe": base,
        "paper_reference": paper_reference(variant, reference_task) or (
            paper_reference(model_type, reference_task) if variant == model_type else None),
        "cnn_rand_reference": CNN_RAND.get(reference_task), "versions": versions(),
        "wall_time_seconds": round(time.time() - started, 1),
        "runs_wall_time_seconds": round(sum(r["wall_time_seconds"] for r in runs), 1),
        "parameters": runs[0]["parameters"] if runs else None, "command": command,
    }


def write_results(output_dir: str, results: dict) -> None:
    os.makedirs(output_dir, exist_ok=True)
    write_json(os.path.join(output_dir, "results.json"), results)
    with open(os.path.join(output_dir, "table.md"), "w", encoding="utf-8") as handle:
        handle.write(markdown_table(results) + "\n")


def protocol_text(task_name: str, runs: list[dict]) -> str:
    task = get_task(task_name)
    folds = sorted({r["fold"] for r in runs if r["fold"] is not None})
    seeds = sorted({r["seed"] for r in runs})
    if folds:
        text = f"stratified {task.cross_validation}-fold cross-validation (seeded), seeds {seeds}"
        return text + (f", folds {folds} only" if len(folds) < task.cross_validation else "")
    split = "phrase-level training, sentence-level test" if task_name.endswith("_phrases") else "standard splits"
    return f"{split}; mean ± sd over seeds {seeds}" + ("" if task.kind != "ranking" else "; MAP/MRR")


def _cell(metric: str, value: float, sd: float | None = None) -> str:
    scale = 100.0 if metric == "accuracy" else 1.0
    digits = 2 if metric == "accuracy" else 4
    text = f"{scale * value:.{digits}f}"
    return text + (f" ± {scale * sd:.{digits}f}" if sd else "")


def markdown_table(results: dict) -> str:
    """One row per metric: ours (mean ± sd, n), the paper's figure and table, Kim (2014) CNN-rand."""
    paper = results.get("paper_reference") or {}
    cnn = results.get("cnn_rand_reference") or {}
    lines = [f"**{results['variant']}** on **{results['task']}** ({results['protocol']})", "",
             "| metric | ours | n | paper | paper table | CNN-rand (Kim 2014) |", "|---|---|---|---|---|---|"]
    for metric, stats in results["summary"].items():
        theirs = f"{paper['value']}" if paper.get("metric") == metric else "–"
        source = paper.get("source", "–") if paper.get("metric") == metric else "–"
        rand = f"{cnn['value']}" if cnn.get("metric") == metric else "–"
        lines.append(f"| {metric} | {_cell(metric, stats['mean'], stats['sd'])} | {stats['n']} | {theirs} | "
                     f"{source} | {rand} |")
    lines.append("")
    if not results.get("complete", True):
        lines.append(f"**Incomplete:** {len(results['runs'])} runs finished so far; run the same command again to "
                     "continue.")
    runs_time = results.get("runs_wall_time_seconds")
    lines.append((f"Run time {runs_time} s (sum over the runs; this command {results['wall_time_seconds']} s)"
                  if runs_time is not None else f"Wall time {results['wall_time_seconds']} s") +
                 f"; modeling-disan {results['versions']['modeling_disan']}.")
    return "\n".join(lines)


def _count(value: int | None) -> str:
    return f"{value:,}" if value is not None else "–"


def summary_table(all_results: list[dict]) -> str:
    """One row per benchmark results file: our main metric (mean ± sd over n runs), the epochs trained, the paper's
    figure and Kim (2014) CNN-rand's beside it, and our difference to CNN-rand in points."""
    lines = ["| task | model | ours | n | epochs | paper | CNN-rand | ours − CNN-rand | parameters w/o embeddings "
             "| run time (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for results in all_results:
        metric = next(iter(results["summary"]), None)
        if metric is None:
            continue
        stats = results["summary"][metric]
        paper = results.get("paper_reference") or {}
        cnn = results.get("cnn_rand_reference") or {}
        ours = _cell(metric, stats["mean"], stats["sd"]) + ("" if metric == "accuracy" else f" ({metric})")
        scale = 100.0 if metric == "accuracy" else 1.0
        gap = f"{scale * stats['mean'] - cnn['value']:+.2f}" if cnn.get("metric") == metric else "–"
        lines.append(
            f"| {results['task']} | {results['variant']} | {ours}{'' if results.get('complete', True) else ' (incomplete)'}"
            f" | {stats['n']} | {results['recipe'].get('training', {}).get('num_train_epochs', '–')}"
            f" | {paper.get('value', '–') if paper.get('metric') == metric else '–'}"
            f" | {cnn['value'] if cnn.get('metric') == metric else '–'} | {gap}"
            f" | {_count((results.get('parameters') or {}).get('without_embeddings'))}"
            f" | {results.get('runs_wall_time_seconds', results['wall_time_seconds'])} |")
    return "\n".join(lines)


__all__ = ["run_benchmark", "plan_runs", "markdown_table", "summary_table", "variant_name", "mean_sd", "PROTOCOLS"]
