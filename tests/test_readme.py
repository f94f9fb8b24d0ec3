"""Every figure in the README's and the docs' prose comes from where it says: a paragraph that links results files of
bench/ quotes its figures from them, with their units (both ends of a range); one that links none quotes a results
file, a constant of the code or one of a few versions. Every `file:line` reference points at a line of code. A
figure typed by hand, rounded past recognition, left behind by a re-run or moved to another file's paragraph fails."""

import re
from pathlib import Path

from explorer.core import limits
from tests.helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Versions and the examples' longest text: not measurements, said where they are true.
ALLOWED = {"3.11": "the Python version", "470": "the longest example text, in tokens (explorer/core/examples.py)"}
NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
UNIT = r"(?:x|×|%|ms|µs|s|MiB|GiB|KiB|MB|GB|kB|KB)"
# a figure with its unit: "2.48x", "0.41 s", "1-5%", "2.47-2.49x" (both ends), not inside a word or a path
WITH_UNIT = re.compile(rf"(?<![\w.,/:=-])({NUMBER})(?:\s?[-–]\s?({NUMBER}))?\s?({UNIT})(?![\w/])")
BARE = re.compile(r"(?<![\w.,\-/:])(\d+(?:,\d{3})*(?:\.\d+)?)(?![\d]|\.\d)")
LINE_REF = re.compile(r"`((?:explorer|models|bench|tests|examples)/[\w/.-]+\.py):(\d+)`")
# words that name a figure as a setting of the code or an aim, not a measurement (then it must be a constant)
SETTING = re.compile(r"\b(goals?|default|every|budget|limit|timeout|pause|bound)\b[^.;]*$")
RESULTS_LINK = re.compile(r"\(((?:\.\./)*bench/RESULTS-[\w-]+\.md)\)")


def _numbers(text: str) -> set[str]:
    return {m.replace(",", "").replace("_", "") for m in re.findall(r"(?<![\d.])(\d[\d,_]*(?:\.\d+)?)", text)}


def _known() -> set[str]:
    """The results files' numbers, the code's numeric literals, the limits' values, and the allowed few."""
    results = _numbers("\n".join(p.read_text() for p in (ROOT / "bench").glob("RESULTS-*.md")))
    code = _numbers("\n".join(p.read_text() for p in (ROOT / "explorer").rglob("*.py")))
    values = [v for n in dir(limits) if n.isupper() and isinstance(v := getattr(limits, n), int | float)]
    return results | code | {str(int(v)) if float(v).is_integer() else str(v) for v in values} | set(ALLOWED)


def paragraphs(markdown: str) -> list[str]:
    """The prose's paragraphs, each item of a list one of its own (fenced code left out, and the parts made from the
    code: tests/test_docgen.py checks those)."""
    prose = re.sub(r"```.*?```|<!-- generated: .*?<!-- /generated -->", "", markdown, flags=re.S)
    return [p for p in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )", prose) if p.strip()]


def holds(number: str, unit: str, source: str) -> bool:
    """`number` is in `source` with `unit` after it (or after the range it starts), or as a cell of one of its
    tables (whose header says the units)."""
    digits = re.escape(number.replace(",", ""))
    plain = source.replace(",", "")
    if re.search(rf"(?<![\d.]){digits}(?:\s?[-–]\s?[\d.]+)?\s?{re.escape(unit)}(?![\w])", plain):
        return True
    return any(re.search(rf"(?<![\d.]){digits}(?![\d]|\.\d)", line)
               for line in plain.splitlines() if line.lstrip().startswith("|"))


def unsourced(markdown: str, here: Path, known: set[str]) -> list[str]:
    """Each figure of `markdown` (a file at `here`) that its paragraph's results files, or else `known`, lack."""
    found = []
    for para in paragraphs(markdown):
        prose = re.sub(r"`[^`]*`", "", para)
        links = [(here.parent / link).resolve() for link in RESULTS_LINK.findall(para)]
        if links:
            source = "\n".join(p.read_text() for p in links if p.exists())
            found += [f"{path}:{n} (not in {', '.join(p.name for p in links)})" for path, n in LINE_REF.findall(para)
                      if f"{path}:{n}" not in source]  # a line a results file names: as the run named it
            for m in WITH_UNIT.finditer(prose):
                setting = SETTING.search(prose[max(0, m.start() - 30):m.start()])  # a goal or a default, named so
                for n in filter(None, (m.group(1), m.group(2))):
                    if not holds(n, m.group(3), source) and not (setting and n.replace(",", "") in known):
                        found.append(f"{n} {m.group(3)} (not in {', '.join(p.name for p in links)}) in "
                                     f"'...{prose[max(0, m.start() - 60):m.end() + 20]}...'".replace("\n", " "))
            continue
        for m in BARE.finditer(prose):
            n = m.group(1).replace(",", "")
            if ("." in n or len(n) >= 3) and n not in known:
                found.append(f"{m.group(1)} in '...{prose[max(0, m.start() - 60):m.end() + 20]}...'"
                             .replace("\n", " "))
    return found


def dangling(markdown: str) -> list[str]:
    """Each `file.py:N` whose line N is missing or is no line of code (blank, a comment, a def or class line)."""
    bad = []
    for path, n in LINE_REF.findall(markdown):
        lines = (ROOT / path).read_text().splitlines() if (ROOT / path).exists() else []
        line = lines[int(n) - 1].strip() if 0 < int(n) <= len(lines) else ""
        if not line or line.startswith(("#", "def ", "class ", "@", '"""')):
            bad.append(f"{path}:{n} -> {line!r}")
    return bad


def test_every_figure_in_the_readme_and_docs_is_in_the_results_file_its_paragraph_links_or_the_code():
    known = _known()
    unknown = [f"{doc.relative_to(ROOT)}: {f}" for doc in DOCS for f in unsourced(doc.read_text(), doc, known)]
    assert not unknown, "figures no results file or code holds:\n" + "\n".join(unknown)


def test_every_file_and_line_the_docs_name_is_a_line_of_code():
    bad = [f"{doc.relative_to(ROOT)}: {b}" for doc in DOCS for b in dangling(doc.read_text())]
    assert not bad, "references to no line of code:\n" + "\n".join(bad)


def test_a_figure_typed_by_hand_or_moved_or_with_another_unit_is_caught_and_code_and_steps_are_not_figures(tmp_path):
    known = _known()
    here = tmp_path / "doc.md"
    results = tmp_path / "bench" / "RESULTS-x.md"
    results.parent.mkdir()
    results.write_text("compiled is 2.48x faster (95% interval 2.47-2.49x); p95 0.41 s\n\n| model | ms |\n"
                       "| rnn | 3.079 |")
    link = "([bench/RESULTS-x.md](bench/RESULTS-x.md))"
    assert unsourced(f"2.48x (2.47-2.49x), p95 0.41 s, 3.079 ms {link}", here, known) == []
    caught = [f.split(" (not")[0] for f in unsourced(f"2.48x (2.47-2.50x), 0.41 ms, 2.5x {link}", here, known)]
    assert caught == ["2.50 x", "0.41 ms", "2.5 x"]  # an interval's upper end, another unit, a rounded figure
    assert [f.split(" ")[0] for f in unsourced("swinging between 1,909 and 7.345 GiB", here, known)] == ["7.345"]
    assert unsourced("swinging between 1,909 and 7,311 MiB (`--runs 123.45`)\n```\nx 987.6\n```", here, known) == []
    assert unsourced("in 3 steps of 2 layers", here, known) == []
    assert dangling("`models/bugs.py:1`") and dangling("`models/bugs.py:100000`")  # a docstring, past the end
    results.write_text("| shape | models/bugs.py:19 |")
    assert unsourced(f"`models/bugs.py:19` {link}", here, known) == []
    assert unsourced(f"`models/bugs.py:20` {link}", here, known) == ["models/bugs.py:20 (not in RESULTS-x.md)"]
    line = next(i for i, s in enumerate((ROOT / "models/bugs.py").read_text().splitlines(), 1) if "BUG: log" in s)
    assert dangling(f"`models/bugs.py:{line}`") == [] and dangling(f"`models/bugs.py:{line - 1}`")


def test_every_relative_link_resolves_and_every_page_is_reachable_from_the_readme():
    """The manual is split by topic: a link to a file, or to a heading of a page, that moved or went fails here, and
    so does a page no link leads to."""
    broken, linked = [], set()
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if target.startswith(("http", "mailto")):
                continue
            path, _, anchor = target.partition("#")
            page = (doc.parent / path).resolve() if path else doc
            linked.add(page)
            if not page.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif anchor and page.suffix == ".md" and anchor not in _anchors(page.read_text()):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken
    assert [d for d in DOCS if d not in linked and d.name != "README.md"] == []


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), flags=re.M)}
