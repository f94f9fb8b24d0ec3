"""Benchmarks: each script writes a results file beside it (`python -m bench.<name>` from the repository root)."""
