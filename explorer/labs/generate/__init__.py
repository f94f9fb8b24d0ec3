"""The generation lab: a decoder, token by token, with each kind of key/value cache."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.contract import on_first_use
from explorer.labs.generate.lab import run_generate, step_graphs
from explorer.labs.generate.results import GenerateResult

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.generate.spec import SPEC
    from explorer.labs.generate.view import GenerateView, graph_figure

__getattr__ = on_first_use(__name__, {"spec": ("SPEC",), "view": ("GenerateView", "graph_figure")})

__all__ = ["SPEC", "GenerateResult", "GenerateView", "graph_figure", "run_generate", "step_graphs"]
