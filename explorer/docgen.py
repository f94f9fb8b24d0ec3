"""The parts of the docs that the code decides, made from it: the command line's synopsis (docs/cli.md, from the
CLI's parser), the README's list of lab pages (from the registry) and each lab's parameter table
(docs/labs/<lab>.md, from its spec's knobs: the same defaults, ranges and help as its tab's controls, its CLI
options and its endpoint). Each stands between `<!-- generated: NAME -->` and `<!-- /generated -->`;
`python -m explorer.docgen` writes them, and tests/test_docgen.py fails on a page that differs from what the code
makes."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from explorer.cli import option_of, parser
from explorer.labs.contract import LabSpec
from explorer.labs.registry import LABS
from models.config import Knob

DOCS = Path(__file__).resolve().parents[1] / "docs"
WIDTH = 120  # the docs' lines


def synopsis() -> str:
    """Every verb's usage, as its `--help` starts, in a shell block."""
    verbs = re.search(r"\{([^}]+)\}", parser().format_usage()).group(1).split(",")
    lines = []
    with _columns(WIDTH - len("python -m ") + len("usage: ")):  # argparse wraps at the terminal's width
        for verb in verbs:
            said = io.StringIO()
            with contextlib.redirect_stdout(said), contextlib.suppress(SystemExit):
                parser().parse_args([verb, "--help"])
            usage = said.getvalue().split("\n\n", 1)[0].removeprefix("usage: explorer")
            usage = usage.replace("\n", "\n" + " " * (len("python -m ") - len("usage: ")))  # its indent, kept
            lines.append(re.sub(r"\s+\[-h\]", "", "python -m explorer" + usage))
    return "```\n" + "\n".join(lines) + "\n```"


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        os.environ.pop("COLUMNS") if before is None else os.environ.update(COLUMNS=before)


def _range(k: Knob) -> str:
    if k.choices:
        return ", ".join(f"`{c}`" for c in k.choices if c) + (" (several)" if k.type == "subset" else "")
    if k.min is not None and k.max is not None:
        return f"{_number(k.min)} to {_number(k.max)}"
    if k.most is not None:
        return f"at most {k.most:,} {'characters' if k.type == 'text' else 'numbers'}"
    return ""


def _number(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _default(k: Knob) -> str:
    value = ",".join(map(str, k.default)) if isinstance(k.default, tuple) else k.default
    return f"`{value}`" if value not in ("", None) else "(empty)"


def parameters(spec: LabSpec) -> str:
    """The lab's parameters: each as the CLI spells it, its default, its range or choices, and what it sets."""
    source = spec.params.__module__.replace(".", "/") + ".py"
    rows = [f"The tab's controls, the `{spec.name}` verb's options and the `/{spec.name}` endpoint's parameters, from "
            f"the lab's spec\n(`{source}`):", "", "| parameter | default | range or choices | what it sets |",
            "|---|---|---|---|"]
    for k in spec.knobs():
        what = k.help.replace("|", "\\|")
        rows.append(f"| `{option_of(k)}` | {_default(k)} | {_range(k)} | {what} |")
    return "\n".join(rows)


def lab_pages() -> str:
    """The README's line of lab pages, one per registered lab, in the registry's order."""
    links = " · ".join(f"[{spec.title}](docs/labs/{name}.md)" for name, spec in LABS.items())
    return f"Each lab has a page (what it does, its parameters, what was measured): {links}."


def generated() -> dict[Path, dict[str, str]]:
    """Each page's generated parts, by name."""
    parts = {DOCS / "cli.md": {"synopsis": synopsis()}, DOCS.parent / "README.md": {"labs": lab_pages()}}
    for name, spec in LABS.items():
        parts[DOCS / "labs" / f"{name}.md"] = {"parameters": parameters(spec)}
    return parts


def filled(text: str, parts: dict[str, str]) -> str:
    """`text` with each generated part replaced by `parts`' (a part the page lacks is an error: it must say where
    the part goes)."""
    for name, body in parts.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(<!-- /generated -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no <!-- generated: {name} --> ... <!-- /generated --> on the page")
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    return text


def main() -> int:
    for page, parts in generated().items():
        page.write_text(filled(page.read_text(), parts))
        print(f"wrote {page.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
