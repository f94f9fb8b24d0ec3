"""Saved bytes and profiler peaks against a hand calculation on a small MLP."""

import torch
from torch import nn

from explorer.eager.graph import capture_graph
from explorer.eager.memory import live_peak, measure_peaks, param_bytes
from explorer.eager.trace import ModuleTrace

F32 = 4
B, D, H, C = 64, 256, 512, 4


def _mlp() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, C)), torch.randn(B, D)


def _saved(model: nn.Module, forward) -> int:
    with ModuleTrace(model) as trace:
        loss = forward()
    return capture_graph(loss.grad_fn, trace, {}).saved_activation_bytes()


def test_saved_bytes_dedup_by_storage_and_exclude_parameters():
    model, x = _mlp()
    # addmm 1 saves x (and W1, a parameter); relu saves its result; addmm 2 saves that same result
    # again (one storage) and W2 (a parameter); sum saves only sizes.
    assert _saved(model, lambda: model(x).sum()) == B * D * F32 + B * H * F32


def test_saved_bytes_leave_out_what_the_loss_does_not_reach():
    model, x = _mlp()

    def forward_with_a_dead_branch():
        out = model(x)
        (out * torch.ones(C)).exp()  # saved for a backward that never runs: the loss does not depend on it
        return out.sum()

    assert _saved(model, forward_with_a_dead_branch) == B * D * F32 + B * H * F32


def test_peaks_match_hand_calculation():
    model, x = _mlp()
    peaks = measure_peaks(model, x, lambda out: out.sum())
    hidden = B * H * F32
    # Forward: the first Linear's output and ReLU's output are alive together, then the first dies.
    assert peaks.forward == 2 * hidden
    assert peaks.grad_forward == 2 * hidden
    # Backward peaks while computing dW1: grads of W2 (H*C), b2 (C), the gradient w.r.t. the hidden
    # pre-activation (B*H), dW1 (D*H) and db1 (H), plus the 0-dim loss and its seed gradient.
    expected = (H * C + C + B * H + D * H + H) * F32 + 2 * F32
    assert peaks.train == expected


def test_param_bytes():
    model, _ = _mlp()
    assert param_bytes(model) == (D * H + H + H * C + C) * F32


def test_an_allocation_and_a_free_at_the_same_instant_do_not_hide_the_peak():
    events = [(1, 100), (2, -100), (2, 300), (3, -300)]  # the free and the allocation at t=2 tie
    assert live_peak(events) == 400 and live_peak(events, until_ns=1) == 100
    assert live_peak(events, from_ns=2) == 300  # a window counts above what was live when it began


def test_a_profiles_recorded_events_go_when_it_ends_without_a_cycle_collection(monkeypatch):
    """The profiler's recorded events sit in reference cycles; a full collection per profile cost the measuring
    core more than the profile (bench/RESULTS-gc.md), so the link to them is cut instead: with the collector off,
    the events are gone as soon as the profile has been read."""
    import gc
    import weakref

    results = []
    original = torch.profiler.profile.__exit__

    def remember(self, *exc):
        out = original(self, *exc)
        results.append(weakref.ref(self.profiler.kineto_results))
        return out

    monkeypatch.setattr(torch.profiler.profile, "__exit__", remember)
    collections = []
    monkeypatch.setattr(gc, "collect", lambda *generation: collections.append(generation) or 0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    gc.disable()
    try:
        measure_peaks(model, torch.randn(4, 8), lambda out: out.sum())
        assert results and results[0]() is None and collections == []
    finally:
        gc.enable()
