"""Generation with the decoder's three caches: the same tokens and logits for the same prompt, a left-padded batch
generating what each prompt does alone, the static cache's decode step compiled once over 64 steps under
fail_on_recompile while the dynamic cache's recompiles, and the lab end to end through its spec."""

import itertools

import pytest
import torch

from explorer.api import final, named_subject, run_lab
from explorer.core.errors import InputError
from explorer.eager.generation import generate, left_padded, step_graph
from explorer.labs.contract import LabContext
from explorer.labs.generate.job import REDUCE_OVERHEAD, STANCE_FROM, GenerateJob
from explorer.labs.generate.lab import step_graphs
from explorer.labs.generate.results import GenerateResult
from explorer.labs.registry import LABS
from explorer.workers.protocol import Here, WorkerContext, Workers
from models import build_model, make_config
from models.decoder import CACHES

PROMPTS = [b"The cat sat on the mat, and then it slept.", b"Hi.", b"A dog barked twice"]


@pytest.fixture(scope="module")
def decoder():
    return build_model("decoder", make_config("decoder"))


def _one(model, prompt: bytes, kind: str, tokens: int):
    ids, pads = left_padded([prompt])
    return generate(model, ids, pads, tokens, kind)


def test_the_three_caches_generate_the_same_tokens_and_logits(decoder):
    runs = {kind: _one(decoder, PROMPTS[0], kind, 24) for kind in CACHES}
    for kind in CACHES[1:]:
        assert torch.equal(runs[kind].tokens, runs["none"].tokens), kind
        assert (runs[kind].logits - runs["none"].logits).abs().max() < 1e-5, kind
    assert runs["none"].cache_bytes == (0,) * 24
    dynamic = runs["dynamic"].cache_bytes  # one more position a step; the static one is allocated once, whole
    assert all(b > a for a, b in itertools.pairwise(dynamic))
    assert len(set(runs["static"].cache_bytes)) == 1 and runs["static"].cache_bytes[0] > dynamic[-1]


@pytest.mark.parametrize("kind", CACHES)
def test_a_left_padded_batch_generates_what_each_prompt_does_alone(decoder, kind):
    ids, pads = left_padded(PROMPTS)
    assert pads.tolist() == [0, len(PROMPTS[0]) - 3, len(PROMPTS[0]) - len(PROMPTS[2])]
    batched = generate(decoder, ids, pads, 12, kind)
    for row, prompt in enumerate(PROMPTS):
        alone = _one(decoder, prompt, kind, 12)
        assert torch.equal(batched.tokens[row], alone.tokens[0]), (kind, prompt)
        assert (batched.logits[row] - alone.logits[0]).abs().max() < 1e-5, (kind, prompt)


def test_a_steps_graph_without_a_cache_runs_the_whole_sequence_and_with_one_a_token(decoder):
    ids, pads = left_padded([PROMPTS[0]])
    made = generate(decoder, ids, pads, 4, "dynamic").tokens
    whole, one = (step_graph(decoder, ids, pads, made, kind, 3) for kind in ("none", "dynamic"))
    def embedded(c):
        return [n.shape for n in c.graph.nodes if n.op == "EmbeddingBackward0"]

    assert embedded(one) == [(1, 1, 64)]  # one new token read, against the cache
    static = step_graph(decoder, ids, pads, made, "static", 3)
    ops = {kind: {n.op for n in c.graph.nodes} for kind, c in (("dynamic", one), ("static", static))}
    assert "CatBackward0" in ops["dynamic"] - ops["static"]  # the cache grows by a concatenation...
    assert "IndexCopyBackward0" in ops["static"] - ops["dynamic"]  # ...or is written in place at the position
    assert embedded(whole) == [(1, ids.shape[1] + 3, 64)]  # the prompt and the three tokens before, again


def test_padding_on_the_wrong_side_changes_the_answer(decoder):
    """The check can fail: the short prompt padded on the right generates after its pads, not after its text."""
    right = torch.tensor([list(PROMPTS[1]) + [0] * (len(PROMPTS[0]) - 3)])
    wrong = generate(decoder, right, torch.zeros(1, dtype=torch.long), 12, "dynamic")
    assert (wrong.logits[0] - _one(decoder, PROMPTS[1], "dynamic", 12).logits[0]).abs().max() > 1e-3


def _job(cache: str, tokens: int, model: str = "decoder", backend: str = "eager") -> GenerateJob:
    ids, pads = left_padded([PROMPTS[0]])
    return GenerateJob(model, {}, ids.tolist(), pads.tolist(), tokens, cache, backend, 1)


def test_the_static_cache_decode_step_compiles_once_over_64_steps_under_fail_on_recompile():
    run = _job("static", 64).run(WorkerContext(lambda phase: None))
    assert run.error == "" and run.stance.startswith(f"fail_on_recompile from step {STANCE_FROM} to 63")
    assert [c.at for c in run.compiles] == [0, 1]  # the prefill's graph, then the decode step's: no other
    assert run.compiled_tokens == run.tokens and run.compiled_diff < 1e-5
    assert len(run.eager_s) == len(run.compiled_s) == 1 and len(run.compiled_s[0]) == 64
    assert run.cudagraph_skips is None  # not asked: not said


def test_reduce_overhead_on_the_cpu_skips_cuda_graphs_for_every_graph_and_says_so_from_inductors_count():
    """The file's one inductor compile, of the smallest decoder: on the CPU, CUDA graphs are skipped for both
    graphs, and the lab says so from inductor's own count."""
    ids, pads = left_padded([PROMPTS[1]])
    job = GenerateJob("decoder", {"layers": 1, "width": 8, "heads": 1}, ids.tolist(), pads.tolist(), 3, "static",
                      REDUCE_OVERHEAD, 1)
    run = job.run(WorkerContext(lambda phase: None))
    assert run.error == "" and [c.at for c in run.compiles] == [0, 1] and run.cudagraph_skips == 2
    assert "all 2 compiled graphs ran without CUDA graphs" in GenerateResult.cuda_graphs(run)


def test_the_dynamic_cache_recompiles_as_its_shapes_grow_and_says_which_guard_failed():
    run = _job("dynamic", 12).run(WorkerContext(lambda phase: None))
    later = [c for c in run.compiles if c.at >= STANCE_FROM]
    assert run.error == "" and run.stance == "" and later  # no stance here: every recompile is logged
    assert all(c.reason != "first compile" for c in run.compiles[1:])  # each later one names its guard


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_library_decoder_generates_with_the_librarys_own_caches(arch):
    """transformers' DynamicCache and StaticCache behind the same step: the same tokens as no cache, a padded
    batch as each prompt alone, and the static cache's decode step compiled once under fail_on_recompile."""
    from transformers import DynamicCache, StaticCache

    model = named_subject(arch, {}).build()
    ids, pads = left_padded(PROMPTS)
    runs = {kind: generate(model, ids, pads, 6, kind) for kind in CACHES}
    for kind in CACHES[1:]:
        assert torch.equal(runs[kind].tokens, runs["none"].tokens), kind
        assert (runs[kind].logits - runs["none"].logits).abs().max() < 1e-5, kind
    assert isinstance(model.new_cache(pads, "static").held, StaticCache)
    assert isinstance(model.new_cache(pads, "dynamic").held, DynamicCache)
    for row, prompt in enumerate(PROMPTS):
        alone = _one(model, prompt, "static", 6)
        assert (runs["static"].logits[row] - alone.logits[0]).abs().max() < 1e-5, (arch, prompt)
    run = _job("static", 16, arch).run(WorkerContext(lambda phase: None))
    assert run.error == "" and [c.at for c in run.compiles] == [0, 1] and run.stance
    assert run.compiled_tokens == run.tokens


def test_the_lab_through_its_spec_names_what_it_measured_and_refuses_a_model_that_does_not_generate():
    here = Here()
    ctx = LabContext(Workers.on(here), lambda: "")
    view = final(run_lab(LABS["generate"], named_subject("decoder", {}), {
        "text": "Hello there\nHi", "tokens": 6, "caches": "dynamic,static", "compile": "eager", "repeats": 2,
        "graph_step": 3}, ctx))
    assert [row[0] for row in view.caches] == ["dynamic", "static"] and view.caches[1][1] == "same"
    assert view.graph_none is None and "decode step 3" in view.graph_dynamic.layout.title.text
    assert all(c["step_graph_nodes"] > 0 for c in view.report["caches"])
    assert [row[1] for row in view.alone] == ["same", "same"]  # each prompt alone, as in the padded batch
    assert "left pads take 9 of 22 prompt positions (41%)" in view.report["batching"]  # "Hi" padded to 11 bytes
    per_token = view.report["caches"][1]["per_token"]
    assert per_token["pairs"] == 2  # a pair per warm generation (its five decode steps share its slow spells)
    assert f"per token {per_token['said']}" in view.verdict and "Hello there" in view.report["prompts"][0]
    assert per_token["faster"] is None and "too few samples to compare (2; 8 needed)" in per_token["said"]
    legend = [t.name for t in view.latency.data if t.showlegend is not False]
    assert legend == ["dynamic, eager", "dynamic, compiled", "static, eager", "static, compiled"]  # prefills grouped
    later = step_graphs(view.report, 5)  # the Playground's step slider: from the report, without generating again
    assert set(later) == {"dynamic", "static"} and later["static"].graph.nodes
    grown = {n.shape[2] for n in later["dynamic"].graph.nodes if n.op == "CatBackward0"}
    assert grown == {11 + 5}  # at step 5: 11 prompt columns (the short one left-padded), 4 tokens, the new one
    with pytest.raises(InputError, match="0 \\(the prefill\\) to 5"):
        step_graphs(view.report, 6)
    many = LABS["generate"].parse({"prompts": 5, "caches": "static"})  # generated prompts: one batch of 5
    assert "+ 5 prompts alone" in LABS["generate"].work(many).counted
    with pytest.raises(InputError, match="rnn does not generate"):
        final(run_lab(LABS["generate"], named_subject("rnn", {}), {}, ctx))
    with pytest.raises(InputError, match="GE_MAX_ACTIVATION_BYTES"):  # 200 prompts x 4,096 columns x 12 layers
        final(run_lab(LABS["generate"], named_subject("decoder", {"layers": 12, "width": 512,
                                                                  "max_positions": 4096}),
                      {"text": "\n".join(["a prompt"] * 200), "tokens": 3, "repeats": 1}, ctx))
    with pytest.raises(InputError, match="max_positions"):
        final(run_lab(LABS["generate"], named_subject("decoder", {"max_positions": 16}), {"tokens": 8}, ctx))


def test_its_endpoint_keeps_its_parameters_and_their_order():
    """The HTTP API as documented (docs/cli.md): the names and their order are a promise to callers."""
    from explorer.api import endpoint_parameters
    from explorer.labs.registry import LABS

    assert [p.name for p in endpoint_parameters(LABS["generate"])] == [
        "model", "config_json", "text", "prompts", "tokens", "caches", "compile", "repeats", "graph_step"]
