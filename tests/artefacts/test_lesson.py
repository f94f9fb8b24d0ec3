"""A lesson step as a notebook: the step's words, and a code cell whose experiment is the CLI's claim run for the
step's claim (the arguments the CLI itself accepts); a claim that is no step is refused."""

from unittest import mock

import nbformat
import pytest

from explorer.artefacts.lesson import lesson_notebook, step_of
from explorer.claims.board import CLAIMS
from explorer.claims.lessons import STEPS
from explorer.cli import parser
from explorer.core.errors import InputError
from tests.helpers import cli


@pytest.mark.parametrize("number", range(1, len(STEPS) + 1))
def test_each_step_is_a_notebook_with_its_claim_its_experiment_and_its_question(number):
    s = STEPS[number - 1]
    nb = nbformat.reads(lesson_notebook(number), as_version=4)
    nbformat.validate(nb)
    intro, code, ask = nb.cells
    assert CLAIMS[s.claim].statement in intro.source and s.do in intro.source and s.question in ask.source
    called: list[list[str]] = []
    with mock.patch("explorer.cli.main", called.append):  # the cell run as a kernel runs it, the CLI recorded
        exec(compile(code.source, f"<step {number}'s code cell>", "exec"), {})
    [argv] = called
    args = parser().parse_args(argv)  # what the CLI would run: the step's own claim, by the claim verb
    assert args.claim == s.claim and args.fn.__name__ == "_claim" and step_of(s.claim) == number


def test_the_cli_writes_a_steps_notebook_without_running_it_and_refuses_a_claim_that_is_no_step(tmp_path):
    out = cli("claim", "--claim", "debugging", "--notebook", str(tmp_path / "step.ipynb"))
    assert out.returncode == 0, out.stderr
    assert nbformat.read(tmp_path / "step.ipynb", as_version=4).cells[0].source.startswith(
        "# Graph Explorer, step 4 of 9")
    with pytest.raises(InputError, match="'generation' is no lesson step"):
        step_of("generation")
