"""Command-line entry points (console scripts and the thin scripts/ wrappers)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys

from .training import apply_overrides, load_recipe, train

TRAIN_USAGE = """Train a recipe with the stock Trainer and report its test metrics.

    python scripts/train.py --recipe configuration/disan-trec.json --output-dir runs/disan-trec
    python scripts/train.py --recipe configuration/disan-snli.json --data-dir ../shared/data \\
        --set training.num_train_epochs=1 model.dropout=0.3
"""


def train_main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=TRAIN_USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", required=True, help="recipe JSON, e.g. configuration/disan-trec.json")
    parser.add_argument("--output-dir", help="checkpoint directory (default: runs/<recipe name>)")
    parser.add_argument("--data-dir", help="data root in the shared/data layout (TREC needs none: it is embedded)")
    parser.add_argument("--seed", type=int, help="random seed (default: the recipe's)")
    parser.add_argument("--set", nargs="*", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override recipe fields, e.g. training.num_train_epochs=3 model.dropout=0.3")
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep the per-epoch Trainer checkpoints")
    parser.add_argument("--resume", nargs="?", const=True, default=None,
                        help="resume from the last (or the given) Trainer checkpoint in OUTPUT_DIR/checkpoints")
    parser.add_argument("--push-to-hub", metavar="REPO_ID",
                        help="push the final model, tokenizer and generated card to this hub repo")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    try:
        recipe = apply_overrides(load_recipe(args.recipe), args.set)
        output_dir = args.output_dir or os.path.join("runs", recipe.get("name") or "model")
        results = train(recipe, output_dir, data_dir=args.data_dir, seed=args.seed,
                        keep_checkpoints=args.keep_checkpoints or bool(args.resume),
                        resume_from_checkpoint=args.resume, push_to_hub=args.push_to_hub)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if int(os.environ.get("RANK", "0")) != 0:  # several processes: only the first reports
        return 0
    test = results["metrics"].get("test", {})
    print(json.dumps({"name": results["name"], "test": test, "wall_time_seconds": results["wall_time_seconds"],
                      "checkpoint": output_dir}, indent=2))
    return 0



def push_main(argv=None) -> int:
    """``push_to_hub.py CHECKPOINT_DIR REPO_ID [--private] [--revision REV] [--card PATH]``"""
    from .hub import push_checkpoint

    parser = argparse.ArgumentParser(description="Push a checkpoint directory and its model card to the hub.")
    parser.add_argument("checkpoint_dir")
    parser.add_argument("repo_id")
    parser.add_argument("--private", action="store_true", help="create the repo as private")
    parser.add_argument("--revision", help="branch to push to (created if missing)")
    parser.add_argument("--card", help="model card (default: hub_cards/<name>/README.md)")
    parser.add_argument("--token", help="hub token (default: the logged-in one)")
    args = parser.parse_args(argv)
    try:
        push_checkpoint(args.checkpoint_dir, args.repo_id, private=args.private or None, revision=args.revision,
                        token=args.token, card_path=args.card)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"pushed {args.checkpoint_dir} to {args.repo_id}")
    return 0


def card_main(argv=None) -> int:
    """``make_card.py RESULTS_JSON [--out-dir DIR]``: write the model card generated from a results file."""
    from .cards import write_card

    parser = argparse.ArgumentParser(description="Generate a model card (README.md) from a results file.")
    parser.add_argument("results", help="results.json written by scripts/train.py or scripts/benchmark.py")
    parser.add_argument("--out-dir", help="where README.md (and a copy of the results file) go; "
                                          "default: hub_cards/<name>")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as handle:
        name = json.load(handle).get("name") or "model"
    print(write_card(args.results, args.out_dir or os.path.join("hub_cards", name)))
    return 0


def benchmark_main(argv=None) -> int:
    """``benchmark.py --recipe R [--task T] [--seeds …] [--folds K] [--data-dir D] [--phrase-level]``"""
    from .benchmark import markdown_table, run_benchmark

    parser = argparse.ArgumentParser(description="Run a paper table's protocol for a recipe and print the table.")
    parser.add_argument("--recipe", required=True)
    parser.add_argument("--task", help="task to run (default: the recipe's), e.g. sst5, trec, cr, sick")
    parser.add_argument("--seeds", nargs="*", type=int, help="seeds (default: the task's protocol; TREC 5 seeds)")
    parser.add_argument("--folds", type=int, help="cross-validation folds to run (CR/MPQA/SUBJ: 10)")
    parser.add_argument("--only-folds", nargs="+", type=int, metavar="FOLD",
                        help="run only these cross-validation folds (0-based), e.g. to split a protocol across "
                             "machines; the full command afterwards reuses them")
    parser.add_argument("--data-dir", help="data root in the shared/data layout")
    parser.add_argument("--phrase-level", action="store_true", help="SST: train on every phrase of the trees")
    parser.add_argument("--output-dir", help="default: benchmarks/<variant>-<task>")
    parser.add_argument("--set", nargs="*", default=[], metavar="SECTION.FIELD=VALUE", help="recipe overrides")
    parser.add_argument("--keep-models", action="store_true", help="keep each run's weights")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        recipe = apply_overrides(load_recipe(args.recipe), args.set + ([f"task={args.task}"] if args.task else []))
        from .benchmark import variant_name

        name = f"{variant_name(recipe).replace(':', '-')}-{recipe['task']}" + ("-phrases" if args.phrase_level else "")
        results = run_benchmark(recipe, args.output_dir or os.path.join("benchmarks", name), seeds=args.seeds,
                                folds=args.folds, data_dir=args.data_dir, phrase_level=args.phrase_level,
                                keep_models=args.keep_models, only_folds=args.only_folds,
                                command=shlex.join(["python", "scripts/benchmark.py", *(argv or sys.argv[1:])]))
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(markdown_table(results))
    return 0


def summarize_main(argv=None) -> int:
    """``summarize_benchmarks.py RESULTS.json ... [--output FILE]``: one table over several benchmark results."""
    from .benchmark import summary_table

    parser = argparse.ArgumentParser(description="One markdown table over benchmark results files.")
    parser.add_argument("results", nargs="+", help="results.json files written by scripts/benchmark.py")
    parser.add_argument("--output", help="also write the table to this file")
    args = parser.parse_args(argv)
    loaded = []
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as handle:
                results = json.load(handle)
        except (OSError, json.JSONDecodeError) as err:
            print(f"error: {path}: cannot read a results file ({err})", file=sys.stderr)
            return 2
        if "summary" not in results or "variant" not in results:
            print(f"error: {path} is not a benchmark results file (written by scripts/benchmark.py)", file=sys.stderr)
            return 2
        loaded.append(results)
    table = summary_table(loaded)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(table + "\n")
    print(table)
    return 0
