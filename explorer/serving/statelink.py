"""A link that restores a Playground state: model, config, text and compile options as URL query
parameters, so a teacher can hand out exactly the example being shown.

Only what differs from the defaults goes into the link; reading one validates it like any other input."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from explorer.compile.options import CompileOptions
from explorer.core.errors import InputError
from explorer.core.inputs import check_text, tokenize
from explorer.sources.registry import make_config, source
from models.config import config_dict

_FLAGS = ("compile", "mark_dynamic", "fullgraph")


@dataclass(frozen=True)
class LinkState:
    model: str
    config: dict[str, Any]
    text: str
    compile: bool = False
    backend: str = "inductor"
    dynamic: str = "auto"
    mark_dynamic: bool = False
    fullgraph: bool = False

    def query(self) -> str:
        """'?model=rnn&text=...&hidden=32&compile=1' (defaults left out). The text is what runs: cut to the token
        limit, so a pasted book still gives a link a browser and a server accept."""
        defaults = config_dict(make_config(self.model))
        text = tokenize(self.text).text if self.text else self.text
        params: dict[str, Any] = {"model": self.model, "text": text}
        params |= {k: v for k, v in self.config.items() if defaults[k] != v}
        params |= {k: 1 for k in _FLAGS if getattr(self, k)}
        if self.compile:
            params |= {k: getattr(self, k) for k in ("backend", "dynamic")}
        return "?" + urlencode(params)


def _flag(raw: str, key: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off", ""):
        return False
    raise InputError(f"link parameter {key} must be 1 or 0; got {raw!r}")


def read_link(params: Mapping[str, str]) -> LinkState | None:
    """The state a link asks for, validated; None for a link without parameters."""
    params = dict(params)
    if not params:
        return None
    model = params.pop("model", None)
    if model is None:
        raise InputError("the link has no model parameter")
    source(model)  # unknown model: a clear message
    text = check_text(params.pop("text", ""), "link's text")
    flags = {k: _flag(params.pop(k), k) for k in _FLAGS if k in params}
    options = CompileOptions(params.pop("backend", "inductor"), params.pop("dynamic", "auto"))
    config = config_dict(make_config(model, params))  # the rest must be config fields, in range
    return LinkState(model, config, text, backend=options.backend, dynamic=options.dynamic, **flags)
