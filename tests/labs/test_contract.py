"""The lab contract, checked on every registered lab: what a spec declares is what its tab, its CLI verb and its
endpoint get, and a bad value is refused by the declaration before any work."""

import dataclasses
import inspect
import time
import typing

import pytest

from explorer.api import config_values, endpoint_parameters
from explorer.cli import lab_values, parser
from explorer.core import limits
from explorer.core.errors import USER_ERRORS
from explorer.labs.registry import LABS


@pytest.mark.parametrize("name", sorted(LABS))
def test_a_labs_view_has_a_field_for_each_output_it_declares(name):
    spec = LABS[name]
    view = typing.get_type_hints(spec.view)["return"]
    assert {f.name for f in dataclasses.fields(view)} == {o.name for o in spec.outputs} | {"status", "report"}


def test_a_tables_prose_columns_are_among_its_columns():
    from explorer.labs.contract import Kind, Output

    assert [c for spec in LABS.values() for o in spec.outputs for c in o.prose]  # the labs declare some
    with pytest.raises(ValueError, match=r"prose columns \['why'\] are not among its columns"):
        Output("table", Kind.TABLE, "per route", ("route", "note"), prose=("why",))


@pytest.mark.parametrize("name", sorted(LABS))
def test_the_endpoint_and_the_cli_verb_are_made_from_the_spec(name):
    spec = LABS[name]
    params = endpoint_parameters(spec)
    names = [k.name for k in spec.knobs()]  # each lab's folder pins its own (test_its_endpoint_keeps_its_parameters)
    assert [p.name for p in params] == [*names[:spec.model_at], "model", "config_json", *names[spec.model_at:]]
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    assert spec.parse({k: v for k, v in defaults.items() if k not in ("model", "config_json")}) == spec.parse({})
    args = parser().parse_args([name, "--model", "rnn"])
    assert spec.parse(lab_values(args, spec)) == spec.parse({})  # no option given: the spec's defaults


def test_the_clis_historic_spellings_still_set_their_parameters():
    batch = parser().parse_args(["batch", "--model", "rnn", "--lengths-from", "uniform", "--compile"])
    assert LABS["batch"].parse(lab_values(batch, LABS["batch"])).distribution == "uniform"
    assert LABS["batch"].parse(lab_values(batch, LABS["batch"])).backend == "inductor"
    debug = parser().parse_args(["debug", "--model", "rnn", "--mode", "eager,traced,eager"])
    assert LABS["debug"].parse(lab_values(debug, LABS["debug"])).modes == ("eager", "traced")  # each once


@pytest.mark.parametrize(("lab", "values", "message"), [
    ("batch", {"n": 2.5}, "n must be a whole number; got 2.5"),
    ("batch", {"n": float("nan")}, "n must be a finite number"),
    ("batch", {"n": True}, "n must be a number; got True"),
    ("batch", {"n": "1" * 400}, "n must be between 1 and"),
    ("batch", {"distribution": ["zipf"]}, "distribution must be one of"),
    ("batch", {"backend": "x" * 100_000}, "…"),  # echoed back at most 80 characters
    ("batch", {"lines": None}, "lines must be text"),
    ("deploy", {"lengths": ",".join(["8"] * 9)}, None),  # nine copies of one length are one length
    ("deploy", {"lengths": "1,2,3,4,5,6,7,8,9"}, "lengths takes at most 8 numbers"),
    ("deploy", {"routes": 7}, "routes must be a comma-separated list"),
    ("ddp", {"world_size": "2.7"}, "world_size must be a whole number"),
    ("ddp", {"sceanrio": "unused"}, "unknown parameter 'sceanrio'"),
])
def test_a_bad_value_is_refused_by_its_declaration_in_one_short_line(lab, values, message):
    start = time.perf_counter()
    if message is None:
        assert LABS[lab].parse(values).lengths == (8,)
        return
    with pytest.raises(USER_ERRORS) as e:
        LABS[lab].parse(values)
    said = str(e.value)
    assert message in said and "\n" not in said and len(said) < 400 and time.perf_counter() - start < 0.1


@pytest.mark.parametrize(("raw", "message"), [
    # (refused as too deep by Python's recursion limit, or once inductor has raised it, parsed and refused as a list)
    ("[" * 1000 + "]" * 1000, "config must be a (flat )?JSON object"),
    ('{"layers": {"a": {"b": 1}}}', "flat JSON object"),
    ('{"layers": ' + "9" * 309 + "}", "a number of 309 digits"),
    ("x" * 20_000, "config is 20,000 characters"),
    (7, "config must be a JSON object"),
])
def test_a_config_is_a_small_flat_json_object(raw, message):
    with pytest.raises(USER_ERRORS, match=message):
        config_values(raw)
    assert config_values('{"layers": 2}') == {"layers": 2} and config_values({"layers": 2}) == {"layers": 2}


@pytest.mark.parametrize(("lab", "values", "said"), [
    ("deploy", {"lengths": "1,2,3,4,5,6,7,8"}, "6 route(s) x 10 inputs checked = 60; this server takes at most 40 "
                                               "per request (GE_MAX_DEPLOY_CHECKS)"),
    ("ddp", {"scenario": "uneven", "steps": 20}, "2 processes x 20 steps = 40; this server takes at most 39"),
    ("batch", {"n": 256, "min_len": 512, "max_len": 512}, "256 sentences x 512 tokens (padded) = 131,072; this "
                                                          "server takes at most 1,000"),
])
def test_a_run_past_its_labs_work_limit_is_refused_before_any_work_and_the_default_run_is_not(lab, values, said,
                                                                                               monkeypatch):
    spec = LABS[lab]
    assert spec.work is not None
    key = spec.work(spec.parse()).limit
    at = next(i for i, limit in enumerate(limits.LIMITS) if limit.key == key)
    spec.parse()  # the tab's defaults: within the limit as shipped
    if lab != "deploy":  # a limit an operator lowered (GE_...): the same refusal
        lowered = {"max_rank_steps": 39, "max_batch_tokens": 1000}[key]
        lowered_limits = [*limits.LIMITS]
        lowered_limits[at] = dataclasses.replace(limits.LIMITS[at], value=lowered)
        monkeypatch.setattr(limits, "LIMITS", lowered_limits)
    start = time.perf_counter()
    with pytest.raises(USER_ERRORS) as e:
        spec.parse(values)
    assert said in str(e.value) and time.perf_counter() - start < 0.1


def test_a_lab_added_is_its_package_and_one_registry_line_the_rest_follows(monkeypatch):
    """A lab added (the debugging lab's spec under a new name, with a worker of its own) by its registry line alone:
    the CLI has its verb, the API its endpoint, which runs it, the page its tab and its endpoint, the server its
    worker and a queue of its own, and the docs ask for its page. Nothing else names a lab to list it."""
    from explorer import api
    from explorer.docgen import generated
    from explorer.labs import registry
    from explorer.labs.contract import LabContext, OwnWorker
    from explorer.ui.app import build_app, public_api
    from explorer.workers.protocol import Here, Workers

    here = Here()
    echo = dataclasses.replace(LABS["debug"], name="echo", title="Echo lab", worker=OwnWorker("echo", lambda: here))
    monkeypatch.setitem(registry.LABS, "echo", echo)

    assert parser().parse_args(["echo", "--model", "rnn", "--mode", "eager"]).modes == "eager"
    assert api.workers()["echo"] is here and echo.runner(api.workers()) is here and echo.waits_in == "echo"
    report = api.endpoint(echo, lambda: LabContext(Workers.on(here), lambda: "")).run(model="rnn", modes="eager")
    assert [m["mode"] for m in report["modes"]] == ["eager"]
    assert public_api(build_app())["echo"] == ("model", "config_json", "bug", "text", "modes")
    assert any(page.name == "echo.md" and page.parent.name == "labs" for page in generated())
