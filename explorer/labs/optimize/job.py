"""One strategy serving the whole workload in a fresh worker process, as a server would after a deploy: the model
built, the strategy applied, then every request in order, answered and timed (compiles included where they
happen), each followed by the eager forward of the same request (its pair, and the reference its output is checked
against). The compiles are logged with the request that asked for each; the process's peak resident memory is read
at the end (a fresh process: its peak is this strategy's)."""

from __future__ import annotations

import contextlib
import inspect
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch._dynamo as dynamo
import torch._dynamo.config as dynamo_config
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
import torch.compiler.config as compiler_config
from torch import nn
from torch._dynamo.utils import counters
from torch._inductor.runtime.cache_dir_utils import cache_dir
from torch.compiler._cache import CacheArtifactManager
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError
from torch.utils.benchmark.utils.common import set_torch_threads

from explorer.compile.observe import CompileAt, CompileLog, CountingBackend, message_line, user_line
from explorer.core.limits import THREADS
from explorer.core.machine import on_core
from explorer.core.workload import Workload
from explorer.eager.timing import measure, measuring_core
from explorer.labs.optimize.planner import Costs, plan_of
from explorer.labs.optimize.strategies import ONE_OP, STRATEGIES, Setting, scans
from explorer.sources.edited import model_of
from explorer.workers.process import WorkerProcess, resident_mb
from explorer.workers.protocol import Job, WorkerContext
from models.tokenizer import encode

OPTIMIZE_TIMEOUT_S = 300.0  # a strategy's time bound by default: past it, it is stopped and reported as such
COMPILED_GRAPH_CACHES = ("fxgraph", "aotautograd")  # inductor's and AOT autograd's, in inductor's cache directory


@contextlib.contextmanager
def cold(profile: str = "") -> Iterator[None]:
    """Compiles as on a fresh deploy: no graph served by inductor's FX-graph or AOT-autograd caches from an earlier
    run (another strategy's, or the last request's), and no automatic-dynamic profile carried from another
    process, unless `profile` names one (dynamo's job id: the profile a recording run left under it is read, and
    this run's shape decisions are written back). Inductor's toolchain stays warm in its cache directory: that cost
    is the machine's, not a strategy's."""
    with dynamo_config.patch(automatic_dynamic_local_pgo=bool(profile)), \
            compiler_config.patch(job_id=profile or None), inductor_config.patch(fx_graph_cache=False), \
            functorch_config.patch(enable_autograd_cache=False):
        yield


def link_shared_caches(own: str, private: tuple[str, ...] = COMPILED_GRAPH_CACHES) -> None:
    """Make `own` an inductor cache directory whose entries are the shared one's (its toolchain, compiled kernels,
    locks), linked, but for `private` ones, which start empty there."""
    shared = cache_dir()
    for entry in set(os.listdir(shared)) - set(private):
        os.symlink(os.path.join(shared, entry), os.path.join(own, entry))


@contextlib.contextmanager
def own_caches() -> Iterator[None]:
    """Compiles as a fresh deploy that reads inductor's FX-graph and AOT-autograd caches (the mega-cache's): both on,
    in directories of this run's own that start empty, so a graph read from them is one this run compiled or loaded.
    The rest of inductor's cache directory (its toolchain, the compiled kernels) is shared through links, warm as
    for every strategy; no automatic-dynamic profile, as for every strategy but pgo."""
    shared = cache_dir()  # (which also sets TORCHINDUCTOR_CACHE_DIR, restored below)
    with tempfile.TemporaryDirectory(prefix="graph-explorer-caches-") as own:
        link_shared_caches(own)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = own
        try:
            with dynamo_config.patch(automatic_dynamic_local_pgo=False), compiler_config.patch(job_id=None), \
                    inductor_config.patch(fx_graph_cache=True), functorch_config.patch(enable_autograd_cache=True), \
                    CacheArtifactManager.with_fresh_cache():
                yield
        finally:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = shared


@dataclass
class Served:
    """One strategy over the workload: each request's seconds (its own, and eager's right after it), the
    compiles along the stream, the tokens computed (pads included), its outputs against eager's."""

    strategy: str
    seconds: list[float] = field(default_factory=list)  # per request, compiles included where they happened
    eager_s: list[float] = field(default_factory=list)  # per request, the eager forward right after it
    compiles: list[CompileAt] = field(default_factory=list)  # `at`: the request that asked for it
    compiled: list[bool] = field(default_factory=list)  # per request: whether compiled code ran for it
    computed_tokens: int = 0
    max_diff: float = 0.0  # max |output - eager's| over the requests
    build_s: float = 0.0  # applying the strategy before the first request (compiles come later, lazily)
    peak_rss_mb: float = 0.0  # the worker process's peak resident memory after serving
    cache_hits: int = 0  # graphs inductor read from its FX-graph cache (on only where the strategy loads one)...
    cache_misses: int = 0  # ...and graphs it had to compile
    artifacts: bytes = field(default=b"", repr=False)  # a recording run's mega-cache, for the measured run
    skipped: str = ""  # why the strategy does not apply to this model
    error: str = ""  # it failed while serving: the message
    cores: tuple[int, ...] = ()
    threads: int = THREADS

    @property
    def total_s(self) -> float:
        """Serving the whole stream: the set-up and every request, compiles included."""
        return self.build_s + sum(self.seconds)


@dataclass(frozen=True)
class ServeJob(Job[Served]):
    model: str
    config: dict
    lengths: tuple[int, ...]
    strategy: str
    backend: str
    plans: dict[str, tuple[int, ...]]  # bucket plan name -> boundaries
    profile: str = ""  # the automatic-dynamic profile's job id (the pgo strategy: recorded, then read)
    records: bool = False  # the recording run of a strategy that is `recorded`
    artifacts: bytes = field(default=b"", repr=False)  # the mega-cache its recording run saved, loaded before serving

    def run(self, ctx: WorkerContext) -> Served:
        ctx.held = None
        dynamo.reset()
        strategy = STRATEGIES[self.strategy]
        served = Served(self.strategy)
        reference = model_of(self.model, self.config).eval()  # eager, the shipped config: what must not change
        config = self.config
        if strategy.one_op:
            config = config | {k: v for k, v in ONE_OP.items() if hasattr(reference.cfg, k)}
        model = model_of(self.model, config).eval()  # its own copy: regional compilation changes it in place
        log = CompileLog()
        plans = {name: plan_of(self.lengths, b) for name, b in self.plans.items()}
        plan = plans.get(strategy.pads_to)
        counter = CountingBackend(self.backend, log.on_graph)
        takes_lengths = "lengths" in inspect.signature(model.forward).parameters
        setting = Setting(counter, self.backend == "inductor", min(self.lengths), max(self.lengths), plan,
                          takes_lengths)
        if reason := strategy.applies(model, setting):
            served.skipped = reason
            return served
        requests = [torch.tensor([encode(text)]) for text in Workload(self.lengths, "").texts]
        caches = own_caches() if strategy.recorded == "mega-cache" else cold(self.profile)
        hits, misses = counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]
        with set_torch_threads(THREADS), torch.no_grad(), caches, measuring_core() as core, on_core(core) as cores, \
                dynamo_config.patch(capture_scalar_outputs=scans(config)):
            began = time.time()
            start = time.perf_counter()
            if self.artifacts:  # a deploy's start: the mega-cache in the caches before the model is compiled
                torch.compiler.load_cache_artifacts(self.artifacts)
            serve = strategy.build(model, setting)
            served.build_s = time.perf_counter() - start
            ctx.phase(f"{strategy.title}: serving {len(requests)} requests")
            try:
                for i, ids in enumerate(requests):
                    log.at, calls = i, counter.calls
                    stance = strategy.stance if i >= strategy.stance_from else "default"
                    if i % 2:  # eager's pair first every other request: the order inside a pair rotates
                        expected, eager_s = _timed(reference, ids)
                    with torch.compiler.set_stance(stance):
                        out, seconds = _timed(serve, ids)
                    served.seconds.append(seconds)
                    served.compiled.append(counter.calls > calls)
                    if not i % 2:
                        expected, eager_s = _timed(reference, ids)
                    served.eager_s.append(eager_s)
                    served.max_diff = max(served.max_diff, float((out - expected).abs().max()))
                    served.computed_tokens += plan.bucket(ids.shape[1]) if plan else ids.shape[1]
                    if i % 20 == 19:
                        ctx.phase(f"{strategy.title}: request {i + 1} of {len(requests)}")
            except ConstraintViolationError as e:  # the model, not the strategy: its code fixes the length
                served.skipped = (f"its code makes the length a constant{user_line(e)}, so the length cannot be "
                                  f"marked dynamic (ConstraintViolationError at request {log.at + 1})")
            except Exception as e:  # a compile or a forward that failed: said, with the request it failed at
                served.error = f"{type(e).__name__} at request {log.at + 1}: {message_line(e)[:300]}"
            served.compiles = log.since(began)
            if self.records and strategy.recorded == "mega-cache" and (saved := torch.compiler.save_cache_artifacts()):
                served.artifacts = saved[0]
        served.cache_hits = counters["inductor"]["fxgraph_cache_hit"] - hits
        served.cache_misses = counters["inductor"]["fxgraph_cache_miss"] - misses
        served.cores = cores
        served.peak_rss_mb = resident_mb(os.getpid(), "VmHWM") or 0.0  # this process image's own peak
        dynamo.reset()
        return served


def _timed(fn: Callable[[torch.Tensor], torch.Tensor], ids: torch.Tensor) -> tuple[torch.Tensor, float]:
    start = time.perf_counter()
    out = fn(ids)
    return out, time.perf_counter() - start


@dataclass(frozen=True)
class ProbeJob(Job[Costs]):
    model: str
    config: dict
    short: int  # the workload's shortest request and its longest: a static compile at each
    long: int
    backend: str

    def run(self, ctx: WorkerContext) -> Costs:
        ctx.held = None
        model = model_of(self.model, self.config).eval()
        with set_torch_threads(THREADS), torch.no_grad(), cold(), \
                dynamo_config.patch(capture_scalar_outputs=scans(self.config)):
            # the longest first: its compile pays the compiler's start in a fresh process, as every plan's longest
            # boundary does (it is always one); the shortest's is then a compile alone
            long_s, compiled, ids = self._compile(ctx, model, self.long)
            ctx.phase("timing the compiled forward (the planner's cost per token)")
            token_s = measure("probe", lambda: compiled(ids), 1.0).median_ms / 1e3 / self.long
            short_s = self._compile(ctx, model, self.short)[0] if self.short != self.long else long_s
        dynamo.reset()
        return Costs(self.short, short_s, self.long, long_s, token_s)

    def _compile(self, ctx: WorkerContext, model: nn.Module, length: int) -> tuple[float, Any, torch.Tensor]:
        """A static compile from scratch at `length`, as a new boundary's: its seconds, the compiled model, the
        input."""
        dynamo.reset()
        ids = torch.tensor([encode(Workload((length,), "").texts[0])])
        compiled = torch.compile(model, backend=self.backend, dynamic=False)
        ctx.phase(f"compiling at {length} tokens (the planner's compile cost)")
        start = time.perf_counter()
        compiled(ids)
        return time.perf_counter() - start, compiled, ids


def optimize_service(timeout_s: float = OPTIMIZE_TIMEOUT_S) -> WorkerProcess:
    """A worker that serves one strategy and is then replaced: each strategy starts in a fresh process."""
    return WorkerProcess(timeout_s, name="optimization", max_jobs=1,
                          advice="Give the strategy a longer time bound, or serve fewer requests.")
