"""The Playground's state as a Jupyter notebook: the reproduction script's sections, each a markdown title and a
code cell, built with nbformat (it opens in Jupyter, VS Code or Colab, and runs top to bottom)."""

from __future__ import annotations

import nbformat
from nbformat import v4

from explorer.artefacts.script import sections
from explorer.runs.session import Session


def reproduction_notebook(session: Session) -> str:
    cells = []
    for s in sections(session):
        cells += [v4.new_markdown_cell(f"## {s.title}"), v4.new_code_cell(s.code.rstrip())]
    notebook = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)
