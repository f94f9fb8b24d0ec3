"""The generation lab, end to end: each cache kind in the compile worker (eager, and compiled when asked), then, for
several prompts, each generated alone against its row of the left-padded batch."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import torch

from explorer.core.budget import gib
from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.core.limits import MAX_ACTIVATION_BYTES, MAX_BATCH
from explorer.core.progress import Progress
from explorer.eager.capture import Capture
from explorer.eager.generation import left_padded, step_graph
from explorer.labs.generate.job import CacheRun, GenerateJob
from explorer.labs.generate.results import Alone, GenerateResult
from explorer.sources.edited import model_of
from explorer.sources.library import POSITIONS
from explorer.workers.protocol import JobRunner, run_said
from models.config import config_dict
from models.decoder import CACHES, cache_bytes


def prompts_of(text: str) -> list[str]:
    """One prompt per non-empty line, each as the tokenizer keeps it (truncated to the server's limit)."""
    prompts = [tokenize(line).text for line in text.splitlines() if line.strip()]
    if not prompts:
        raise InputError("type a prompt (several: one per line)")
    if len(prompts) > MAX_BATCH:
        raise InputError(f"{len(prompts)} prompts; at most {MAX_BATCH:,} in one batch (GE_MAX_BATCH)")
    return prompts


def run_generate(service: JobRunner, model: str, config: object, text: str, tokens: int, caches: list[str],
                 backend: str, repeats: int, graph_at: int = 1) -> Iterator[Progress | GenerateResult]:
    if unknown := [c for c in caches if c not in CACHES]:
        raise InputError(f"unknown cache kind(s) {unknown}; they are: {', '.join(CACHES)}")
    if not caches:
        raise InputError(f"name at least one cache kind: {', '.join(CACHES)}")
    if not 0 <= graph_at < tokens:
        raise InputError(f"the graph's step must be one of the {tokens} steps: 0 (the prefill) to {tokens - 1}")
    prompts = prompts_of(text)
    ids, pads = left_padded([p.encode() for p in prompts])
    limit = getattr(config, "max_positions", None)
    if "static" in caches and limit is not None and ids.shape[1] + tokens > limit:
        raise InputError(f"the static cache holds {limit} positions (max_positions); the longest prompt "
                         f"({ids.shape[1]} bytes) and {tokens} tokens need {ids.shape[1] + tokens}")
    layers, width = getattr(config, "layers", None), getattr(config, "width", None)
    if layers and width:  # the zoo's or the library's decoder: its largest cache, refused before it is built
        positions = getattr(config, "max_positions", POSITIONS) if "static" in caches else ids.shape[1] + tokens
        need = cache_bytes(layers, width, ids.shape[0], positions)
        if need > MAX_ACTIVATION_BYTES:
            raise InputError(f"this run's key/value cache would hold {gib(need)} ({ids.shape[0]} prompts x "
                             f"{positions} positions); the limit is {gib(MAX_ACTIVATION_BYTES)} "
                             "(GE_MAX_ACTIVATION_BYTES). Fewer prompts, a smaller max_positions or a narrower model.")
    values = config_dict(config)
    runs: list[CacheRun] = []
    for i, cache in enumerate(caches, 1):
        job = GenerateJob(model, values, ids.tolist(), pads.tolist(), tokens, cache, backend, repeats, graph_at)
        runs.append((yield from run_said(service, job, f"cache {i} of {len(caches)}, {cache}")))
    result = GenerateResult(model, values, prompts, pads.tolist(), tokens, repeats, runs, graph_at)
    if len(prompts) > 1:
        batched = runs[0]
        for b, prompt in enumerate(prompts):
            job = GenerateJob(model, values, [list(prompt.encode())], [0], tokens, batched.cache, "", repeats,
                              graph_at)
            alone = yield from run_said(service, job, f"prompt {b + 1} of {len(prompts)}, alone")
            result.alone.append(Alone(prompt, alone.tokens[0] == batched.tokens[b],
                                      float((alone.logits[0] - batched.logits[b]).abs().max()),
                                      statistics.median(sum(r) for r in alone.eager_s)))
    yield result


def step_graphs(report: dict[str, Any], at: int) -> dict[str, Capture]:
    """Each cache kind's autograd graph at step `at` of a run this lab reported, captured here: the model rebuilt
    from its config replays the steps before `at` with the tokens that cache kind generated (the Playground's step
    slider, without generating again)."""
    tokens = report["tokens"]
    if not isinstance(at, int) or not 0 <= at < tokens:
        raise InputError(f"the graph's step must be one of the {tokens} steps: 0 (the prefill) to {tokens - 1}; "
                         f"got {at!r}")
    model = model_of(report["model"], report["config"])
    ids, pads = left_padded([p.encode() for p in report["prompts"]])
    return {run["cache"]: step_graph(model, ids, pads, torch.tensor(run["tokens"]), run["cache"], at)
            for run in report["caches"]}
