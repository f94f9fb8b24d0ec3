"""Where a node's label goes: beside its node, on the side where it covers no label placed before it (plotly draws
text where it is told and never moves it apart). Boxes are estimated in pixels from the plot's size, for 12-px
text."""

from __future__ import annotations

from dataclasses import dataclass

CHAR_PX = 7.0  # a little over the measured 6.5: an estimate that errs towards apart
LINE_PX = 18  # a 12-px line's box, measured in Chromium: 16-17 px
SIDES = ("top center", "bottom center", "middle right", "middle left", "top right", "top left", "bottom right",
         "bottom left")
EDGE_PX = 20  # past the outermost markers: plotly's autorange padding and the figure's 10-px margin


@dataclass(frozen=True)
class Spot:
    """A labelled point: where it is (data units), how far its marker reaches (px), what it says and where it
    would rather have it."""

    x: float
    y: float
    radius_px: float
    text: str
    side: str  # one of SIDES


def _box(s: Spot, side: str, px: tuple[float, float]) -> tuple[float, float, float, float]:
    """(left, bottom, right, top) in pixels of `s`'s text on `side`."""
    x, y, r = s.x * px[0], s.y * px[1], s.radius_px
    w, h = CHAR_PX * len(s.text) + 4, LINE_PX
    if side == "top center":
        return x - w / 2, y + r, x + w / 2, y + r + h
    if side == "bottom center":
        return x - w / 2, y - r - h, x + w / 2, y - r
    if side == "middle right":
        return x + r, y - h / 2, x + r + w, y + h / 2
    if side == "middle left":
        return x - r - w, y - h / 2, x - r, y + h / 2
    vertical, horizontal = side.split()
    bottom = y + r if vertical == "top" else y - r - h
    left = x if horizontal == "right" else x - w
    return left, bottom, left + w, bottom + h


def _cross(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _sides(side: str) -> list[str]:
    """`side` first, then the others on its level (a label under its node stays under it), then the rest."""
    level = side.split()[0]
    return [side, *(o for o in SIDES if o != side and o.startswith(level)),
            *(o for o in SIDES if not o.startswith(level))]


def placed(spots: list[Spot], plot_px: tuple[float, float]) -> list[tuple[str, str]]:
    """(text, side) for each spot, in `spots`' order of priority: its own side if free and inside the plot, else
    the first such one of the others; a label with no such side is left to the hover text and the legend ("", its
    side). `plot_px`: the plot's width and height, over which the spots' data range is spread."""
    xs, ys = [s.x for s in spots] or [0.0], [s.y for s in spots] or [0.0]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    scale = (plot_px[0] / span_x, plot_px[1] / span_y)
    # the figure's sides in pixels: text past them is cut ("ayers.0.fwd, step 0" at the left edge)
    edge = (min(xs) * scale[0] - EDGE_PX, max(xs) * scale[0] + EDGE_PX) if max(xs) > min(xs) else (-1e12, 1e12)
    taken: list[tuple[float, ...]] = []
    out = []
    for s in spots:
        if not s.text:
            out.append(("", s.side))
            continue
        for side in _sides(s.side):
            box = _box(s, side, scale)
            if edge[0] <= box[0] and box[2] <= edge[1] and not any(_cross(box, t) for t in taken):
                taken.append(box)
                out.append((s.text, side))
                break
        else:
            out.append(("", s.side))
    return out
