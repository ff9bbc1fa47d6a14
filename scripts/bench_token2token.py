"""Benchmark the blocked token2token attention against the reference (DiSAN spec §8).

Prints markdown tables: the attention op alone (forward + backward, median of ``--reps`` timed runs after one
warm-up run) for B=64, d=300, n in {16, 32, 64, 128}; its peak memory (peak RSS growth during one forward +
backward, each measured in a fresh subprocess) and the bytes autograd saves for backward; and optionally one full
DiSAN training step (classifier, Adadelta) with each implementation.

    PYTHONPATH=. python scripts/bench_token2token.py                 # everything (takes a few minutes)
    PYTHONPATH=. python scripts/bench_token2token.py --lengths 16 32 --reps 3 --no-train-step

Timings are wall-clock on whatever threads torch uses (``--threads`` to pin); on a shared machine, run it when the
machine is otherwise idle. Not imported by the tests.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from modeling_disan.attention import token2token_attention_reference  # noqa: E402
from modeling_disan.token2token import token2token_attention  # noqa: E402

IMPLS = {"reference": token2token_attention_reference, "blocked": token2token_attention}


def make_inputs(B, n, d, padding, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, n, d, generator=gen).requires_grad_(True) for _ in range(3))
    if padding == "random":
        lengths = torch.randint(1, n + 1, (B,), generator=gen)
        lengths[0] = n
    else:
        lengths = torch.full((B,), n)
    mask = torch.arange(n)[None, :] < lengths[:, None]
    grad = torch.randn(B, n, d, generator=gen)
    return q, k, v, mask, grad


def step(fn, q, k, v, mask, grad, direction):
    q.grad = k.grad = v.grad = None
    out = fn(q, k, v, mask, direction)
    out.backward(grad)


def time_op(impl, B, n, d, direction, padding, reps, clock=time.perf_counter):
    q, k, v, mask, grad = make_inputs(B, n, d, padding)
    fn = IMPLS[impl]
    step(fn, q, k, v, mask, grad, direction)  # warm-up
    times = []
    for _ in range(reps):
        gc.collect()
        t0 = clock()
        step(fn, q, k, v, mask, grad, direction)
        times.append(clock() - t0)
    return statistics.median(times), times


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def memory_child(impl, B, n, d, direction, padding):
    """Runs in a subprocess: peak RSS growth (MiB) of one forward+backward, and MiB saved for backward."""
    q, k, v, mask, grad = make_inputs(B, n, d, padding)
    fn = IMPLS[impl]
    saved = {}

    def pack(t):  # unique storages only (the same tensor can be saved by several nodes)
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(q, k, v, mask, direction)
    out.backward(grad)
    del out
    q.grad = k.grad = v.grad = None
    gc.collect()
    peak = None
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak-RSS counter (VmHWM)
        base = rss_kib("VmRSS")
        step(fn, q, k, v, mask, grad, direction)
        peak = (rss_kib("VmHWM") - base) / 1024
    except OSError:
        pass
    return {"peak_mib": peak, "saved_mib": sum(saved.values()) / 2**20}


def measure_memory(impl, B, n, d, direction, padding, threads):
    cmd = [sys.executable, os.path.abspath(__file__), "--_memory-child", impl]
    cmd += [str(B), str(n), str(d), direction, padding]
    env = dict(os.environ)
    # serve every allocation >= 64 KiB by mmap (returned to the OS on free), so that RSS follows live memory
    env.setdefault("MALLOC_MMAP_THRESHOLD_", "65536")
    env.setdefault("MALLOC_TRIM_THRESHOLD_", "65536")
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def time_train_step(impl, B, n, reps, clock=time.perf_counter):
    from modeling_disan.configuration_disan import DiSANConfig
    from modeling_disan.modeling_disan import DiSANForSequenceClassification

    torch.manual_seed(0)
    config = DiSANConfig(vocab_size=20000, num_labels=3, token2token_implementation=impl)
    model = DiSANForSequenceClassification(config).train()
    opt = torch.optim.Adadelta(model.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(n // 2, n + 1, (B,), generator=gen)
    lengths[0] = n
    attention_mask = (torch.arange(n)[None, :] < lengths[:, None]).long()
    input_ids = torch.randint(2, config.vocab_size, (B, n), generator=gen) * attention_mask
    labels = torch.randint(0, 3, (B,), generator=gen)

    def one():
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        opt.step()

    one()
    times = []
    for _ in range(reps):
        gc.collect()
        t0 = clock()
        one()
        times.append(clock() - t0)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dim", type=int, default=300)
    p.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128])
    p.add_argument("--direction", default="fw", choices=["fw", "bw", "diag", "all"])
    p.add_argument("--padding", default="none", choices=["none", "random"], help="random right-padding per row")
    p.add_argument("--reps", type=int, default=5, help="timed runs per cell (median reported)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument(
        "--clock", default="wall", choices=["wall", "cpu"],
        help="wall: time.perf_counter; cpu: process CPU time (robust on a busy machine when --threads 1)",
    )
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--no-train-step", action="store_true")
    p.add_argument("--train-length", type=int, default=64)
    p.add_argument("--train-reps", type=int, default=3)
    p.add_argument("--_memory-child", nargs=6, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._memory_child:
        impl, B, n, d, direction, padding = args._memory_child
        print(json.dumps(memory_child(impl, int(B), int(n), int(d), direction, padding)))
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    B, d = args.batch, args.dim
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    print(
        f"# token2token attention, B={B}, d={d}, direction={args.direction}, padding={args.padding}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.clock} clock, "
        f"median of {args.reps} runs\n"
    )
    rows = []
    for n in args.lengths:
        row = {"n": n}
        for impl in ("reference", "blocked"):
            row[impl] = time_op(impl, B, n, d, args.direction, args.padding, args.reps, clock)[0]
            if not args.no_memory:
                row[impl + "_mem"] = measure_memory(impl, B, n, d, args.direction, args.padding, args.threads)
            print(f"  n={n} {impl}: {row[impl] * 1e3:.1f} ms", file=sys.stderr, flush=True)
        rows.append(row)
    print("| n | reference fwd+bwd (ms) | blocked fwd+bwd (ms) | speed-up |")
    print("|---:|---:|---:|---:|")
    for r in rows:
        ref, new = r["reference"], r["blocked"]
        print(f"| {r['n']} | {ref * 1e3:.1f} | {new * 1e3:.1f} | {ref / new:.1f}x |")
    if not args.no_memory:
        print("\n| n | reference peak (MiB) | blocked peak (MiB) | blocked / reference | reference saved (MiB) | "
              "blocked saved (MiB) |")
        print("|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            rm, bm = r["reference_mem"], r["blocked_mem"]
            if rm["peak_mib"] is None or bm["peak_mib"] is None:
                peak = "n/a | n/a | n/a"
            else:
                ratio = rm["peak_mib"] / max(bm["peak_mib"], 1e-9)
                peak = f"{rm['peak_mib']:.0f} | {bm['peak_mib']:.0f} | 1/{ratio:.0f}"
            print(f"| {r['n']} | {peak} | {rm['saved_mib']:.0f} | {bm['saved_mib']:.1f} |")
    if not args.no_train_step:
        n = args.train_length
        ref = time_train_step("reference", B, n, args.train_reps, clock)
        new = time_train_step("blocked", B, n, args.train_reps, clock)
        print(f"\nFull DiSAN training step (DiSANForSequenceClassification, Adadelta), B={B}, n={n}, "
              f"median of {args.train_reps}:\n")
        print("| reference (s) | blocked (s) | speed-up |")
        print("|---:|---:|---:|")
        print(f"| {ref:.3f} | {new:.3f} | {ref / new:.1f}x |")


if __name__ == "__main__":
    main()
