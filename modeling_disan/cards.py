"""Model cards generated from a results file (train or benchmark script output).

The card holds no number that its results file does not: measured metrics, the paper's figure (copied into the
results file from :mod:`modeling_disan.paper_results`), parameter counts and wall time all come from ``results``.
"""

from __future__ import annotations

import json
import os

from huggingface_hub import EvalResult, ModelCard, ModelCardData

FAMILY_PAPERS = {
    "disan": ("DiSAN: Directional Self-Attention Network for RNN/CNN-Free Language Understanding",
              "Tao Shen, Tianyi Zhou, Guodong Long, Jing Jiang, Shirui Pan, Chengqi Zhang", "AAAI 2018",
              "https://arxiv.org/abs/1709.04696",
              "@inproceedings{shen2018disan,\n  title={DiSAN: Directional Self-Attention Network for RNN/CNN-Free "
              "Language Understanding},\n  author={Shen, Tao and Zhou, Tianyi and Long, Guodong and Jiang, Jing and "
              "Pan, Shirui and Zhang, Chengqi},\n  booktitle={AAAI},\n  year={2018}\n}"),
    "distance_san": ("Distance-based Self-Attention Network for Natural Language Inference", "Jinbae Im, Sungzoon Cho",
                     "arXiv 2017", "https://arxiv.org/abs/1712.02047",
                     "@article{im2017distance,\n  title={Distance-based Self-Attention Network for Natural Language "
                     "Inference},\n  author={Im, Jinbae and Cho, Sungzoon},\n  journal={arXiv:1712.02047},\n  "
                     "year={2017}\n}"),
    "dsa": ("Dynamic Self-Attention: Computing Attention over Words Dynamically for Sentence Embedding",
            "Deunsol Yoon, Dongbok Lee, SangKeun Lee", "arXiv 2018", "https://arxiv.org/abs/1808.07383",
            "@article{yoon2018dynamic,\n  title={Dynamic Self-Attention: Computing Attention over Words Dynamically "
            "for Sentence Embedding},\n  author={Yoon, Deunsol and Lee, Dongbok and Lee, SangKeun},\n  "
            "journal={arXiv:1808.07383},\n  year={2018}\n}"),
    "nti": ("Neural Tree Indexers for Text Understanding", "Tsendsuren Munkhdalai, Hong Yu", "EACL 2017",
            "https://arxiv.org/abs/1607.04492",
            "@inproceedings{munkhdalai2017nti,\n  title={Neural Tree Indexers for Text Understanding},\n  "
            "author={Munkhdalai, Tsendsuren and Yu, Hong},\n  booktitle={EACL},\n  year={2017}\n}"),
}
TASK_TYPES = {"single": "text-classification", "pair": "text-classification",
              "relatedness": "text-classification", "ranking": "text-classification"}
METRIC_KEYS = ("accuracy", "f1", "pearson", "spearman", "mse", "map", "mrr")


def measured_metrics(results: dict, split: str = "test") -> dict:
    """{metric: value} measured on ``split``, from a train results file (``<split>_<metric>`` keys) or a benchmark
    results file (``summary`` with ``mean``)."""
    if "summary" in results:  # benchmark script: {"summary": {"accuracy": {"mean": .., "sd": ..}}}
        return {k: v["mean"] for k, v in results["summary"].items() if k in METRIC_KEYS}
    found = results.get("metrics", {}).get(split, {})
    return {key: found[f"{split}_{key}"] for key in METRIC_KEYS if f"{split}_{key}" in found}


def _fmt(value, unit: str = "") -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if not unit else f"{value:.2f}{unit}"
    return str(value)


def render_card(results: dict) -> ModelCard:
    """A ``ModelCard`` with ``model-index`` metadata, description, citation, intended use and limits, the recipe and
    command, and measured results beside the paper's."""
    recipe = results.get("recipe", {})
    model_type = recipe.get("model", {}).get("model_type", "disan")
    task = results.get("task") or recipe.get("task")
    name = results.get("name") or recipe.get("name") or f"{model_type}-{task}"
    title, authors, venue, url, bibtex = FAMILY_PAPERS[model_type]
    measured = measured_metrics(results)
    eval_results = [
        EvalResult(task_type="text-classification", dataset_type=task, dataset_name=task, metric_type=metric,
                   metric_value=float(value), dataset_split="test")
        for metric, value in measured.items()
    ]
    card_data = ModelCardData(
        language="en", license="apache-2.0", library_name="transformers", tags=[model_type, "sentence-encoder"],
        datasets=[task], metrics=sorted(measured), pipeline_tag="text-classification", model_name=name,
        eval_results=eval_results or None,
    )
    paper = results.get("paper_reference")
    rows = []
    for metric, value in measured.items():
        ours = _fmt(100 * value, "%") if metric == "accuracy" else _fmt(value)
        theirs = "–"
        if paper and paper.get("metric") == metric:
            theirs = f"{paper['value']}{paper.get('unit', '')} ({paper['source']})"
        rows.append(f"| {metric} | {ours} | {theirs} |")
    vectors = results.get("vectors") or recipe.get("embeddings", {}).get("vectors")
    embeddings_note = (
        f"pretrained vectors from `{vectors['path'] if isinstance(vectors, dict) else vectors}`"
        if vectors else "**random embeddings** (no GloVe file was used), so results are not comparable to the "
                        "paper's GloVe-initialised figures"
    )
    params = results.get("parameters", {})
    seeds = results.get("seeds") or ([results["seed"]] if "seed" in results else [])
    body = f"""
# {name}

**{model_type}** sentence encoder ({title}; {authors}, {venue}, {url}) fine-tuned on **{task}**, packaged as a
Hugging Face `transformers` model by [modeling-disan](https://pypi.org/project/modeling-disan/).

## Results

| metric | this checkpoint (test) | paper |
|---|---|---|
{chr(10).join(rows) if rows else "| – | – | – |"}

Trained with {embeddings_note}. Seeds: {", ".join(str(s) for s in seeds) or "–"}.
Parameters: {params.get("without_embeddings", "–")} without embeddings ({params.get("total", "–")} in all).
Training wall time: {results.get("wall_time_seconds", "–")} s.

## Use

```python
import modeling_disan  # or pass trust_remote_code=True without the package
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

tok = AutoTokenizer.from_pretrained("{name}")
model = AutoModelForSequenceClassification.from_pretrained("{name}")
pipeline("text-classification", model=model, tokenizer=tok)
```

## Intended use and limits

Research use: sentence classification and reproduction/comparison of the encoder on {task}. The tokenizer is a
word-level vocabulary built from the training split: unseen words map to `[UNK]`. The model was trained on one
benchmark and is not a general-purpose classifier. See the results file for every setting.

## Training recipe

Command: `{results.get("command", "")}`

```json
{json.dumps(recipe, indent=2)}
```

## Citation

```bibtex
{bibtex}
```
"""
    return ModelCard.from_template(card_data, template_str="---\n{{ card_data }}\n---\n" + body)


def write_card(results_path: str, out_dir: str | None = None) -> str:
    """Render the card of a results file into ``out_dir/README.md`` (default: the results file's directory);
    the results file is copied beside it when they differ. Returns the card path."""
    with open(results_path, encoding="utf-8") as handle:
        results = json.load(handle)
    out_dir = out_dir or os.path.dirname(os.path.abspath(results_path))
    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, os.path.basename(results_path))
    if os.path.abspath(target) != os.path.abspath(results_path):
        with open(target, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
            handle.write("\n")
    path = os.path.join(out_dir, "README.md")
    render_card(results).save(path)
    return path


__all__ = ["render_card", "write_card", "measured_metrics", "FAMILY_PAPERS"]
