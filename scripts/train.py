#!/usr/bin/env python
"""Train a recipe and print its test metrics: ``python scripts/train.py --recipe configuration/disan-trec.json``.

Thin wrapper over :func:`modeling_disan.cli.train_main` (also installed as ``modeling-disan-train``).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from modeling_disan.cli import train_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(train_main())
