"""Every limit the app enforces, in one place; an operator raises them with environment variables.

Each limit is declared once, with its variable and what it protects: reports (`describe`), the UI's
limits table (`table`) and docs/operating.md's table all come from these declarations."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    key: str
    env: str
    value: float
    help: str


LIMITS: list[Limit] = []


def _limit(key: str, default: float, cast: type, help: str) -> float:
    """A positive number from GE_<KEY>, or the default; a bad value stops start-up with a message."""
    env = "GE_" + key.upper()
    raw = os.environ.get(env)
    value = default
    if raw is not None:
        try:
            value = cast(raw)
        except ValueError:
            raise SystemExit(f"{env} must be a positive {cast.__name__}; got {raw!r}") from None
        if not value > 0:
            raise SystemExit(f"{env} must be positive; got {raw!r}")
    LIMITS.append(Limit(key, env, value, help))
    return value


MAX_TOKENS = _limit("max_tokens", 512, int, "tokens per input; longer text is truncated with a notice")
MAX_TEXT_CHARS = _limit("max_text_chars", 200_000, int,
                        "characters per request, refused before any work (a full lab batch is 256 x 512 bytes)")
# Below the server's own ceiling: uvicorn's HTTP parser (httptools, requirements.txt) refuses a request head over
# 64 KiB with a bare 400, before any middleware runs (h11, its pure-Python one, over 16 KiB whenever the head arrives
# in more than one read). The app's longest link is 3 characters per token (each byte percent-encoded) and its
# settings.
MAX_ADDRESS_CHARS = _limit("max_address_chars", max(8_192, 3 * MAX_TOKENS + 2_048), int,
                           "characters of a page address; a longer (hand-made) link gets a page saying so (up to the "
                           "server's 64 KiB request head; past that its HTTP parser answers a bare 400)")
MAX_PARAMS = _limit("max_params", 64_000_000, int, "parameters of one model (the knobs' ranges reach 63M)")
MAX_ACTIVATION_BYTES = _limit(
    "max_activation_bytes", 2**30, int,
    "estimated bytes a train step keeps for backward: an architecture at the token limit, a lab strategy "
    "on its whole batch")
MAX_BATCH = _limit("max_batch", 256, int, "sentences per batch in the batching lab")
MAX_GENERATED = _limit("max_generated", 256, int, "tokens one generation makes (the generation lab)")
MAX_GENERATION_STEPS = _limit("max_generation_steps", 12_000, int,
                              "decoder steps one generation request takes: tokens x cache kinds x timed runs x "
                              "sides, and each prompt alone")
MAX_DRAWN_NODES = _limit("max_drawn_nodes", 300, int, "graphs beyond this many nodes are drawn collapsed")
FORWARD_BUDGET_S = _limit("forward_budget_s", 0.08, float, "seconds of timing per forward figure")
TRAIN_BUDGET_S = _limit("train_budget_s", 0.10, float, "seconds of timing per train-step figure")
# One thread is steadier than two on a 2-core machine (and leaves a core for the server).
THREADS = _limit("threads", 1, int, "torch threads every figure is measured with")
MEASURE_WORKERS = _limit("measure_workers", max(1, len(os.sched_getaffinity(0)) // 2), int,
                         "measuring cores, one timing process pinned to each (default: half the cores; at least one "
                         "core is always left to the server)")
COMPILE_WORKERS = _limit("compile_workers", max(1, len(os.sched_getaffinity(0)) // 4), int,
                         "compile worker processes (default: a quarter of the cores); a session keeps its own")
MAX_RUN_S = _limit("max_run_s", 10.0, float,
                   "seconds one run's capture or timings may take, estimated before they start: a longer capture is "
                   "refused, longer timings are shortened, then not taken (and it is said); a run its estimate let "
                   "start is still stopped at the bound (the capture at its next module call, the timings before "
                   "their next block), with a message")
TIMING_REUSE_S = _limit("timing_reuse_s", 60.0, float,
                        "seconds a timing of the same model, architecture and text is reused for another session "
                        "(labelled with its age; a person can ask for a fresh one)")
CACHED_RUNS = _limit("cached_runs", 128, int,
                     "runs whose graph, saved bytes and memory peaks are kept for every session (they depend only "
                     "on model, architecture and text; least recently used dropped)")
MAX_QUEUE = _limit("max_queue", 128, int, "runs waiting for the measurement queue before 'busy, try again' (a lecture "
                                                    "hall of a hundred all waiting at once fits)")
LOAD_QUEUE = _limit("load_queue", 4, int, "with this many waiting, timing budgets are cut: halved, and shorter "
                    "as the queue grows, to a quarter (and it is said)")
PROFILE_QUEUE = _limit("profile_queue", 16, int, "with this many runs waiting, an input whose memory was never "
                      "profiled is timed without its profile (it keeps the measuring core several times longer than "
                      "the timings; profiled once the queue is shorter, and it is said)")
MAX_LIVE_MODELS = _limit("max_live_models", 12, int, "built models kept across all sessions (least recently "
                         "used evicted; rebuilt identically on demand)")
HISTORY_LENGTH = _limit("history_length", 200, int, "runs kept per session for the history plot")
COMPILE_TIMEOUT_S = _limit("compile_timeout_s", 120.0, float,
                           "seconds before a compile job is stopped (the worker is killed and restarted)")
DEPLOY_TIMEOUT_S = _limit("deploy_timeout_s", 300.0, float,
                          "seconds per deployment route (an export, a package) before its worker is replaced")
DDP_TIMEOUT_S = _limit("ddp_timeout_s", 900.0, float,
                       "seconds for one multi-process scenario, all its runs, before its worker is replaced")
DDP_RUN_S = _limit("ddp_run_s", 300.0, float,
                   "seconds one start of the training processes may run before every one of them is killed")
CODE_TIMEOUT_S = _limit("code_timeout_s", 20.0, float,
                        "seconds one build or run of code edited in the browser may take before its worker is killed")
CODE_CPU_S = _limit("code_cpu_s", 30.0, float, "seconds of CPU time one job of edited code may use (RLIMIT_CPU)")
CODE_MEMORY_MB = _limit("code_memory_mb", 3072, int,
                        "megabytes of address space of the worker that runs edited code (RLIMIT_AS, torch included)")
CODE_PROCS = _limit("code_procs", 16, int, "processes and threads the edited code may start (RLIMIT_NPROC)")
CLAIMS_TTL_S = _limit("claims_ttl_s", 3600.0, float,
                      "seconds a claim's measured result is shown to everyone before a visit measures it again")
MAX_ARTEFACT_BYTES = _limit("max_artefact_bytes", 64 * 2**20, int,
                            "bytes of one file offered for download: a deployment artefact, a Perfetto trace, a "
                            "compile report")
WORKER_JOBS = _limit("worker_jobs", 25, int,
                     "jobs the deployment or multi-process worker runs before it is replaced, between two jobs (a "
                     "route is one job): what its jobs leave behind cannot grow without bound")
WORKER_RSS_MB = _limit("worker_rss_mb", 2048, int,
                       "megabytes resident past which any worker process is replaced after its job (measured, not "
                       "estimated)")
MAX_DEPLOY_CHECKS = _limit("max_deploy_checks", 40, int,
                           "routes x inputs one deployment request may check (the tab's default is 6 x 5 = 30: every "
                           "route but aoti), "
                           "estimated and refused before any route runs")
MAX_RANK_STEPS = _limit("max_rank_steps", 160, int,
                        "processes x steps one multi-process request may run per phase, refused before any starts")
MAX_BATCH_TOKENS = _limit("max_batch_tokens", 256 * 512, int,
                          "sentences x longest sentence (tokens, padded) one batching request may run, refused "
                          "before it runs")
MAX_SERVED_TOKENS = _limit("max_served_tokens", 500_000, int,
                           "tokens one optimization request serves, summed over its strategies (each request served "
                           "and its eager pair), refused before it runs")
RECOMPILE_LIMIT = _limit("recompile_limit", 8, int, "dynamo's recompile_limit in the compile worker")


def named(key: str) -> Limit:
    """A limit's declaration (its variable, to name in a refusal), by key."""
    return next(limit for limit in LIMITS if limit.key == key)


def describe() -> dict[str, float | int]:
    return {limit.key: limit.value for limit in LIMITS}


def table() -> list[list[str]]:
    """Rows of (variable, value in force, what it limits), for the UI."""
    return [[limit.env, f"{limit.value:,}" if isinstance(limit.value, int) else f"{limit.value:g}", limit.help]
            for limit in LIMITS]
