"""The few lines that apply a strategy to the model, generated from the choice: they build the model as the lab did
and define `serve(ids)`, which answers one request (a (1, n) tensor of byte ids). Tests run them."""

from __future__ import annotations

from typing import Any

from torch import nn

from explorer.compile.observe import SCALAR_OUTPUTS
from explorer.labs.optimize.strategies import ONE_OP, STRATEGIES, repeated_blocks, scans


def _blocks_path(model: nn.Module) -> str:
    """The attribute path of the model's repeated blocks (`blocks`, `net.transformer.h`)."""
    blocks = repeated_blocks(model)
    return next(name for name, m in model.named_modules() if isinstance(m, nn.ModuleList)
                and list(m) == blocks)


def snippet(name: str, config: dict[str, Any], strategy: str, backend: str, model: nn.Module,
            boundaries: tuple[int, ...] = (), span: tuple[int, int] = (2, 3)) -> str:
    """Python that applies `strategy` to model `name` at `config` (`model`: that model, read for its blocks;
    `boundaries`: a padding strategy's buckets; `span`: the workload's shortest and longest request)."""
    if strategy == "one_op_loop":
        config = config | {k: v for k, v in ONE_OP.items() if hasattr(model.cfg, k)}
    head = ["import torch", "", "from explorer.sources.registry import build_model, make_config", "",
            f"model = build_model({name!r}, make_config({name!r}, {config!r})).eval()"]
    if strategy == "warm_start":
        head = ["from pathlib import Path", "", *head]
    if scans(config):  # (the shipped config or the one-op rewrite)
        head.append(f"{SCALAR_OUTPUTS.replace('=', ' = ')}  # torch 2.13's inductor reads a scan's step with .item()")
    compiled = f"torch.compile(model, backend={backend!r}"
    if strategy == "eager":
        body = ["serve = model  # no compiler"]
    elif strategy in ("auto", "one_op_loop"):
        body = [f"serve = {compiled})  # dynamic=None: static first, symbolic after a length changes"]
    elif strategy == "pgo":
        body = ['torch.compiler.config.job_id = "my-service"  # the profile, kept in the cache dir across processes',
                f"serve = {compiled})"]
    elif strategy == "warm_start":
        body = ['CACHE = Path("compile-cache.bin")  # saved by the first process that served, read by the next ones',
                "if CACHE.exists():", "    torch.compiler.load_cache_artifacts(CACHE.read_bytes())  # before compiling",
                f"serve = {compiled})", "", "", "def save():  # once the first process has served its requests",
                "    if saved := torch.compiler.save_cache_artifacts():", "        CACHE.write_bytes(saved[0])"]
    elif strategy == "dynamic":
        body = [f"serve = {compiled}, dynamic=True)"]
    elif STRATEGIES[strategy].stance_from:  # a warm-up under the default stance first
        stance = STRATEGIES[strategy].stance
        body = [f"compiled = {compiled})", "", "", "def serve(ids):",
                f"    with torch.compiler.set_stance({stance!r} if serve.warmed else 'default'):",
                "        out = compiled(ids)  # the first request compiles; the stance decides the rest",
                "    serve.warmed = True", "    return out", "", "", "serve.warmed = False"]
    elif (stance := STRATEGIES[strategy].stance) != "default":
        body = [f"serve = {compiled})", f"torch.compiler.set_stance({stance!r})  # for every call from here on"]
    elif strategy == "mark_dynamic":
        body = [f"compiled = {compiled})", "", "", "def serve(ids):",
                f"    torch._dynamo.mark_dynamic(ids, 1, min={max(2, span[0])}, max={max(3, span[1])})",
                "    return compiled(ids)"]
    elif strategy == "regional":
        body = [f"for block in model.{_blocks_path(model)}:",
                f"    block.compile(backend={backend!r})  # one code cache for every block", "serve = model"]
    else:  # buckets, pow2: pad up to the boundaries, one static graph each
        body = [f"BOUNDARIES = {tuple(boundaries)!r}", f"compiled = {compiled}, dynamic=False)", "", "",
                "def serve(ids):", "    n = ids.shape[1]", "    bucket = next(b for b in BOUNDARIES if b >= n)",
                "    return compiled(torch.nn.functional.pad(ids, (0, bucket - n)), torch.tensor([n]))"]
    return "\n".join([*head, *body]) + "\n"
