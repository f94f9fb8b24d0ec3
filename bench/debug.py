"""Time to the error and traceback length per mode: `python -m bench.debug` -> bench/RESULTS-debug.md.

Every bug on every model of the zoo at its default config, in every mode (compiled modes in a compile worker,
fresh dynamo state each), at the default text; and the cost of each NaN locator against a plain step."""

from __future__ import annotations

import time

from bench.common import parser
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.labs.debug.lab import DebugResult, run_debug
from explorer.labs.debug.modes import MODES, ModeOutcome
from explorer.workers.process import WorkerProcess
from models import ZOO, make_config
from models.bugs import BUGS


def _mode_row(model: str, bug: str, m: ModeOutcome) -> str:
    f = m.failure
    if f is None:
        return f"| {model} | {bug} | {m.mode} | no | {m.seconds:.2f} | — | — | — | — |"
    message = f"{f.exception}: {f.message}".replace("|", "\\|")[:90]
    return (f"| {model} | {bug} | {m.mode} | yes | {m.seconds:.2f} | {message} | {f.where or 'none'} | "
            f"{f.frames} | {f.lines} |")


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-debug.md").parse_args(argv)
    models = ["rnn"] if args.quick else list(ZOO)
    bugs = ["shape"] if args.quick else list(BUGS)
    modes = ["eager", "compiled (eager)"] if args.quick else list(MODES)
    machine.keep_off_measure_cores()
    machine.pin_threads()  # as the app and the CLI: the thread count every figure is measured with
    rows, nan_rows = [], []
    started = time.monotonic()
    service = WorkerProcess(timeout_s=300)
    try:
        for model in models:
            for bug in bugs:
                *_, result = run_debug(service, model, make_config(model), bug, DEFAULT_TEXT, modes)
                assert isinstance(result, DebugResult)
                rows += [_mode_row(model, bug, m) for m in result.modes]
                nan_rows += [f"| {model} | {bug} | {f.method} | {f.found} | {f.where.split(': ')[0] or '—'} | "
                             f"{f'{f.ms:.2f}' if f.ms is not None else '—'} | {f.cost_said()} |"
                             for f in result.findings]
                print(model, bug, "done", flush=True)
    finally:
        service.stop()
    m = machine.describe()
    lines = ["# The same bug in eager, compiled and traced code", "",
             f"Measured by `python -m bench.debug` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} thread(s), torch {m['torch']}, {time.strftime('%Y-%m-%d')}, in "
             f"{time.monotonic() - started:.0f} s. One training step per mode at the default text "
             f"({len(DEFAULT_TEXT.encode())} tokens); seconds from the call to the exception (compile included), "
             "one run each; traced = `torch.jit.trace` at 8 tokens, then the input.", "",
             "| model | bug | mode | fails | seconds | exception: first line | last user line named | frames | "
             "lines |", "|---|---|---|---|---:|---|---|---:|---:|", *rows, "",
             "## Where did the NaN come from", "",
             "Each method once for what it names, then timed against a plain training step in rotated rounds (a "
             "paired comparison: the ratio with its 95% interval).", "",
             "| model | bug | method | what it names | user line | ms a step under it (median) | "
             "against a plain step |",
             "|---|---|---|---|---|---:|---|", *nan_rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
