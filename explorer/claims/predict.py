"""A lesson step's question put to the room before the evidence: a number or a choice, and how the step's measured
numbers answer it (the claim's own `Evidence.numbers`), so the room's answers can be set beside what was measured."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from explorer.core.errors import InputError

Answer = float | str
MAX_ANSWER_CHARS = 40  # a number or a choice's words: nothing longer is an answer


@dataclass(frozen=True)
class Prediction:
    question: str  # asked before the evidence, in the step's words
    truth: Callable[[dict[str, float]], Answer | None]  # the measured answer from the numbers; None: not measured
    choices: tuple[str, ...] = ()  # empty: the answer is a number
    unit: str = ""  # a number's ("x", "models")
    low: float = 0.0  # a number's accepted range
    high: float = 1e6

    @property
    def is_number(self) -> bool:
        return not self.choices

    def parse(self, text: object) -> Answer:
        """A student's answer as the question takes it; InputError saying what is expected otherwise."""
        said = str(text if text is not None else "").strip()
        if not said:
            raise InputError("Type an answer first.")
        if len(said) > MAX_ANSWER_CHARS:
            raise InputError(f"An answer is at most {MAX_ANSWER_CHARS} characters.")
        if self.choices:
            if said not in self.choices:
                raise InputError(f"Pick one of: {', '.join(self.choices)}.")
            return said
        try:
            value = float(said.removesuffix(self.unit).strip().replace(",", ""))
        except ValueError:
            raise InputError(f"This question takes a number{f' ({self.unit})' if self.unit else ''}; got "
                             f"{said!r}.") from None
        if not math.isfinite(value) or not self.low <= value <= self.high:
            raise InputError(f"Give a number from {self.low:g} to {self.high:g}.")
        return value


def count_where(suffix: str, test: Callable[[float], bool]) -> Callable[[dict[str, float]], float | None]:
    """How many of the numbers named `<model>.<suffix>` pass `test` (None when none was measured)."""
    def truth(x: dict[str, float]) -> float | None:
        found = [v for k, v in x.items() if k.endswith(f".{suffix}")]
        return float(sum(map(test, found))) if found else None
    return truth
