#!/usr/bin/env python
"""Training-step throughput and peak memory per encoder and length, one fresh process per point.

    python scripts/bench_speed.py                      # n = 16..256, B = 64, d = 300, all models
    python scripts/bench_speed.py --lengths 64 128 --models disan disan-reference

Prints a markdown table (medians of --steps timed steps after --warmup), the ratios DiSAN(new)/DiSAN(reference)
and DiSAN/Bi-LSTM, and the blocked kernel's distance from its exp/tanh floor; writes results.json and table.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from modeling_disan.speed_bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
