"""How figures are written, everywhere they are shown: cards, tables, the CLI, reports and bench results."""

from __future__ import annotations


def format_bytes(n: float | None) -> str:
    if n is None:
        return "…"
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def ms_iqr(median_ms: float | None, iqr_ms: float | None, digits: int = 2) -> str:
    """A timing with its spread: '1.23 ms (IQR 0.04)', or '—' when there is no figure."""
    if median_ms is None:
        return "—"
    return f"{median_ms:.{digits}f} ms (IQR {iqr_ms:.{digits}f})"


def format_flops(total: int | None, useful: int | None) -> str:
    """A lab strategy's FLOPs: 'GFLOP total (useful share)', or why there is no count."""
    if not total:
        return "not counted"
    return f"{total / 1e9:.3f} ({(useful or 0) / total:.0%})"


def count(n: int, noun: str) -> str:
    """'1 token', '42 tokens': a count as a sentence says it."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
