"""Training-step speed and memory of the encoders (used by ``scripts/bench_speed.py``).

One measurement = one fresh process (``python -m modeling_disan.speed --model M --length n``), so that peak resident
memory (``ru_maxrss``) belongs to that point alone: build the model with the papers' sizes (d = 300), then time
forward + backward + optimizer step on a random batch of B sentences of length n (all tokens real). The median of
the timed steps after warm-up is reported, with the process's peak RSS and its RSS before the first step.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time

import torch

MODELS = {
    "disan": ("disan", {"token2token_implementation": "blocked"}),
    "disan-reference": ("disan", {"token2token_implementation": "reference"}),
    "bilstm-s2t": ("disan", {"encoder_type": "bilstm_s2t"}),
    "distance_san": ("distance_san", {}),
    "dsa": ("dsa", {}),
    "nti": ("nti", {}),
}


def rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def build(model_name: str, dim: int, vocab: int, num_labels: int = 5):
    import modeling_disan  # noqa: F401  (registers the families)
    from transformers import AutoConfig, AutoModelForSequenceClassification

    if model_name not in MODELS:
        raise ValueError(f"unknown model {model_name!r}; known: {sorted(MODELS)}")
    family, fields = MODELS[model_name]
    sizes = {"vocab_size": vocab, "num_labels": num_labels, "pair_features": None}  # single sentences
    if dim != 300:  # the papers' width is every family's default; a smaller one only for quick checks (DiSAN)
        sizes.update(embedding_dim=dim, hidden_size=dim)
    return AutoModelForSequenceClassification.from_config(AutoConfig.for_model(family, **sizes, **fields))


def measure_step(model_name: str, length: int, batch: int = 64, dim: int = 300, steps: int = 5, warmup: int = 2,
                 vocab: int = 10000, seed: int = 0) -> dict:
    """Median seconds per training step (forward + backward + Adadelta step) and memory, in this process."""
    torch.manual_seed(seed)
    model = build(model_name, dim, vocab).train()
    optimizer = torch.optim.Adadelta([p for p in model.parameters() if p.requires_grad], lr=0.5)
    ids = torch.randint(3, vocab, (batch, length))
    labels = torch.randint(0, 5, (batch,))
    rss_before = current_rss_mib()
    times = []
    for step in range(warmup + steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {"model": model_name, "length": length, "batch": batch, "dim": dim, "steps": steps, "warmup": warmup,
            "step_seconds": times, "median_step_seconds": median, "sentences_per_second": batch / median,
            "peak_rss_mib": rss_mib(), "rss_before_first_step_mib": rss_before,
            "threads": torch.get_num_threads()}


def measure_elementwise_rate(size: int = 1 << 16, repeats: int = 200) -> dict:
    """In-cache evaluations per second of torch.exp and torch.tanh on float32 (the floor of the n×n×d work)."""
    x = torch.rand(size) * 4 - 2
    out = torch.empty_like(x)
    rates = {}
    for name, fn in (("exp", torch.exp), ("tanh", torch.tanh)):
        for _ in range(20):
            fn(x, out=out)
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(repeats):
                fn(x, out=out)
            runs.append(size * repeats / (time.perf_counter() - start))
        rates[name] = statistics.median(runs)
    return rates


def measure_attention(length: int, batch: int = 64, dim: int = 300, direction: str = "fw", steps: int = 5,
                      implementation: str = "blocked") -> dict:
    """Median seconds of the token2token attention alone (forward + backward) and its count of exp/tanh
    evaluations: the reference evaluates tanh and exp once per (b, j, i, d) in forward; the blocked kernel one
    exponential per allowed (b, j, i, d) in forward and again in backward (recomputation)."""
    from .attention import token2token_attention_reference
    from .token2token import token2token_attention

    fn = token2token_attention if implementation == "blocked" else token2token_attention_reference
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, length, dim, requires_grad=True) for _ in range(3))
    mask = torch.ones(batch, length, dtype=torch.bool)
    times = []
    for step in range(steps + 1):
        start = time.perf_counter()
        fn(q, k, v, mask, direction, 5.0).sum().backward()
        if step:
            times.append(time.perf_counter() - start)
    allowed_pairs = length * (length - 1) // 2 if direction in ("fw", "bw") else length * length
    if implementation == "blocked":  # one exponential per allowed (b, j, i, d) in forward, again in backward
        evaluations = {"exp": 2 * batch * allowed_pairs * dim, "tanh": 0}
    else:  # tanh and exp over every (b, j, i, d), masked or not, in forward only
        evaluations = {"exp": batch * length * length * dim, "tanh": batch * length * length * dim}
    return {"implementation": implementation, "length": length, "median_seconds": statistics.median(times),
            "transcendental_evaluations": evaluations}


def floor_seconds(evaluations: dict, rates: dict) -> float:
    """Time the exp/tanh evaluations alone would take at the in-cache rates (the kernel's lower bound)."""
    return sum(count / rates[name] for name, count in evaluations.items())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="One training-step measurement in this (fresh) process.")
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument("--length", type=int, required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    print(json.dumps(measure_step(args.model, args.length, args.batch, args.dim, args.steps, args.warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
