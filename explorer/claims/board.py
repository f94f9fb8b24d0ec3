"""The claims in the issue's order, and the server's board of their latest results: thirty students opening the
Claims tab see one run of each experiment, labelled with when it was measured, not thirty."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from explorer.claims import (
    debugging,
    deploying,
    distributed,
    generation,
    overhead,
    padding,
    rebuild,
    recompile,
    shape,
    speed,
)
from explorer.claims.chosen import Chosen
from explorer.claims.evidence import Claim, ClaimResult, run_claim
from explorer.claims.turns import Turn, Turns
from explorer.core.errors import InputError
from explorer.core.limits import CLAIMS_TTL_S
from explorer.core.machine import Machine, this_machine
from explorer.core.progress import Progress
from explorer.core.version import code_version
from explorer.sources.registry import source, subject
from explorer.workers.protocol import Workers
from models.config import config_dict, echoed

log = logging.getLogger("graph_explorer")

CLAIMS: dict[str, Claim] = {c.id: c for c in (shape.CLAIM, padding.CLAIM, rebuild.CLAIM, debugging.CLAIM,
                                              speed.CLAIM, overhead.CLAIM, deploying.CLAIM, distributed.CLAIM,
                                              generation.CLAIM, recompile.CLAIM)}


def claim(claim_id: str) -> Claim:
    if not isinstance(claim_id, str) or claim_id not in CLAIMS:
        raise InputError(f"unknown claim {echoed(claim_id)}; claims are: {', '.join(CLAIMS)}")
    return CLAIMS[claim_id]


def checked(c: Claim, model: Chosen) -> Chosen:
    """`model` if the claim's experiment can run on it (a known model, a valid config within the limits), else
    InputError with the reason, before any work."""
    source(model.name)  # an unknown model first: the cheapest refusal
    if c.on_model is None:
        per_model = ", ".join(x.id for x in CLAIMS.values() if x.on_model is not None)
        raise InputError(f"the {c.id} claim's experiment compares models of the zoo chosen for it: it runs on them "
                         f"only (the claims that re-run on your model: {per_model})")
    who = subject(model.name, model.values)  # a valid config within the limits (a probe of the model's activations)
    if reason := c.applies(who.source):
        raise InputError(f"the {c.id} claim's experiment cannot run on {model.name}: {reason}")
    return Chosen(model.name, config_dict(who.config), who.arch)


def claims_file() -> Path | None:
    """Where this machine's server keeps the claims' results across restarts (GE_CLAIMS_FILE; empty: not kept); the
    CLI reads them from there into a lesson step's notebook."""
    path = os.environ.get("GE_CLAIMS_FILE", os.path.join(tempfile.gettempdir(), "graph-explorer-claims.json"))
    return Path(path) if path else None


WAIT_TICK_S = 1.0  # how often a visitor waiting for another's run of the same experiment is told where it is


class ClaimBoard:
    """Each claim's latest result, shown to everyone for `ttl_s` seconds; one run of a claim at a time (a second
    visitor who asks meanwhile waits for that run instead of starting another). With a `path`, every new result is
    written there too, and `restore` reads them back after a restart. A `quick` board (tests) runs and restores only
    the reduced experiments, and a board that is not runs and restores only the real ones."""

    def __init__(self, ttl_s: float = CLAIMS_TTL_S, path: Path | None = None, quick: bool = False,
                 wait_tick_s: float = WAIT_TICK_S) -> None:
        self.ttl_s = ttl_s
        self.path = path
        self.quick = quick
        self.wait_tick_s = wait_tick_s
        self._results: dict[str, ClaimResult] = {}
        self._locks = {c: threading.Lock() for c in CLAIMS}
        self._doing: dict[str, tuple[float, str]] = {}  # a running experiment's start (monotonic) and latest step
        self._writing = threading.Lock()
        self.turns = Turns()  # one experiment asked for by a person at a time, a room's teacher's first

    def restore(self) -> list[str]:
        """The results in `path` that this server measured (same host, torch and threads) with this code, within
        `ttl_s`, of this board's kind (quick or not), back on the board, their numbers judged again by today's judges
        and each labelled as restored (a restarted Space opens every lesson step on them instead of measuring all
        eight again); the ids restored. A missing or unreadable file restores nothing: the board measures anew."""
        if self.path is None or not self.path.exists():
            return []
        try:
            kept = json.loads(self.path.read_text())
            here = this_machine()
            for claim_id, report in dict(kept).items():
                if (claim_id in CLAIMS and Machine.of(report["machine"]).same_server(here)
                        and report.get("code") == code_version() and report.get("quick") is self.quick
                        and time.time() - report["measured_at"] < self.ttl_s):
                    self._results[claim_id] = ClaimResult.of(report, CLAIMS[claim_id])
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("claims' results in %s not restored (%s: %s): measuring anew", self.path, type(e).__name__, e)
        return list(self._results)

    def _keep(self, result: ClaimResult) -> None:
        self._results[result.claim.id] = result
        if self.path is None:
            return
        with self._writing:  # whole files only: written beside, then renamed over
            partial = self.path.with_suffix(".partial")
            try:
                partial.write_text(json.dumps({c: r.as_dict() for c, r in self._results.items()}))
                os.replace(partial, self.path)
            except OSError as e:  # a full or read-only disk costs the restart's head start, not the result
                log.warning("claims' results not written to %s: %s", self.path, e)

    def forget(self, claim_id: str) -> None:
        """Drop a claim's result (kept on file): its card measures anew when pressed."""
        self._results.pop(claim(claim_id).id, None)

    def took(self, claim_id: str) -> float | None:
        """How long the claim's experiment last ran on this server (expired or not), or None if it never ran."""
        r = self._results.get(claim(claim_id).id)
        return None if r is None else r.seconds

    def cached(self, claim_id: str) -> ClaimResult | None:
        """The claim's result if it is younger than the board's time to live."""
        r = self._results.get(claim(claim_id).id)
        return r if r is not None and time.time() - r.measured_at < self.ttl_s else None

    def doing(self, claim_id: str) -> Progress | None:
        """Where the claim's running experiment is, if one is running on this board: its latest step, and the
        seconds since the experiment began."""
        doing = self._doing.get(claim(claim_id).id)
        return None if doing is None else Progress(time.monotonic() - doing[0], doing[1])

    def measuring(self, claim_id: str) -> bool:
        """Whether the claim's experiment is running on this server now (for the board)."""
        return self._locks[claim(claim_id).id].locked()

    def run(self, claim_id: str, workers: Workers, again: bool = False, model: Chosen | None = None,
            turn: Turn = Turn.VISITOR) -> Iterator[Progress | ClaimResult]:
        """The cached result, or progress messages and a new one. `again` measures anew unless a run that started
        after this call (another visitor's) has just finished. On a person's `model`, always anew and not shown
        to others. A new run waits for its `turn` (explorer/claims/turns.py), saying where the one ahead is."""
        asked = time.time()
        c = claim(claim_id)
        workers = replace(workers, quick=self.quick)  # the board's kind decides what it measures
        if model is not None:
            yield from self._turn_taken(c.id, turn)
            try:
                yield from run_claim(c, workers, checked(c, model))
            finally:
                self._given(turn)
            return
        if not again and (r := self.cached(c.id)):
            yield r
            return
        lock = self._locks[c.id]
        if not lock.acquire(blocking=False):
            yield from self._waiting(c.id, lock)
        try:
            r = self.cached(c.id)
            if r is not None and (not again or r.measured_at >= asked):
                yield r
                return
            yield from self._turn_taken(c.id, turn)
            try:
                began = time.monotonic()
                for item in run_claim(c, workers):
                    if isinstance(item, ClaimResult):
                        self._keep(item)
                    else:
                        self._doing[c.id] = (began, item.phase)
                    yield item
            finally:
                self._given(turn)
        finally:
            self._doing.pop(c.id, None)
            lock.release()

    def _turn_taken(self, claim_id: str, turn: Turn) -> Iterator[Progress]:
        """Until the experiment of `claim_id` holds the turn (at once for the background's): every `wait_tick_s`,
        how long it has waited and where the experiment ahead is."""
        if turn is Turn.BACKGROUND:
            return
        start, tick = time.monotonic(), 0.0  # at once if no one is ahead
        with self.turns.line(turn) as take:
            while not take(claim_id, tick):
                tick = self.wait_tick_s
                ahead = self.turns.holder
                doing = self.doing(ahead) if ahead is not None else None
                where = f"{ahead}: {doing.phase}" if doing else f"{ahead}"
                yield Progress(time.monotonic() - start, f"Another experiment is running on this server ({where}): "
                               + ("yours runs next, ahead of any visitor's" if turn is Turn.FIRST else
                                  "this one starts after it (a room's teacher's goes first)"))

    def _given(self, turn: Turn) -> None:
        if turn is not Turn.BACKGROUND:
            self.turns.give()

    def _waiting(self, claim_id: str, lock: threading.Lock) -> Iterator[Progress]:
        """Until `lock` is ours: every `wait_tick_s`, how long this visitor has waited and where the running
        experiment is (a class that clicks during the start-up warm-up sees it move, not one still sentence)."""
        start = time.monotonic()
        yield Progress.said("Someone else on this server started this experiment: waiting for its result")
        while not lock.acquire(timeout=self.wait_tick_s):
            doing = self.doing(claim_id)
            where = f" (it is at: {doing.phase})" if doing else ""
            yield Progress(time.monotonic() - start, f"Someone else on this server is running this "
                                                     f"experiment{where}: waiting for its result")


def warm(board: ClaimBoard, workers: Workers, between: Callable[[], object] = lambda: None) -> list[str]:
    """Every claim measured once, in order, for the board (at start-up, so that a class opens each lesson step on
    a result of this server that hour); one line per claim, for the log. A claim that fails is said, and the next
    runs."""
    lines = []
    for c in CLAIMS.values():
        between()  # the start-up warm-up yields to visitors (explorer/serving/background.py)
        start = time.monotonic()
        try:
            *_, result = board.run(c.id, workers, turn=Turn.BACKGROUND)
            lines.append(f"{c.id}: {result.verdict.kind.value} ({time.monotonic() - start:.0f} s)")
        except Exception as e:  # the card's button will say why, when someone presses it
            lines.append(f"{c.id}: failed ({type(e).__name__}: {e})")
    return lines


FRESH_FOR = 0.75  # of the board's time to live: a result this old is measured again, before anyone sees it expire


def keep_fresh(board: ClaimBoard, workers: Callable[[], Workers], done: Callable[[], object],
               between: Callable[[], object] = lambda: None, stop: threading.Event | None = None) -> None:
    """Keep the board's results from expiring while the server runs (a lesson an hour after start-up opens on a
    result, not on "not measured"): the result that expires first is measured again once FRESH_FOR of its time to
    live has passed, by `workers()` (stopped by `done()` after each), after `between()` (waiting while visitors
    wait); until `stop` is set, or the board has nothing to keep."""
    stop = stop or threading.Event()
    while not stop.is_set():
        due = sorted((r.measured_at + FRESH_FOR * board.ttl_s, c) for c, r in list(board._results.items()))
        if not due:
            return
        when, claim_id = due[0]
        if stop.wait(max(0.0, when - time.time())):
            return
        between()
        try:
            *_, result = board.run(claim_id, workers(), again=True, turn=Turn.BACKGROUND)
            log.info("claim %s measured again for the board: %s", claim_id, result.verdict.kind.value)
        except Exception as e:  # the next claim still runs; the card's button says why when pressed
            log.warning("claim %s not measured again: %s: %s", claim_id, type(e).__name__, e)
            board.forget(claim_id)  # not retried in a loop: the next visitor's press measures it
        finally:
            done()
