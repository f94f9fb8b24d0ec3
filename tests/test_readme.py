"""Every figure in the README's prose comes from a results file of bench/ (or is a constant of the code, or one of
a few versions): a figure typed by hand, rounded past recognition or left behind by a re-run fails here."""

import re

from explorer.core import limits
from tests.helpers import ROOT

# Versions and the examples' longest text: not measurements, said where they are true.
ALLOWED = {"3.11": "the Python version", "470": "the longest example text, in tokens (explorer/core/examples.py)"}
FIGURE = re.compile(r"(?<![\w.,\-/:])(\d+(?:,\d{3})*(?:\.\d+)?)(?![\d]|\.\d)")


def _numbers(text: str) -> set[str]:
    return {m.replace(",", "").replace("_", "") for m in re.findall(r"(?<![\d.])(\d[\d,_]*(?:\.\d+)?)", text)}


def _known() -> set[str]:
    """The results files' numbers, the code's numeric literals, the limits' values, and the allowed few."""
    results = _numbers("\n".join(p.read_text() for p in (ROOT / "bench").glob("RESULTS-*.md")))
    code = _numbers("\n".join(p.read_text() for p in (ROOT / "explorer").rglob("*.py")))
    values = [v for n in dir(limits) if n.isupper() and isinstance(v := getattr(limits, n), int | float)]
    return results | code | {str(int(v)) if float(v).is_integer() else str(v) for v in values} | set(ALLOWED)


def unknown_figures(markdown: str, known: set[str]) -> list[str]:
    """The prose's figures (outside code) that `known` does not hold: decimals, and whole numbers of 3+ digits."""
    prose = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", markdown, flags=re.S))
    found = []
    for m in FIGURE.finditer(prose):
        n = m.group(1).replace(",", "")
        if ("." in n or len(n) >= 3) and n not in known:
            found.append(f"{m.group(1)} in '...{prose[max(0, m.start() - 60):m.end() + 20]}...'".replace("\n", " "))
    return found


def test_every_figure_in_the_readmes_prose_is_in_a_results_file_or_the_code():
    unknown = unknown_figures((ROOT / "README.md").read_text(), _known())
    assert not unknown, "figures in README.md that no results file holds:\n" + "\n".join(unknown)


def test_a_figure_typed_by_hand_is_caught_and_code_and_steps_are_not_figures():
    known = _known()
    assert [f.split(" ")[0] for f in unknown_figures("swinging between 1,909 and 7.345 GiB", known)] == ["7.345"]
    assert unknown_figures("swinging between 1,909 and 7,311 MiB (`--runs 123.45`)\n```\nx 987.6\n```", known) == []
    assert unknown_figures("in 3 steps of 2 layers", known) == []
