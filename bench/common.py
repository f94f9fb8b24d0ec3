"""What every benchmark script shares: `--out` (where its results go) and `--quick` (its smallest run, which
the test suite uses to check that the script runs as the README shows it)."""

from __future__ import annotations

import argparse
from pathlib import Path


def parser(doc: str | None, results: str) -> argparse.ArgumentParser:
    """An argument parser with `--out` (default: bench/`results`) and `--quick`."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(__file__).with_name(results),
                   help=f"where the results go (default: bench/{results})")
    p.add_argument("--quick", action="store_true", help="the smallest run: checks that the script works")
    return p
