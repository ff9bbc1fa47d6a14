#!/usr/bin/env python
"""One table over benchmark results: ``python scripts/summarize_benchmarks.py hub_cards/disan-*/benchmark/results.json``.

Thin wrapper over :func:`modeling_disan.cli.summarize_main` (see ``--help``).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from modeling_disan.cli import summarize_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(summarize_main())
