"""The example inputs the app offers, of very different lengths; the first one a person sees is DEFAULT_TEXT."""

from __future__ import annotations

from models.tokenizer import encode

_EXAMPLE_TEXTS = (
    "a",
    "Hello",
    "The cat sat on the mat, and then it slept.",
    "Graphs 📈 grow: граф, 图, グラフ!",
    "Define-by-run means the graph is built while the program runs. Every time you call the "
    "model, PyTorch records the operations it actually executed, so a loop over the tokens "
    "leaves one copy of its body per token, and an if leaves only the branch it took.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
    "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the "
    "season of Light, it was the season of Darkness, it was the spring of hope, it was the winter "
    "of despair, we had everything before us, we had nothing before us, we were all going direct "
    "to Heaven, we were all going direct the other way; in short, the period was so far like the "
    "present period.",
)


def _example_label(text: str) -> str:
    n = len(encode(text))
    return f"{n} token{'s' * (n != 1)}: {text if len(text) <= 16 else text[:14] + '…'}"


EXAMPLES: dict[str, str] = {_example_label(t): t for t in _EXAMPLE_TEXTS}
DEFAULT_TEXT = _EXAMPLE_TEXTS[2]
