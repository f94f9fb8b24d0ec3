"""The command line: its verbs through `explorer.cli.main` in this process (tests.helpers.cli), and once as a user
runs it, `python -m explorer ...` in a subprocess."""

import json
import re
import subprocess
import sys

import pytest

from explorer.cli import main
from explorer.labs.ddp.view import format_ddp
from explorer.labs.debug.view import format_debug
from explorer.labs.deploy.view import format_deploy
from tests.helpers import cli

REQUIRED_KEYS = [
    "model", "config", "tokens", "params", "graph.nodes", "graph.edges", "eager.forward.median_ms",
    "eager.forward.iqr_ms", "eager.train_step.median_ms", "memory.saved_bytes", "memory.peak_forward_bytes",
    "memory.peak_train_bytes", "memory.param_bytes", "trace", "machine",
]


def _shell(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer", *args], capture_output=True, text=True, timeout=120)


def _get(report: dict, dotted: str):
    for part in dotted.split("."):
        report = report[part]
    return report


def test_models_lists_every_config_field():
    out = cli("models", "--json")
    assert out.returncode == 0, out.stderr
    listing = {m["name"]: m for m in json.loads(out.stdout)}
    assert set(listing) == {"rnn", "transformer", "early_exit", "tree", "decoder", "gpt2", "bert", "llama",
                            "t5"}
    layers = next(f for f in listing["rnn"]["config"] if f["name"] == "layers")
    assert layers == {"name": "layers", "type": "int", "default": 1, "min": 1, "max": 4,
                      "help": "Stacked recurrent layers; each unrolls over all tokens."}
    text = _shell("models")  # the entry point itself, once
    assert text.returncode == 0 and "--set cell=" in text.stdout


def test_inspect_json_has_the_documented_keys():
    out = cli("inspect", "--model", "rnn", "--set", "layers=2", "--set", "hidden=16",
               "--text", "Hello 👋", "--compare", "Hi", "--json", "--lines")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    for key in [*REQUIRED_KEYS, "diff.nodes_added", "diff.nodes_removed"]:
        assert _get(report, key) is not None, key
    assert report["tokens"] == len("Hello 👋".encode())
    assert report["config"]["layers"] == 2
    assert report["trace"]["layers.1.fwd"] == report["tokens"]
    assert report["diff"]["nodes_added"] > 0 and report["diff"]["nodes_removed"] == 0
    assert report["machine"]["threads"] >= 1 and report["machine"]["device"] == "cpu"
    assert report["memory"]["peak_train_bytes"] > report["memory"]["peak_forward_bytes"] > 0
    # the lines that ran: the time step's line once per token, its nodes those of the graph's cells
    step = next(x for x in report["lines"]["lines"] if x["code"] == "new = cell(x, state)")
    assert report["lines"]["files"] == ["models/rnn.py"] and step["ran"] == 2 * report["tokens"]  # two layers
    loop = next(b for b in report["lines"]["branches"] if b["code"] == "for t, x in enumerate(xs):")
    assert loop["body"] == 2 * report["tokens"] and loop["kind"] == "for" and not loop["by_data"]


def test_inspect_table():
    out = cli("inspect", "--model", "tree", "--text", "ab cd.", "--lines", "--costs")
    assert out.returncode == 0, out.stderr
    assert "module calls:" in out.stdout and "compose" in out.stdout and "forward" in out.stdout
    # five composed pairs for six bytes: the compose line ran five times
    assert re.search(r"models/tree\.py:\d+ +5 +\d+ +z = self\.proj", out.stdout), out.stdout
    # where the time went: the composing cell's module holds most nodes, the loss's line is named as such
    assert "The train step profiled in a pass of its own (5 repeats" in out.stdout
    per_module = out.stdout.split("per module:\n")[1].split("\n\n")[0].splitlines()
    assert per_module[0].split()[:2] == ["where", "nodes"] and any(r.startswith("compose ") for r in per_module)
    assert per_module[0].split()[-2:] == ["inference", "ms"]  # the inference forward's share per module too
    assert re.search(r"the forward [\d.]+ ms, the nodes' inference sum \d+% of it", out.stdout), out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["inspect", "--model", "rnn", "--set", "layers=9", "--text", "x"], "layers must be between 1 and 4"),
        (["inspect", "--model", "rnn", "--set", "depth=2", "--text", "x"], "unknown config field 'depth'"),
        (["inspect", "--model", "rnn", "--set", "layers", "--text", "x"], "--set takes KEY=VALUE"),
        (["inspect", "--model", "gpt", "--text", "x"], "unknown model 'gpt'; models are: rnn, transformer"),
        (["inspect", "--model", "rnn", "--text", ""], "empty"),
        (["inspect", "--model", "rnn"], "required: --text"),
        (["frobnicate"], "invalid choice"),
        (["batch", "--model", "rnn", "--n", "0"], "n must be between 1 and"),
        (["batch", "--model", "rnn", "--lengths-from", "normal"], "invalid choice: 'normal'"),
        (["batch", "--model", "rnn", "--min-len", "50", "--max-len", "10"], "lengths must satisfy"),
        (["batch", "--model", "rnn", "--bucket-width", "0"], "bucket_width must be between 1 and"),
        (["batch", "--model", "rnn", "--lines", "/nonexistent/file"], "cannot read --lines"),
        (["deploy", "--model", "rnn", "--lengths", "0,8"], "lengths must be between 1 and"),
        (["deploy", "--model", "rnn", "--routes", "jit.freeze"], "routes: unknown 'jit.freeze'; choose from jit.trace"),
        (["deploy", "--model", "rnn", "--set", "loop=while"], "loop must be one of"),
        (["debug", "--model", "rnn", "--bug", "typo"], "invalid choice: 'typo'"),
        (["debug", "--model", "rnn", "--bug", "shape", "--mode", "jit"], "modes: unknown 'jit'; choose from eager"),
        (["ddp", "--scenario", "unused", "--model", "rnn"], "runs on early_exit, not rnn"),
        (["ddp", "--scenario", "uneven", "--model", "rnn", "--world-size", "99"], "world_size must be between 2 and"),
        (["ddp", "--scenario", "gossip", "--model", "rnn"], "invalid choice: 'gossip'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, message, capsys):
    # In this process (the parser and the checks are the CLI's own; a subprocess per case cost seconds of torch
    # imports each): the shell's view of the same is the next test.
    try:
        code = main(args)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2
    lines = [ln for ln in err.splitlines() if not ln.startswith(("USDT", "STAGE"))]
    assert message in lines[-1]
    assert "Traceback" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["inspect", "--model", "rnn", "--set", "layers=9", "--text", "x"], "layers must be between 1 and 4"),
    (["inspect", "--model", "gpt", "--text", "x"], "unknown model 'gpt'; models are: rnn, transformer"),
])
def test_a_bad_argument_from_the_shell_exits_2_with_one_line_and_no_traceback(args, message):
    out = cli(*args)
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if not ln.startswith(("USDT", "STAGE"))]
    assert message in lines[-1]
    assert "Traceback" not in out.stderr


BATCH_KEYS = ["name", "supported", "forward_ms", "train_step_ms", "tokens_per_s", "padding_fraction", "flops_total",
              "flops_useful", "peak_bytes", "max_abs_diff", "distinct_shapes"]


def test_batch_json_reports_every_strategy():
    out = cli("batch", "--model", "rnn", "--set", "hidden=16", "--lengths-from", "zipf", "--n", "12",
               "--max-len", "60", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["sentences"] == 12 and len(report["lengths"]) == 12 and max(report["lengths"]) <= 60
    by_name = {s["name"]: s for s in report["strategies"]}
    assert list(by_name) == ["pad", "bucket", "pack", "nested", "loop"]
    for s in by_name.values():
        assert set(BATCH_KEYS) <= set(s)
        if s["supported"]:
            assert all(s[k] is not None for k in BATCH_KEYS), s
            assert s["agrees"], s
        else:
            assert s["note"]
    assert by_name["loop"]["padding_fraction"] == 0 and by_name["pad"]["padding_fraction"] > 0
    assert by_name["loop"]["distinct_shapes"] == len(set(report["lengths"]))
    assert report["verdict"].startswith("Fastest correct forward")


def test_batch_table_from_typed_lines(tmp_path):
    lines = tmp_path / "sentences.txt"
    lines.write_text("Hi.\nA longer sentence here, with commas.\n\n😀 emoji too\n", encoding="utf-8")
    out = cli("batch", "--model", "tree", "--lines", str(lines))
    assert out.returncode == 0, out.stderr
    assert "3 sentences" in out.stdout and "not supported: this model has no padded form" in out.stdout
    assert "verdict: Fastest correct forward: the per-sample loop itself" in out.stdout


@pytest.mark.slow
def test_batch_compile_adds_compiled_figures():
    out = cli("batch", "--model", "transformer", "--set", "layers=1", "--set", "width=32", "--n", "3",
               "--max-len", "12", "--compile", "--backend", "eager", "--json")
    assert out.returncode == 0, out.stderr
    for s in json.loads(out.stdout)["strategies"]:
        c = s["compiled"]
        if s["supported"]:
            assert c["backend"] == "eager" and c["compiles"] >= 1 and c["forward_ms"] > 0, c
            assert c["speedup"] is not None and c["fallback"] is None and c["error"] is None
        else:
            assert c is None


def test_deploy_json_and_table_say_which_routes_survive(tmp_path):
    out = cli("deploy", "--model", "early_exit", "--text", "The cat sat on the mat.", "--lengths", "5",
               "--routes", "jit.trace,export", "--out", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    trace, export = report["routes"]
    assert (trace["route"], trace["outcome"], export["outcome"]) == ("jit.trace", "silently wrong", "fails loudly")
    assert trace["artefact"] == str(tmp_path / "traced.pt") and (tmp_path / "traced.pt").exists()
    assert export["where"].startswith("models/early_exit.py:") and "Avoid jit.trace" in report["verdict"]
    table = format_deploy(report)  # what the command prints without --json, from the same report
    assert f"{'jit.trace':<18} SILENTLY WRONG" in table and f"{'export':<18} FAILS LOUDLY" in table
    assert table.splitlines()[-1] == f"verdict: {report['verdict']}"


def test_debug_json_and_table_put_the_modes_side_by_side():
    out = cli("debug", "--model", "transformer", "--bug", "shape", "--mode", "eager,traced", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    eager, traced = report["modes"]
    assert eager["failed"] and eager["failure"]["where"].startswith("models/bugs.py:")
    assert traced["mode"] == "traced" and not traced["failed"]  # traced at 8 tokens, the bug's `if` froze False
    assert "traced raises nothing" in report["verdict"]
    assert report["verdict"].startswith("shape bug on long inputs: eager names models/bugs.py")
    table = format_debug(report)  # what the command prints without --json, from the same report
    assert f"{'eager':<22} FAILS after" in table and f"{'traced':<22} no error" in table
    assert table.splitlines()[-1] == f"verdict: {report['verdict']}"


def test_ddp_json_and_table_say_how_each_rank_ended():
    out = cli("ddp", "--scenario", "stragglers", "--model", "transformer", "--set", "layers=1", "--set", "width=32",
               "--steps", "2", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["states"] == [["finished", "finished"]] and report["config"]["width"] == 32
    (run,) = report["runs"]
    assert {s["kind"] for s in run["ranks"][1]["report"]["segments"]} >= {"forward", "backward", "all-reduce"}
    assert report["machine"]["device"] == "cpu" and len(report["costs"]) == 4
    table = format_ddp(report)  # what the command prints without --json, from the same report
    # 2 steps and a warm-up, per sharding
    assert "rank 0 ran to its end, 6 steps in all; rank 1 ran to its end, 6 steps in all" in table
    assert table.splitlines()[-1].startswith("verdict: Round-robin sharding: median step")
