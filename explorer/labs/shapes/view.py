"""The shapes lab's view as plain data: what each dimension became in each cached graph, their guards on shapes with
the lines dynamo recorded, and every distinct length of the requests, predicted beside what dynamo did."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from explorer.core import machine
from explorer.labs.contract import Kind, Output
from explorer.labs.shapes.guards import CachedGraph
from explorer.labs.shapes.predict import STANCES, Outcome
from explorer.labs.shapes.results import ShapesResult
from explorer.labs.shapes.symbols import DUCK

GRAPH_COLUMNS = ("graph", "the input's dimensions in it", "guards on shapes")
GUARD_COLUMNS = ("graph", "guard, in dynamo's words", "the line dynamo recorded", "that line")
SYMBOL_COLUMNS = ("graph", "dimension or symbol", "became", "size or range", "the line that made it so",
                  "that line (or why)")
LENGTH_COLUMNS = ("length", "requests", "first at request", "predicted", "why (the newest graph's failing guard)",
                  "dynamo did", "agrees", "graphs of inner frames")
OUTPUTS = (
    Output("summary", Kind.MARKDOWN),
    Output("lengths", Kind.TABLE, "each distinct length, predicted before any ran, then run", LENGTH_COLUMNS,
           prose=(LENGTH_COLUMNS[4],)),
    Output("graphs", Kind.TABLE, "the graphs dynamo cached for the forward (newest first)", GRAPH_COLUMNS),
    Output("symbols", Kind.TABLE, "what each dimension of the input became in each graph, and the symbols born "
           "inside the forward", SYMBOL_COLUMNS, prose=(SYMBOL_COLUMNS[5],)),
    Output("guards", Kind.TABLE, "their guards on the input's shape", GUARD_COLUMNS, prose=(GUARD_COLUMNS[1],)),
)


@dataclass
class ShapesView:
    status: str
    summary: str
    lengths: list[list[Any]]
    graphs: list[list[Any]]
    symbols: list[list[Any]]
    guards: list[list[Any]]
    report: dict[str, Any]


def _dims(g: CachedGraph, name: str) -> str:
    if g.symbols.dimensions:
        return ", ".join(f"{name}.size({d.index}) = " + (f"{d.symbol} {d.became} {d.value}" if d.symbol else
                                                         f"{d.value} ({d.became})") for d in g.symbols.dimensions)
    return ", ".join(f"{name}.size({i}) = {'dynamic' if d == 'dynamic' else f'{d} (specialized)'}"
                     for i, d in enumerate(g.dims)) or "not read"


def _symbols(r: ShapesResult) -> list[list[Any]]:
    rows = []
    for g in r.graphs:
        rows += [[g.compile_id, f"{r.input_name}.size({d.index})" + (f" = {d.symbol}" if d.symbol else ""), d.became,
                  d.value, d.line or "—", d.code or "—"] for d in g.symbols.dimensions]
        rows += [[g.compile_id, f"{u.symbol} (from {u.op})", "unbacked", u.value or "—", u.line or "—",
                  u.code or "—"] for u in g.symbols.unbacked]
    return rows


def _became(r: ShapesResult) -> list[str]:
    """The specializations and the unbacked symbols, said once each (the newest graph that has it)."""
    said: dict[str, str] = {}
    for g in r.graphs:
        for d in g.symbols.dimensions:
            if d.became == "specialized" and d.line:
                said.setdefault(f"d{d.index}", f"- `{r.input_name}.size({d.index})` was traced as {d.symbol} and "
                                f"**specialized to {d.value}** at {d.line} (`{d.code}`): another size needs "
                                "another graph.")
        ducks = [d for d in g.symbols.dimensions if d.code.startswith(DUCK)]
        if ducks:
            sizes = " and ".join(f"`{r.input_name}.size({d.index})`" for d in ducks)
            said.setdefault("duck", f"- {sizes} were equal when traced and share one symbol, {ducks[0].symbol} "
                            f"(**duck sizing**, in graph {g.compile_id}): it holds only inputs where they are equal "
                            "(its guard says so); `duck_shape` off gives each its own symbol.")
        for u in g.symbols.unbacked:
            said.setdefault(f"u{u.line}{u.op}", f"- `{u.op}` at {u.line or 'a line dynamo did not record'} "
                            f"(`{u.code}`) gave {u.symbol}, a size only the data decides (unbacked, {u.value}).")
    return list(said.values())


def _summary(r: ShapesResult) -> str:
    n = len(r.requests)
    said = [f"**{r.model}** compiled with {r.setting} at {', '.join(map(str, r.compiled_at))} tokens, then "
            f"{n} requests."]
    if r.graphs:
        by_stance = (f", {r.count(Outcome.HELD, True)} run eagerly and {r.count(Outcome.REFUSED, True)} failing by "
                     "the stance" if STANCES[r.stance] is not None else "")
        said.append(f"Before any request ran, their guards predicted **{r.count(Outcome.COMPILES, True)} compile(s)**,"
                    f" {r.count(Outcome.EAGER, True)} eager run(s) past the recompile limit ({r.limit}){by_stance} and"
                    f" {r.count(Outcome.REUSES, True)} reuse(s), in {r.predict_s * 1000:.0f} ms for all {n}. Run: "
                    f"{r.count(Outcome.COMPILES, False)} compile(s), "
                    f"{r.count(Outcome.EAGER, False) + r.count(Outcome.HELD, False)} eager, "
                    f"{r.count(Outcome.REFUSED, False)} failed, {r.count(Outcome.REUSES, False)} reuse(s): "
                    f"**{r.agreed} of {n} agree**.")
    else:
        said.append(f"The forward itself has no graph ({r.requests[0].predicted.why if r.requests else r.skipped}): "
                    f"it runs eagerly, and so does every request; {r.agreed} of {n} agree.")
    inner = sum(q.inner for q in r.requests)
    if inner:
        said.append(f"Frames inside the forward (after a graph break, or a callee) compiled {inner} graph(s) while "
                    "the requests ran: their inputs exist only while the model runs, so their guards predict nothing "
                    "here.")
    said += _became(r)
    for e in r.exported:
        where = f" The compiled graphs show where: the length was specialized at {e.line} (`{e.code}`)."
        said.append((f"- torch.export with {e.dim}: range constraints {e.ranges}." if not e.error else
                     f"- torch.export with {e.dim} refused: {e.error}") + (where if e.line else ""))
    for b in r.breaks:
        said.append(f"- Graph break: {b.one_line()}" + (f" — the setting for it: `{b.lever}`" if b.lever else ""))
    return "\n\n".join(said[:2]) + ("\n\n" + "\n".join(said[2:]) if len(said) > 2 else "")


def _lengths(r: ShapesResult) -> list[list[Any]]:
    rows: dict[int, list[Any]] = {}
    for i, q in enumerate(r.requests, 1):
        p = q.predicted
        if p.length in rows:
            rows[p.length][1] += 1
            continue
        rows[p.length] = [p.length, 1, i, p.outcome.value + (f" ({p.graph})" if p.graph else ""), p.why or "—",
                          q.did.value + (f" ({q.graph})" if q.graph else ""), "yes" if q.agrees else "**no**",
                          q.inner]
    return [rows[k] for k in sorted(rows)]


def _plain(value: Any) -> Any:
    """The report as JSON holds it: an outcome by its words."""
    if isinstance(value, Outcome):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def view_of(result: ShapesResult) -> ShapesView:
    name = f"L['{result.input_name}']"
    graphs = [[g.compile_id, _dims(g, result.input_name), len(g.guards)] for g in result.graphs]
    guards = [[g.compile_id, x.code, x.where or "—", x.source or "—"] for g in result.graphs for x in g.guards]
    status = (f"{result.agreed} of {len(result.requests)} requests did what their guards predicted; "
              f"{len(result.graphs)} graph(s) of the forward cached, its input {name}.")
    report = {**_plain(asdict(result)), "agreed": result.agreed, "machine": machine.describe()}
    return ShapesView(status, _summary(result), _lengths(result), graphs, _symbols(result), guards, report)


def _lengths_became(r: dict[str, Any]) -> dict[int, str]:
    """Each input dimension as the newest graph traced it: its symbol, what it became and its range or size."""
    if not r["graphs"]:
        return {}
    return {d["index"]: f"{d['symbol'] or d['value']} {d['became']}" + (f" {d['value']}" if d["symbol"] else "")
            for d in r["graphs"][0]["symbols"]["dimensions"]}


def against(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What a lever changed, one run of the same model against the next: the graphs of the forward, the compiles
    predicted, the breaks, the requests as predicted and what each dimension became ("" for another model, or the
    same setting)."""
    if (before.get("model"), before.get("config")) != (after["model"], after["config"]):
        return ""
    if (before["setting"], before["compiled_at"]) == (after["setting"], after["compiled_at"]):
        return ""

    def predicted(r: dict[str, Any]) -> int:
        return sum(q["predicted"]["outcome"] == Outcome.COMPILES.value for q in r["requests"])

    counts = (("graphs of the forward", lambda r: len(r["graphs"])), ("compiles predicted", predicted),
              ("graph breaks", lambda r: len(r["breaks"])), ("requests", lambda r: len(r["requests"])),
              ("as predicted", lambda r: r["agreed"]))
    said = [f"{label} {a} → {b}" for label, count in counts if (a := count(before)) != (b := count(after))]
    was, now = _lengths_became(before), _lengths_became(after)
    said += [f"`{after['input_name']}.size({i})` {was.get(i, 'not traced')} → {now.get(i, 'not traced')}"
             for i in sorted(set(was) | set(now)) if was.get(i) != now.get(i)]
    return (f"**Against your previous run** ({before['setting']} at {before['compiled_at']} → {after['setting']} at "
            f"{after['compiled_at']}): " + ("; ".join(said) or "the same graphs, breaks and predictions") + ".")


def format_shapes(report: dict[str, Any]) -> str:
    """The report as the CLI prints it: the agreement, then each distinct length's prediction and outcome."""
    lines = [f"{report['model']} ({report['setting']}), compiled at {report['compiled_at']}: "
             f"{report['agreed']} of {len(report['requests'])} requests as predicted "
             f"(predicted in {report['predict_s'] * 1000:.0f} ms)"]
    for g in report["graphs"]:
        lines.append(f"  graph {g['compile_id']}: dims {list(g['dims'])}, {len(g['guards'])} guard(s) on shapes")
        for d in g["symbols"]["dimensions"]:
            if d["symbol"]:
                lines.append(f"    size({d['index']}) = {d['symbol']}: {d['became']} {d['value']}"
                             + (f" at {d['line']}: {d['code']}" if d["line"] else ""))
        for u in g["symbols"]["unbacked"]:
            lines.append(f"    {u['symbol']} (unbacked, {u['value']}) from {u['op']} at {u['line']}: {u['code']}")
    for e in report.get("exported", ()):
        lines.append(f"  torch.export with {e['dim']}: " + (f"range constraints {e['ranges']}" if not e["error"] else
                     f"refused: {e['error']}") + (f" [specialized at {e['line']}: {e['code']}]" if e["line"] else ""))
    seen: set[int] = set()
    for q in report["requests"]:
        p = q["predicted"]
        if p["length"] not in seen:
            seen.add(p["length"])
            lines.append(f"  {p['length']:>5} tokens: predicted {p['outcome']}, did {q['did']}"
                         + (f"  [{p['why'][:100]}]" if p["why"] else ""))
    return "\n".join(lines)
