"""Turning user text into token ids, with the checks and notices that belong to it."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from explorer.core.errors import InputError
from explorer.core.limits import MAX_TEXT_CHARS, MAX_TOKENS
from models.tokenizer import encode


@dataclass(frozen=True)
class TokenizedText:
    text: str  # what actually runs (after truncation)
    ids: torch.Tensor  # (1, T)
    truncated_from: int | None  # the original token count, if it was cut

    @property
    def tokens(self) -> int:
        return self.ids.shape[1]

    @property
    def notice(self) -> str | None:
        if self.truncated_from is None:
            return None
        return f"Input truncated to the first {self.tokens} of {self.truncated_from} tokens (limit {MAX_TOKENS})."


def check_text(text: object, what: str = "input") -> str:
    """The text, if it is a string of acceptable size (checked before any work is done on it)."""
    if not isinstance(text, str):
        raise InputError(f"The {what} must be text; got {type(text).__name__}.")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(f"The {what} is {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,} "
                         f"(only the first {MAX_TOKENS} tokens would run anyway).")
    return text


def empty_message(what: str = "input") -> str:
    return f"The {what} is empty: type a sentence (any language, emoji welcome)."


def tokenize(text: str, what: str = "input") -> TokenizedText:
    """Token ids of `text`: every UTF-8 byte is a token, control characters included; past the token
    limit the text is cut (on a character boundary) with a notice."""
    check_text(text, what)
    if not text:  # spaces and newlines are bytes, so tokens, like any other: only nothing at all is refused
        raise InputError(empty_message(what))
    try:
        ids = encode(text)
    except UnicodeEncodeError:
        raise InputError(f"The {what} contains a lone surrogate, which is not valid Unicode text.") from None
    truncated_from = None
    if len(ids) > MAX_TOKENS:
        truncated_from = len(ids)
        # Cut on a character boundary so the kept text is still valid UTF-8.
        text = bytes(ids[:MAX_TOKENS]).decode("utf-8", errors="ignore")
        ids = encode(text)
    return TokenizedText(text, torch.tensor([ids], dtype=torch.long), truncated_from)


def text_of_length(text: str, tokens: int) -> str:
    """`text` repeated or cut to at most `tokens` tokens (exactly, for ASCII), on character boundaries."""
    if tokens < 1:
        raise InputError(f"lengths must be positive; got {tokens}")
    base = text if text.strip() else "x"
    out, size = [], 0
    while True:
        for ch in base:
            n = len(ch.encode("utf-8"))
            if size + n > tokens:
                return "".join(out) or ch
            out.append(ch)
            size += n
