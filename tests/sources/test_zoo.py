"""The model contract, held by every zoo model: what a lab may rely on, checked on the real models."""

import pytest
import torch

from explorer.core.errors import USER_ERRORS
from explorer.sources.registry import SOURCES, source, subject


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_a_source_builds_runs_trains_and_counts_what_it_says(name):
    s = source(name)
    config = s.config({"seed": 3})
    model = s.build(config)
    (ids,) = s.example_inputs("The cat sat.")
    out = model(*s.example_inputs("The cat sat."))
    loss = s.loss(out)
    loss.backward()
    assert ids.shape == (1, 12) and loss.ndim == 0 and torch.isfinite(loss)
    assert s.param_count(config) == sum(p.numel() for p in model.parameters())
    assert s.activation_bytes(config, 12, 1) > 0 and {k.name for k in s.knobs()} >= {"seed"}
    same = s.build(config)  # deterministic weights for the config
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), same.parameters(), strict=True))


def test_an_unknown_model_or_value_is_refused_with_one_line_that_quotes_it_briefly():
    with pytest.raises(USER_ERRORS, match="unknown model 'gpt'; models are: rnn"):
        source("gpt")
    with pytest.raises(USER_ERRORS) as e:
        source("x" * 10_000)
    assert len(str(e.value)) < 200
    with pytest.raises(USER_ERRORS, match="layers must be between"):
        subject("rnn", {"layers": 99})
