#!/usr/bin/env python
"""Thin wrapper over :func:`modeling_disan.cli.card_main` (see `--help`)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from modeling_disan.cli import card_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(card_main())
