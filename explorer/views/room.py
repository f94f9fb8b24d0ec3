"""A class's room as its pages show it: the step's prediction and who has answered, the room's answers as bars
beside the measured answer once revealed, and the address students join at (from how the teacher's page reached
the server, and what the server listens on)."""

from __future__ import annotations

import functools
import html
import ipaddress
import socket

import plotly.graph_objects as go

from explorer.claims.room import Distribution, RoomRun, RoomView

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _said(value: float | str | None, unit: str) -> str:
    if isinstance(value, float):
        return f"{value:g}{' ' + unit if unit else ''}"
    return "—" if value is None else str(value)


def room_markdown(v: RoomView) -> str:
    """The room's line, the prediction, this page's answer (a student's), and the measured answer once revealed."""
    who = "teacher" if v.teacher else "student"
    lines = [f"**Room {v.code}** ({who}) · step {v.step} · {v.students} joined · **{v.answered} answered**",
             f"**Predict:** {html.escape(v.question)}" + (f" (a number, {v.unit})" if not v.choices else "")]
    if not v.teacher:
        lines.append(f"Your answer: **{_said(v.mine, v.unit)}**" if v.mine is not None else "Not answered yet.")
    if v.revealed:
        lines.append(f"**Measured on this server: {_said(v.measured, v.unit)}**" if v.measured is not None else
                     "**Not measured on this server yet**: the room's answers alone; run the step's experiment.")
    elif v.teacher:
        lines.append("The evidence is folded until you reveal it.")
    else:
        lines.append("The evidence appears when the teacher reveals it.")
    return "\n\n".join(lines)


def distribution_figure(v: RoomView, height: int = 300) -> go.Figure | None:
    """The room's answers as bars (the measured answer's bar marked), once revealed; None before. The same figure
    for every page of the room (made once: a reveal has every page ask for it at once; nobody changes it)."""
    if not v.revealed or v.distribution is None or not v.distribution.answers:
        return None
    return _bars(v.distribution, v.measured, v.unit, height)


@functools.lru_cache(maxsize=64)
def _bars(d: Distribution, measured: float | str | None, unit: str, height: int) -> go.Figure:
    marked = [_holds(label, measured) for label in d.labels]
    fig = go.Figure(go.Bar(x=list(d.labels), y=list(d.counts), text=[str(c) for c in d.counts], textposition="auto",
                           marker_color=["#d62728" if m else "#1f77b4" for m in marked],
                           hovertemplate="%{x}: %{y} answers<extra></extra>"))
    title = f"The room's {d.answers} answers" + (f" (median {d.median:g})" if d.median is not None else "")
    if measured is not None:
        title += f"<br>measured: {_said(measured, unit)} (red)"  # two lines: the step's column is narrow
        at = [label for label, m in zip(d.labels, marked, strict=True) if m]
        if at:  # marked under its bar, which no answer may have filled
            fig.add_trace(go.Scatter(x=at[:1], y=[0], mode="markers+text", text=["measured"],
                                     textposition="top center", marker={"symbol": "triangle-up", "size": 18,
                                                                         "color": "#d62728"},
                                     hoverinfo="skip", showlegend=False, cliponaxis=False))
    fig.update_layout(title=title, height=height, margin={"l": 40, "r": 10, "t": 70, "b": 60}, font={"size": 16},
                      showlegend=False,  # the bars and the measured mark: the title says which is which
                      plot_bgcolor="white",
                      yaxis={"title": "answers", "dtick": 1 if max(d.counts) <= 10 else None},
                      xaxis={"title": unit or "answer", "type": "category"})
    return fig


def runs_figure(v: RoomView, height: int = 320) -> go.Figure | None:
    """The room's runs of their own inputs during the step, once revealed: each input's tokens against its graph's
    nodes, one series per architecture (a page's latest runs only; no one named). None when nobody ran one. The
    same figure for every page of the room, made once (a reveal has every page ask for it at once)."""
    if not v.revealed or not v.runs:
        return None
    return _scatter(v.runs, height)


@functools.lru_cache(maxsize=16)
def _scatter(runs: tuple[RoomRun, ...], height: int) -> go.Figure:
    fig = go.Figure()
    for arch in sorted({r.arch for r in runs}):
        mine = [r for r in runs if r.arch == arch]
        fig.add_scatter(x=[r.tokens for r in mine], y=[r.nodes for r in mine], mode="markers", name=arch,
                        marker={"size": 10, "opacity": 0.7},
                        hovertemplate="%{x} tokens: %{y} nodes<extra>" + html.escape(arch) + "</extra>")
    n = len(runs)
    fig.update_layout(title=f"The room's own inputs: {n} run{'' if n == 1 else 's'}", height=height,
                      plot_bgcolor="white", margin={"l": 60, "r": 10, "t": 50, "b": 50}, font={"size": 16},
                      xaxis={"title": "the input's tokens", "gridcolor": "#eee", "rangemode": "tozero"},
                      yaxis={"title": "graph nodes", "gridcolor": "#eee", "rangemode": "tozero"})
    return fig


def _holds(label: str, measured: float | str | None) -> bool:
    """Whether a bar's label holds the measured answer (a choice by name, a number by its bin's range)."""
    if measured is None:
        return False
    if isinstance(measured, str):
        return label == measured
    lo, sep, hi = label.partition("-") if not label.startswith("-") else ("", "", "")
    if not sep:
        return label == f"{measured:g}"
    try:
        return float(lo) <= measured <= float(hi)
    except ValueError:
        return False


def lan_address() -> str | None:
    """This machine's address on its network (the interface a packet out would leave by; nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(address).is_loopback else address


def join_address(page_host: str, listens_on: str, port: int, code: str) -> tuple[str, str]:
    """(the address students open, what to know about it): the address the teacher's page used, unless that is
    this machine's own loopback, which the room's machines cannot reach."""
    host = page_host.rsplit(":", 1)[0].strip("[]") if page_host else ""
    if host and host not in LOOPBACK:
        return f"http://{page_host}/?room={code}", ""
    lan = lan_address()
    if listens_on in LOOPBACK:
        return (f"http://{page_host or f'127.0.0.1:{port}'}/?room={code}",
                f"This server listens on {listens_on} only: the room's machines cannot reach it. Start it with "
                f"GRADIO_SERVER_NAME=0.0.0.0 and students join at http://{lan or 'this-machine'}:{port}/?room={code}.")
    if lan is None:
        return f"http://{page_host}/?room={code}", "This machine has no network address the room could reach."
    return f"http://{lan}:{port}/?room={code}", ""
