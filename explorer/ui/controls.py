"""One control per knob, for a model's architecture and a lab's parameters alike."""

from __future__ import annotations

import html
import re

import gradio as gr

from models.config import Knob

WIDE_RANGE = 1_000  # an int knob with a wider range is typed (a number box), not dragged


def control(k: Knob) -> gr.components.Component:
    """The control that sets knob `k`, labelled with its name (the same in a link, on the CLI and at the API) and
    its help."""
    if k.type == "choice":
        titles = k.titles or tuple("off" if c == "" else c for c in k.choices)
        return gr.Radio(list(zip(titles, k.choices, strict=True)), value=k.default, label=k.name, info=k.help)
    if k.type == "subset":
        return gr.CheckboxGroup(list(zip(k.titles or k.choices, k.choices, strict=True)), value=list(k.default),
                                label=k.name, info=k.help)
    if k.type == "bool":
        return gr.Checkbox(value=k.default, label=k.name, info=k.help)
    if k.type == "text":
        return gr.Textbox(k.default, label=k.name, info=k.help, lines=5 if k.file else 1, max_lines=12)
    if k.type == "ints":
        return gr.Textbox(",".join(map(str, k.default)), label=k.name, info=f"comma-separated; {k.help}")
    if k.min is None or k.max is None:  # a user's factory parameter without a Range: any number it takes
        return gr.Number(value=k.default, label=k.name, info=k.help, precision=0 if k.type == "int" else None,
                         minimum=k.min, maximum=k.max)
    if k.type == "int" and k.max == k.min:  # one value (the processes a 2-core server can give): shown, not set
        return gr.Dropdown([int(k.min)], value=k.default, label=k.name, info=k.help)
    if k.name == "seed" or k.max - k.min > WIDE_RANGE:
        return gr.Number(value=k.default, label=k.name, info=k.help, precision=0, minimum=k.min, maximum=k.max)
    step = k.step or (1 if k.type == "int" else 0.01)
    return gr.Slider(k.min, k.max, value=k.default, step=step, label=k.name, info=k.help)


def _breakable(value: str) -> str:
    """A value that may break after an underscore ("pack_padded_<wbr>sequence"), not at any letter."""
    return html.escape(value).replace("_", "_<wbr>")


LONG_WORD = 7  # characters between breaks past which a value's word would not fit a presentation card's width


def _value_class(value: str) -> str:
    """'value', or 'value long' for a value with a word that a narrow card would break between letters
    ("sequenc / e"): presentation mode sets it smaller instead."""
    words = re.split(r"[\s_]+", value)
    return "value long" if max(map(len, words), default=0) > LONG_WORD else "value"


def cards_html(cards: list[tuple[str, str, str]]) -> str:
    """(label, value, detail) cards in a grid."""
    items = "".join(
        f'<div class="card"><div class="label">{html.escape(label)}</div>'
        f'<div class="{_value_class(value)}">{_breakable(value)}</div>'
        f'<div class="detail">{html.escape(detail)}</div></div>'
        for label, value, detail in cards
    )
    return f'<div class="cards">{items}</div>'
