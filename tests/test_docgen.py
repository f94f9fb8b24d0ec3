"""The docs' generated parts (the CLI's synopsis, each lab's parameter table) are what the code makes now: a knob,
an option or a default changed without `python -m explorer.docgen` fails here, naming the page."""

import pytest

from explorer.docgen import filled, generated, parameters
from explorer.labs.registry import LABS


def test_every_generated_part_of_the_docs_is_what_the_code_makes():
    stale = [str(page) for page, parts in generated().items() if filled(page.read_text(), parts) != page.read_text()]
    assert stale == [], f"run `python -m explorer.docgen`: {stale}"


def test_a_lab_page_without_its_place_for_the_table_is_refused_and_a_knob_shows_in_it():
    with pytest.raises(ValueError, match="no <!-- generated: parameters -->"):
        filled("# A lab\n", {"parameters": "| table |"})
    table = parameters(LABS["optimize"])
    assert "| `--bound-s` | `300` | 10 to 1,800 |" in table and "`explorer/labs/optimize/spec.py`" in table
