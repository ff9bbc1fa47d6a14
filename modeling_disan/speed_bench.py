"""The speed/memory benchmark table: runs :mod:`modeling_disan.speed` in a fresh process per (model, length)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from .speed import MODELS, floor_seconds, measure_attention, measure_elementwise_rate

DEFAULT_MODELS = ["disan", "disan-reference", "bilstm-s2t", "distance_san", "dsa", "nti"]


def available_mib() -> float:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    return float("inf")


def reference_estimate_mib(length: int, batch: int, dim: int) -> float:
    """DiSAN spec §8: the direct token2token keeps ≈ 6.4 × B·n²·d floats per encoder for backward."""
    return 6.4 * batch * length * length * dim * 4 / 2**20


def run_point(model: str, length: int, batch: int, dim: int, steps: int, warmup: int, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "modeling_disan.speed", "--model", model, "--length", str(length), "--batch",
           str(batch), "--dim", str(dim), "--steps", str(steps), "--warmup", str(warmup)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": model, "length": length, "skipped": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"model": model, "length": length, "skipped": f"failed: {proc.stderr.strip().splitlines()[-1]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def markdown(points: list[dict], lengths: list[int], models: list[str], floor: list[dict]) -> str:
    by = {(p["model"], p["length"]): p for p in points}
    lines = ["Training step (forward + backward + Adadelta), B = %d, d = %d; median of timed steps; peak RSS of a "
             "fresh process." % (points[0]["batch"] if "batch" in points[0] else 0,
                                 points[0]["dim"] if "dim" in points[0] else 0), "",
             "| model | " + " | ".join(f"n={n} sent/s" for n in lengths) + " | "
             + " | ".join(f"n={n} peak MiB" for n in lengths) + " |",
             "|---|" + "---|" * (2 * len(lengths))]
    for model in models:
        speed, memory = [], []
        for n in lengths:
            p = by.get((model, n), {})
            speed.append(f"{p['sentences_per_second']:.1f}" if "sentences_per_second" in p else p.get("skipped", "–"))
            memory.append(f"{p['peak_rss_mib']:.0f}" if "peak_rss_mib" in p else "–")
        lines.append(f"| {model} | " + " | ".join(speed) + " | " + " | ".join(memory) + " |")
    lines += ["", "| ratio | " + " | ".join(f"n={n}" for n in lengths) + " |", "|---|" + "---|" * len(lengths)]
    for label, a, b, key, invert in (("DiSAN new / reference, throughput", "disan", "disan-reference",
                                      "sentences_per_second", False),
                                     ("DiSAN new / reference, peak RSS", "disan", "disan-reference",
                                      "peak_rss_mib", False),
                                     ("DiSAN / Bi-LSTM, throughput", "disan", "bilstm-s2t",
                                      "sentences_per_second", False)):
        cells = []
        for n in lengths:
            pa, pb = by.get((a, n), {}), by.get((b, n), {})
            cells.append(f"{pa[key] / pb[key]:.2f}" if key in pa and key in pb else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if floor:
        lines += ["", "Blocked kernel alone (fw, forward + backward) against its exp/tanh floor "
                      "(evaluations ÷ in-cache rate):", "", "| n | kernel s | floor s | kernel / floor |",
                  "|---|---|---|---|"]
        for f in floor:
            lines.append(f"| {f['length']} | {f['median_seconds']:.3f} | {f['floor_seconds']:.3f} | "
                         f"{f['ratio_to_floor']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lengths", nargs="*", type=int, default=[16, 32, 64, 128, 256])
    parser.add_argument("--models", nargs="*", default=DEFAULT_MODELS, choices=sorted(MODELS))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per point")
    parser.add_argument("--output-dir", default="benchmarks/speed")
    args = parser.parse_args(argv)
    started = time.time()
    points = []
    for n in args.lengths:
        for model in args.models:
            if model == "disan-reference" and reference_estimate_mib(n, args.batch, args.dim) > 0.8 * available_mib():
                points.append({"model": model, "length": n, "skipped": "est. %.0f GiB > RAM" % (
                    reference_estimate_mib(n, args.batch, args.dim) / 1024)})
            else:
                points.append(run_point(model, n, args.batch, args.dim, args.steps, args.warmup, args.timeout))
            print(json.dumps(points[-1]), flush=True)
    rates = measure_elementwise_rate()
    floor = []
    for n in args.lengths:
        kernel = measure_attention(n, args.batch, args.dim, "fw", args.steps)
        seconds = floor_seconds(kernel["transcendental_evaluations"], rates)
        floor.append({**kernel, "floor_seconds": seconds, "ratio_to_floor": kernel["median_seconds"] / seconds})
    table = markdown([p for p in points if "batch" in p] or points, args.lengths, args.models, floor)
    os.makedirs(args.output_dir, exist_ok=True)
    from .training import versions, write_json

    write_json(os.path.join(args.output_dir, "results.json"), {
        "points": points, "elementwise_rates_per_second": rates, "kernel_floor": floor, "args": vars(args),
        "versions": versions(), "wall_time_seconds": round(time.time() - started, 1), "command": " ".join(sys.argv)})
    with open(os.path.join(args.output_dir, "table.md"), "w", encoding="utf-8") as handle:
        handle.write(table + "\n")
    print(table)
    return 0


__all__ = ["main", "run_point", "markdown"]
