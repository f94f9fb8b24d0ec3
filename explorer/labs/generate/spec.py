"""The generation lab: a decoder generates token by token with each kind of key/value cache, eagerly and compiled;
the tokens, the per-token time against the position, the cache's bytes, the compiles step by step, and a batch of
prompts padded on the left against each prompt alone."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.core.batches import generate_batch
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.limits import MAX_GENERATED, MAX_TEXT_CHARS
from explorer.core.progress import Progress
from explorer.eager.compare import MIN_PAIRS
from explorer.labs.contract import LabContext, LabSpec, Needs, Work
from explorer.labs.generate.job import REDUCE_OVERHEAD
from explorer.labs.generate.lab import run_generate
from explorer.labs.generate.results import GenerateResult
from explorer.labs.generate.view import OUTPUTS, format_generate, view_of
from explorer.sources.contract import Subject
from explorer.sources.registry import subject as named
from models.config import knob
from models.decoder import CACHES

BACKENDS = ("none", "eager", "aot_eager", "inductor", REDUCE_OVERHEAD)
OWN_MODEL = "decoder"  # the lab's own, where the Playground's model does not generate
GENERATED_LENGTHS = (5, 60)  # bytes: short and long prompts in one batch, the long ones rare (Zipf)


@dataclass(frozen=True)
class GenerateParams:
    text: str = knob(DEFAULT_TEXT, "the prompt; several prompts, one per line, are generated as one batch padded "
                     "on the left, and each alone", most=MAX_TEXT_CHARS)
    prompts: int = knob(0, "generate this many prompts of different lengths instead (Zipf lengths of "
                        f"{GENERATED_LENGTHS[0]}-{GENERATED_LENGTHS[1]} bytes, seeded), as one left-padded batch; 0: "
                        "the text's lines", min=0, max=64)
    tokens: int = knob(32, "tokens generated after the prompt (greedy)", min=3, max=MAX_GENERATED)
    caches: tuple[str, ...] = knob(CACHES, "the key/value cache kinds compared (the first is the reference)",
                                   choices=CACHES, flag="--cache")
    compile: str = knob("none", "also compile the decoder's step with this backend (inductor compiles C++; "
                        "reduce-overhead: inductor with torch.compile's mode='reduce-overhead', CUDA graphs, which "
                        "the lab counts as skipped where the model runs on the CPU)", choices=BACKENDS)
    repeats: int = knob(MIN_PAIRS, "warm generations timed per cache kind and side, each an eager/compiled pair "
                        f"(a per-token verdict needs {MIN_PAIRS})", min=1, max=20)
    graph_step: int = knob(1, "the step whose autograd graph is drawn for each cache kind (0: the prefill)", min=0,
                           max=MAX_GENERATED - 1)


def generates(subject: Subject) -> bool:
    """Whether the model generates: a decoder with a cache and a step (explorer/eager/generation.py): the zoo's,
    a library decoder (explorer/sources/library_cache.py), or a file's that has both."""
    model = subject.build()
    return callable(getattr(model, "new_cache", None)) and callable(getattr(model, "step", None))


def run(subject: Subject | None, p: GenerateParams, ctx: LabContext) -> Iterator[Progress | GenerateResult]:
    """On the model named; from the Playground, on its model if it generates, else on the lab's own decoder."""
    if subject is None or (subject.playground and not generates(subject)):
        subject = named(OWN_MODEL)
    backend = "" if p.compile == "none" else p.compile
    yield from run_generate(ctx.workers.compile, subject.model, subject.config, _prompts(p), p.tokens,
                            list(p.caches), backend, p.repeats, p.graph_step)


def _prompts(p: GenerateParams) -> str:
    """The prompts, one per line: the text's, or `prompts` generated ones."""
    return "\n".join(generate_batch(p.prompts, "zipf", *GENERATED_LENGTHS)) if p.prompts else p.text


def refuses(subject: Subject) -> str | None:
    if subject.playground or generates(subject):
        return None
    return (f"{subject.model} does not generate: the generation lab needs a decoder with a key/value cache "
            f"({OWN_MODEL}, gpt2, llama, or a file's model with new_cache and step)")


def work(p: GenerateParams) -> Work:
    sides = 2 if p.compile != "none" else 1
    prompts = len([line for line in _prompts(p).splitlines() if line.strip()])
    alone = prompts if prompts > 1 else 0
    steps = p.tokens * (1 + p.repeats) * (len(p.caches) * sides + alone)
    return Work(steps, f"{p.tokens} tokens x {1 + p.repeats} runs x ({len(p.caches)} cache kinds x {sides} "
                f"side(s) + {alone} prompts alone)", "max_generation_steps")


SPEC = LabSpec(
    name="generate", title="Generation lab",
    summary="generate token by token with each key/value cache, eager and compiled",
    intro="Generation is the dynamic graph most people run today: every new token runs a forward whose attention "
          "reads a key/value cache one step longer than the last. This lab generates with **a decoder** (the "
          "Playground's, else the zoo's at its defaults; GPT-2 and Llama from `transformers` with the library's own "
          "`DynamicCache` and `StaticCache`) and each cache: *none* (the whole sequence again every step), "
          "*dynamic* (grows a token at a time: shapes change every step) and *static* (preallocated, masked: the "
          "same shapes every step). Shown: that all three generate the same tokens, each step's time against the "
          "position, the cache's bytes, and with a compiler, which step compiled and why, whether compiled is "
          "faster per token (by its interval) and after how many tokens it pays for its compile. Several prompts, "
          "one per line, are generated as one batch padded on the left and each alone: the same tokens, or the "
          "padding is wrong.",
    button="Generate", params=GenerateParams, needs=Needs.ANY_MODEL, run=run, view=view_of, outputs=OUTPUTS,
    text=format_generate, work=work, refuses=refuses)
