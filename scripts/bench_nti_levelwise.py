#!/usr/bin/env python
"""Speed-up of NTI's level-wise batching (one node-function call per tree level, spec §2) over composing the same
tree one node at a time (:func:`modeling_disan.modeling_nti.compose_node_by_node`), on one batch.

    python scripts/bench_nti_levelwise.py                       # B=32, L=32 leaves, k=300, paper S-LSTM, forward
    python scripts/bench_nti_levelwise.py --backward --threads 2

Prints the median of ``--repeats`` timed runs (after one warm-up) of the tree composition alone and of the whole
encoder (leaf LSTM + tree), and the ratios. The two paths give the same nodes (checked before timing).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from modeling_disan import NTIConfig, NTIModel  # noqa: E402
from modeling_disan.modeling_nti import compose_node_by_node  # noqa: E402


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--leaves", type=int, default=32, help="L, a power of two (SNLI code: 32)")
    parser.add_argument("--hidden", type=int, default=300)
    parser.add_argument("--slstm-type", choices=["paper", "chainer"], default="paper")
    parser.add_argument("--leaf", choices=["none", "lstm"], default="lstm")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--backward", action="store_true", help="time forward + backward instead of forward only")
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    config = NTIConfig(vocab_size=1000, embedding_dim=args.hidden, hidden_size=args.hidden, leaf_function=args.leaf,
                       slstm_type=args.slstm_type, padding_mode="fixed", max_leaves=args.leaves, pair_features=None)
    model = NTIModel(config).eval()
    ids = torch.randint(3, 1000, (args.batch_size, args.leaves))
    mask = torch.ones_like(ids, dtype=torch.bool)
    slots, layout, _ = model.leaf_inputs(model.embeddings(ids), mask)
    tree = model.encoder

    def level_wise():
        return torch.cat(tree(slots, layout)[0], dim=1)

    def node_by_node():
        h0, c0, _ = tree.leaves(slots, layout)
        return compose_node_by_node(tree, h0, c0, layout)

    with torch.no_grad():
        h0, c0, _ = tree.leaves(slots, layout)
        if not torch.allclose(level_wise(), compose_node_by_node(tree, h0, c0, layout), atol=1e-5):
            raise SystemExit("level-wise and node-by-node trees differ")

    def composition(node_by_node_loop: bool):
        h, c, _ = tree.leaves(slots, layout)
        h, c = h.detach().requires_grad_(args.backward), c.detach()

        def run():
            if node_by_node_loop:
                nodes = compose_node_by_node(tree, h, c, layout)
            else:
                levels, cells = [h], [c]
                for level in range(1, layout.depth + 1):
                    nxt = tree.compose(level, levels[-1], cells[-1], layout)
                    levels.append(nxt[0])
                    cells.append(nxt[1])
                nodes = torch.cat(levels, 1)
            if args.backward:
                nodes.sum().backward()

        return run

    def whole(fn):
        def run():
            nodes = fn()
            if args.backward:
                nodes.sum().backward()

        return run

    grad = torch.enable_grad() if args.backward else torch.no_grad()
    results = {}
    with grad:
        results["composition_level_wise_s"] = median_seconds(composition(False), args.repeats)
        results["composition_node_by_node_s"] = median_seconds(composition(True), args.repeats)
        results["encoder_level_wise_s"] = median_seconds(whole(level_wise), args.repeats)
        results["encoder_node_by_node_s"] = median_seconds(whole(node_by_node), args.repeats)
    results["composition_speedup"] = results["composition_node_by_node_s"] / results["composition_level_wise_s"]
    results["encoder_speedup"] = results["encoder_node_by_node_s"] / results["encoder_level_wise_s"]
    setting = {"batch_size": args.batch_size, "leaves": args.leaves, "node_calls_level_wise": layout.depth,
               "node_calls_node_by_node": args.leaves - 1, "hidden": args.hidden, "slstm_type": args.slstm_type,
               "leaf": args.leaf, "backward": args.backward, "threads": args.threads, "repeats": args.repeats}
    print(json.dumps({"setting": setting, **{k: round(v, 5) for k, v in results.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
