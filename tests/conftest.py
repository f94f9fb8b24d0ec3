import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from pathlib import Path


def early_exit_branch() -> str:
    """'models/early_exit.py:N' for the data-dependent `if` that breaks the compiled graph."""
    lines = Path(__file__).parents[1].joinpath("models/early_exit.py").read_text().splitlines()
    return f"models/early_exit.py:{next(i + 1 for i, ln in enumerate(lines) if 'confidence.min()' in ln)}"
