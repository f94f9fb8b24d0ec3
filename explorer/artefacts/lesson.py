"""A lesson step as a Jupyter notebook, for a class that runs it on its own machines: the step's claim, what to do
and notice, its experiment as code (the same run as `python -m explorer claim --claim ID`, in a clone of this
repository), and the question for the room. No figure is written in it: each machine measures its own."""

from __future__ import annotations

import nbformat
from nbformat import v4

from explorer.claims.board import CLAIMS
from explorer.claims.lessons import STEPS, step
from explorer.core.errors import InputError


def step_of(claim_id: str) -> int:
    """The lesson step (from 1) that runs claim `claim_id`."""
    for number, s in enumerate(STEPS, 1):
        if s.claim == claim_id:
            return number
    raise InputError(f"{claim_id!r} is no lesson step; the steps' claims are {', '.join(s.claim for s in STEPS)}")


def experiment_args(number: int) -> list[str]:
    """The CLI arguments of the step's experiment."""
    return ["claim", "--claim", step(number).claim]


def lesson_notebook(number: int) -> str:
    s = step(number)
    c = CLAIMS[s.claim]
    cells = [
        v4.new_markdown_cell(f"# Graph Explorer, step {number} of {len(STEPS)} (about {s.minutes} min)\n\n"
                             f"**“{c.statement}”**\n\n**Do:** {s.do}\n\n**Notice:** {s.notice}\n\n"
                             "Run it in a clone of Graph Explorer (`pip install -r requirements.txt`): the "
                             "experiment below measures this machine, as the card in the app measures its server."),
        v4.new_code_cell("from explorer.cli import main\n\n"
                         f"main({experiment_args(number)!r})  # = python -m explorer claim --claim {s.claim}"),
        v4.new_markdown_cell(f"## Ask the room\n\n{s.question}"),
    ]
    notebook = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)
