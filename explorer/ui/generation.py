"""The Playground's generation view: the Playground's input as the prompt, then N greedy tokens, with the generation
lab's controls and outputs (its spec's, not a copy), and a slider over the steps that redraws each cache kind's
autograd graph at that step without generating again."""

from __future__ import annotations

from typing import Any

import gradio as gr

from explorer.core.queues import Queue
from explorer.labs.generate import GenerateView, graph_figure, step_graphs
from explorer.labs.registry import LABS
from explorer.ui.endpoints import refusing
from explorer.ui.labs import lab_tab
from models.decoder import CACHES

SHOWN = ("prompts", "tokens", "caches", "compile", "graph_step")  # the text is the Playground's input


def generation_panel(session: gr.State) -> None:
    with gr.Accordion("Generation: this input as a prompt, then N tokens, one forward each", open=False):
        gr.Markdown(
            "A decoder (the Playground's model if it generates: *Decoder*, GPT-2 or Llama; else the zoo's decoder) "
            "reads the input above as its prompt and generates greedily, one forward per new token, with each kind "
            "of key/value cache. The weights are random, so the text is noise: what matters is that every cache "
            "generates the same bytes, what each step costs, and what the cache holds. **Drag the step slider** to "
            "see any step's autograd graph (hover a node: the cache's growth is in the shapes).",
            elem_classes="explain")
        panel = lab_tab(LABS["generate"], session, only=SHOWN, playground_text=True)
    step = panel.controls["graph_step"]
    graphs = [panel.outputs[f"graph_{kind}"] for kind in CACHES]

    def redrawn(view: GenerateView | None, at: float) -> list[Any]:
        if view is None:
            return [gr.skip()] * len(graphs)  # nothing generated yet: the step is read by the next run
        captured = step_graphs(view.report, int(at))
        return [graph_figure(captured[kind], kind, int(at)) if kind in captured else None for kind in CACHES]

    def steps_of(view: GenerateView | None) -> Any:
        return gr.skip() if view is None else gr.Slider(maximum=view.report["tokens"] - 1)

    # `change`, not `release`: a typed number's release could carry the slider's previous value under load (CI);
    # while it is dragged, only the last value waiting is drawn; in a queue of its own, not behind the Playground's
    # timings (a redraw captures in ~0.02 s and took 0.5-1.7 s in Chromium, warm-up running or not)
    step.change(refusing(redrawn), [panel.last, step], graphs, api_visibility="private", trigger_mode="always_last",
                concurrency_id=Queue.DRAW.value, show_progress="minimal")
    panel.last.change(steps_of, panel.last, step, queue=False, api_visibility="private", show_progress="hidden")
