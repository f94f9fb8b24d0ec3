"""An operator's model file that crashes its worker (a native crash, SIGSEGV) past 40 tokens: the app must capture an
operator's file in a worker, report the crash and keep serving (tests/app/test_app.py)."""
import os
import signal

from torch import nn


class Crashing(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(256, 4)

    def forward(self, ids):
        if ids.shape[1] > 40:
            os.kill(os.getpid(), signal.SIGSEGV)  # a native crash, past the lengths the server's checks probe
        return self.embed(ids).sum(1)


def build(width: int = 4):
    return Crashing()
