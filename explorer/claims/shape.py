"""Claim 1: the architecture can change at run time with the input. Each model's autograd graph, captured as
the Playground captures it, for two inputs that it treats differently."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.claims.evidence import CONDITION, HOLDS, NOT_HERE, Chart, Claim, Evidence, Series, Verdict
from explorer.core.examples import DEFAULT_TEXT, EXAMPLES
from explorer.core.inputs import text_of_length, tokenize
from explorer.core.progress import Progress
from explorer.eager.capture import capture_run
from explorer.labs.deploy import structure
from explorer.serving.statelink import LinkState
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Workers
from models.config import config_dict

SHORT, LONG = 5, 50  # the RNN's two lengths


def _graphs(model_name: str, *texts: str) -> list[tuple[int, int, dict[str, int]]]:
    """(nodes, depth, structure) of the graph each text builds on one and the same model object (default
    config): whatever differs between the graphs, the model was not rebuilt in between."""
    model = build_model(model_name, make_config(model_name))
    out = []
    for text in texts:
        ids = tokenize(text).ids
        graph = capture_run(model, ids).graph
        out.append((len(graph.nodes), graph.depth(), structure(model_name, model, ids)))
    return out


def _exit_extremes(n: int) -> tuple[str, str]:
    """Of the example texts cut or repeated to `n` tokens, the one early exit leaves soonest and the one it runs
    deepest on: the same length, so only the content decides."""
    model = build_model("early_exit", make_config("early_exit"))
    texts = [text_of_length(t, n) for t in EXAMPLES.values()]
    blocks = {t: structure("early_exit", model, tokenize(t).ids)["blocks run"] for t in texts}
    return min(blocks, key=blocks.__getitem__), max(blocks, key=blocks.__getitem__)


def measure(_: Workers) -> Iterator[Progress | Evidence]:
    yield Progress.said(f"RNN: {SHORT} and {LONG} tokens")
    short, long = text_of_length(DEFAULT_TEXT, SHORT), text_of_length(DEFAULT_TEXT, LONG)
    (rs_nodes, rs_depth, _), (rl_nodes, rl_depth, _) = _graphs("rnn", short, long)
    yield Progress.said("early exit: the example texts, soonest and deepest exit")
    n = tokenize(DEFAULT_TEXT).tokens
    easy, hard = _exit_extremes(n)
    (ee_nodes, ee_depth, ee), (eh_nodes, eh_depth, eh) = _graphs("early_exit", easy, hard)
    yield Progress.said("tree network: a sentence with and without its comma")
    a, b = DEFAULT_TEXT, DEFAULT_TEXT.replace(",", " ")  # one clause instead of two: another bracketing
    (ta_nodes, ta_depth, _), (tb_nodes, tb_depth, _) = _graphs("tree", a, b)
    numbers = {"rnn_nodes_short": rs_nodes, "rnn_nodes_long": rl_nodes, "rnn_depth_short": rs_depth,
               "rnn_depth_long": rl_depth, "exit_blocks_easy": ee["blocks run"], "exit_blocks_hard": eh["blocks run"],
               "exit_nodes_easy": ee_nodes, "exit_nodes_hard": eh_nodes, "tree_depth_a": ta_depth,
               "tree_depth_b": tb_depth, "tree_nodes_a": ta_nodes, "tree_nodes_b": tb_nodes}
    chart = Chart("bar", "Two inputs per model: the graph's longest path", "model",
                  "longest path (operations, input to loss)", [
        Series("first input", ["rnn", "early_exit", "tree"], [rs_depth, ee_depth, ta_depth],
               text=[f"{SHORT} tokens", f"{ee['blocks run']} blocks", "comma"]),
        Series("second input", ["rnn", "early_exit", "tree"], [rl_depth, eh_depth, tb_depth],
               text=[f"{LONG} tokens", f"{eh['blocks run']} blocks", "no comma"]),
    ])
    shown = [
        ("RNN graph", f"{rs_nodes:,} → {rl_nodes:,} nodes", f"{SHORT} → {LONG} tokens; longest path {rs_depth} → "
         f"{rl_depth} ops"),
        ("early exit", f"{ee['blocks run']} vs {eh['blocks run']} blocks",
         f"{ee_nodes:,} vs {eh_nodes:,} nodes, two texts of {n} tokens"),
        ("tree network", f"depth {ta_depth} vs {tb_depth}", f"{n} tokens each, with and without a comma: "
         "the bracketing comes from the text"),
    ]
    notes = [f"early exit's inputs: {easy!r} (soonest exit) and {hard!r} (deepest); the tree's: {a!r} and {b!r}; "
             "depth is the longest chain of operations from an input to the loss; every model at its default "
             "config, the graph captured as the Playground captures it"]
    yield Evidence(numbers, shown, chart, notes)


def judge(x: dict[str, float]) -> Verdict:
    changed = {"the RNN's graph grows with the length": x["rnn_nodes_long"] > x["rnn_nodes_short"],
               "early exit runs another number of blocks": x["exit_blocks_easy"] != x["exit_blocks_hard"],
               "the tree's shape follows the sentence": x["tree_depth_a"] != x["tree_depth_b"]}
    did = [k for k, v in changed.items() if v]
    did_not = [k for k, v in changed.items() if not v]
    if not did:
        return Verdict(NOT_HERE, "every model built the same graph for both of its inputs")
    if did_not:
        return Verdict(CONDITION, f"{'; '.join(did)}; but here not: {'; '.join(did_not)}")
    return Verdict(HOLDS, f"{'; '.join(did)}: {x['rnn_nodes_short']:,.0f} → {x['rnn_nodes_long']:,.0f} nodes, "
                          f"{x['exit_blocks_easy']:.0f} vs {x['exit_blocks_hard']:.0f} blocks, depth "
                          f"{x['tree_depth_a']:.0f} vs {x['tree_depth_b']:.0f}; nothing was rebuilt or recompiled")


CLAIM = Claim(
    id="shape", statement="The architecture can change at run time with the input.",
    experiment="The autograd graph of each model for two inputs: the RNN at 5 and 50 tokens, early exit on its "
               "easiest and hardest example of one length, the tree network on a sentence with and without its comma.",
    reproduce=LinkState("early_exit", config_dict(make_config("early_exit")), DEFAULT_TEXT).query(),
    measure=measure, judge=judge)
