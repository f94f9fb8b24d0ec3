"""A model this project did not write: top-1 mixture-of-experts routing. The router picks one expert per token and
`nonzero` gathers each expert's tokens, an output shape that depends on the data (dynamo skips the forward)."""
import torch
from torch import nn


class MoE(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 32, experts: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
                                     for _ in range(experts))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        flat = x.reshape(-1, x.shape[-1])
        choice = self.router(flat).argmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            picked = (choice == e).nonzero().squeeze(-1)
            out[picked] = expert(flat[picked])
        return self.head(out.reshape(x.shape))


def build(dim: int = 32, experts: int = 4) -> nn.Module:
    return MoE(dim=dim, experts=experts)
