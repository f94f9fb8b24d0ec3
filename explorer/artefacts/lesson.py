"""A lesson step as a Jupyter notebook, for a class that runs it on its own machines: the step's claim, what to do
and notice, the room's prediction, its experiment as code with the engine it runs on inside the notebook (the app's
modules it imports, zipped: it runs where torch alone is installed, outside a clone), and the figures of the server
that made the notebook set beside the ones it measures."""

from __future__ import annotations

import base64
import json
import sys

import nbformat
import torch
from nbformat import v4

from explorer.artefacts.embed import closure, zipped
from explorer.claims.board import CLAIMS
from explorer.claims.evidence import Claim, ClaimResult
from explorer.claims.lessons import STEPS, step
from explorer.core.errors import InputError
from explorer.core.version import code_version

# What the notebook's cells import besides the claim's own module: running it, printing it, the app's threads.
RUNS_ON = ("explorer.claims.evidence", "explorer.views.tables", "explorer.workers.protocol", "explorer.core.machine")


def step_of(claim_id: str) -> int:
    """The lesson step (from 1) that runs claim `claim_id`."""
    for number, s in enumerate(STEPS, 1):
        if s.claim == claim_id:
            return number
    raise InputError(f"{claim_id!r} is no lesson step; the steps' claims are {', '.join(s.claim for s in STEPS)}")


def claim_module(c: Claim) -> str:
    """The module that declares claim `c`: the root of what its experiment imports."""
    return next(name for name, m in sorted(sys.modules.items())
                if name.startswith("explorer.claims.") and getattr(m, "CLAIM", None) is c)


def engine(number: int) -> dict[str, str]:
    """The app's modules step `number`'s experiment and the notebook's cells import, by name."""
    return closure([claim_module(CLAIMS[step(number).claim]), *RUNS_ON])


_UNPACK = '''
_zip = base64.b64decode(ENGINE)
_named = "graph-explorer-" + hashlib.sha256(_zip).hexdigest()[:12] + "-"
_ours = [d for d in sys.path if os.path.basename(d).startswith(_named)]  # this cell ran before in this kernel
if _ours:
    ENGINE_DIR = _ours[0]
else:  # a new folder of this user's own (no other user of the machine can put a module in it)
    ENGINE_DIR = tempfile.mkdtemp(prefix=_named)
    zipfile.ZipFile(io.BytesIO(_zip)).extractall(ENGINE_DIR)
    sys.path.insert(0, ENGINE_DIR)  # (the processes the experiment starts are given this path too)
if "explorer" in sys.modules and not sys.modules["explorer"].__file__.startswith(ENGINE_DIR):
    raise RuntimeError("this kernel has imported another Graph Explorer: restart it, then run this cell first")
print(f"the engine: {len(zipfile.ZipFile(io.BytesIO(_zip)).namelist())} files, in {ENGINE_DIR}")
'''

_RUN = '''
import time

from explorer.claims.evidence import ClaimResult, run_claim
from explorer.core.machine import pin_threads
from explorer.workers.protocol import Here, Workers

pin_threads()  # the app's torch threads, for every figure
start = time.monotonic()
for item in run_claim(CLAIM, Workers.on(Here(), quick=QUICK)):  # every job in this kernel's process
    if isinstance(item, ClaimResult):
        here = item
    else:
        print(f"{time.monotonic() - start:6.1f} s  {item.phase}")
'''


def lesson_notebook(number: int, server: ClaimResult | None = None) -> str:
    """Step `number` as a notebook; `server`: this server's result of the step's claim, set beside the one the
    notebook measures (None: it had none to carry)."""
    s = step(number)
    c = CLAIMS[s.claim]
    modules = engine(number)
    prediction = s.predict.question + (f" (one of: {'; '.join(s.predict.choices)})" if s.predict.choices else
                                       f" (a number{', in ' + s.predict.unit if s.predict.unit else ''})")
    cells = [
        v4.new_markdown_cell(
            f"# Graph Explorer, step {number} of {len(STEPS)} (about {s.minutes} min)\n\n**“{c.statement}”**\n\n"
            "**Do:** run the cells in order: the first unpacks the engine the experiment runs on (the app's own "
            f"modules, {len(modules)} files: no clone, nothing to install but torch; the app ran torch "
            f"{torch.__version__}), the second runs this step's experiment on this machine, as the app's card runs "
            "it on its server, and the third sets its figures beside the server's.\n\n"
            f"**In the app**, the step says: {s.do}\n\n**Notice:** {s.notice}"),
        v4.new_markdown_cell(f"## Before you run it\n\n{prediction}"),
        v4.new_code_cell(
            f"# The app's modules this step imports ({len(modules)} files of explorer/ and models/, code "
            f"{code_version()}), zipped: unpacked\n# into a new folder of this user's, put first on the path."
            "\nimport base64\nimport hashlib\nimport io\nimport os\nimport sys\nimport tempfile\nimport zipfile\n\n"
            f"ENGINE = {base64.b64encode(zipped(modules)).decode()!r}\n" + _UNPACK,
            metadata={"jupyter": {"source_hidden": True}}),  # (a long line of base64: folded where Jupyter can)
        v4.new_code_cell(
            "QUICK = False  # True: the reduced experiment the app's tests run (seconds; not the claim's evidence)\n\n"
            f"from {claim_module(c)} import CLAIM  # {c.experiment}\n" + _RUN),
        v4.new_code_cell(
            "import json\n\nfrom explorer.views.tables import format_claim_against\n\n"
            f"SERVER = json.loads({json.dumps(server.as_dict() if server is not None else None)!r})\n"
            "# (the server's result when it made this notebook; None: it had not measured this step)\n"
            "print(format_claim_against(here.as_dict(), SERVER))\n"),
        v4.new_markdown_cell(f"## Ask the room\n\n{s.question}"),
    ]
    notebook = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)
