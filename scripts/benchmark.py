#!/usr/bin/env python
"""Reproduce a paper table for a recipe: ``python scripts/benchmark.py --recipe configuration/disan-trec.json``.

Thin wrapper over :func:`modeling_disan.cli.benchmark_main` (see ``--help``).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from modeling_disan.cli import benchmark_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(benchmark_main())
