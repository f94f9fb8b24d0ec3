"""Hugging Face `transformers` architectures as model sources: GPT-2, BERT, Llama and T5, each built from its config
class with seeded random weights (`Model(Config(...))`, never `from_pretrained`: nothing is downloaded, and every
process runs with HF_HUB_OFFLINE=1, set in explorer/__init__.py).

These are production code paths the zoo does not have: attention masks built from the lengths, SDPA dispatch, tied
embeddings, rotary positions (Llama), relative position buckets and an encoder-decoder (T5). Each takes the byte
ids like a zoo model (vocabulary 256) and answers one row per sentence: the next-byte logits at its last token
(a classifier's logits for BERT), so every lab runs it, padded batches included."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from explorer.core.limits import MAX_GENERATED, MAX_TOKENS
from explorer.sources.contract import Supports
from explorer.sources.probe import ProbedSource
from models.config import ConfigError, Knob, build_config, knob, knobs

if TYPE_CHECKING:
    from explorer.sources.library_cache import LibraryCache

VOCAB = 256  # the byte tokenizer's ids; the special tokens are bytes too (0), since the default ids (50256) are not
POSITIONS = MAX_TOKENS + MAX_GENERATED  # a decoder's positions: a prompt at the token limit, then a whole generation


@dataclass(frozen=True)
class LibraryConfig:
    layers: int = knob(2, "Blocks (T5: in the encoder and in the decoder).", min=1, max=12)
    heads: int = knob(4, "Attention heads per block.", min=1, max=16)
    width: int = knob(64, "Hidden size; a multiple of heads.", min=8, max=512, step=8)
    seed: int = knob(0, "Seed of the random weights.", min=0, max=2**31 - 1)

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ConfigError(f"width ({self.width}) must be a multiple of heads ({self.heads})")


def _gpt2(c: LibraryConfig) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=c.width, n_layer=c.layers,
                                      n_head=c.heads, bos_token_id=0, eos_token_id=0))


def _bert(c: LibraryConfig) -> nn.Module:
    from transformers import BertConfig, BertForSequenceClassification
    return BertForSequenceClassification(BertConfig(
        vocab_size=VOCAB, hidden_size=c.width, num_hidden_layers=c.layers, num_attention_heads=c.heads,
        intermediate_size=4 * c.width, max_position_embeddings=MAX_TOKENS, pad_token_id=0, num_labels=2))


def _llama(c: LibraryConfig) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=c.width, intermediate_size=4 * c.width, num_hidden_layers=c.layers,
        num_attention_heads=c.heads, num_key_value_heads=c.heads, max_position_embeddings=POSITIONS,
        bos_token_id=0, eos_token_id=0, pad_token_id=0))


def _t5(c: LibraryConfig) -> nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration
    return T5ForConditionalGeneration(T5Config(
        vocab_size=VOCAB, d_model=c.width, d_kv=c.width // c.heads, d_ff=4 * c.width, num_layers=c.layers,
        num_decoder_layers=c.layers, num_heads=c.heads, decoder_start_token_id=0, pad_token_id=0, eos_token_id=0))


class LibraryModel(nn.Module):
    """A library model behind the zoo's interface: `forward(ids, lengths=None)` -> (batch, classes)."""

    def __init__(self, net: nn.Module, seq2seq: bool, cache: bool) -> None:
        super().__init__()
        self.net, self.seq2seq, self.cache = net, seq2seq, cache

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        mask = None if lengths is None else (torch.arange(ids.shape[1]) < lengths[:, None]).long()
        extra: dict[str, Any] = {"decoder_input_ids": ids} if self.seq2seq else {}
        if self.cache:
            extra["use_cache"] = False  # a train step over the whole input: no KV cache to build
        logits = self.net(input_ids=ids, attention_mask=mask, **extra).logits
        if logits.dim() == 2:
            return logits  # a sequence classifier already answers one row per sentence
        if lengths is None:
            return logits[:, -1]
        return logits[torch.arange(ids.shape[0]), lengths - 1]  # each sentence's own last token, not the padding


class LibraryDecoder(LibraryModel):
    """A library decoder that also generates, with the library's own caches (explorer/sources/library_cache.py)."""

    def new_cache(self, pads: torch.Tensor, kind: str | None = None) -> LibraryCache:
        from explorer.sources.library_cache import LibraryCache  # imports transformers' caches: only to generate

        return LibraryCache(self.net.config, pads, kind or "dynamic", POSITIONS)

    def step(self, ids: torch.Tensor, cache: LibraryCache) -> torch.Tensor:
        """The logits (B, t, 256) of the new tokens `ids` after what `cache` holds; the cache holds them after."""
        return self.net(input_ids=ids, past_key_values=cache.held, use_cache=True, **cache.inputs(ids.shape[1])
                        ).logits


def _offline() -> None:
    """HF_HUB_OFFLINE=1 (explorer/__init__.py) is read when huggingface_hub is imported; a process that imported it
    before the engine (gradio does; a notebook may) reads it here too. Nothing is ever fetched: every model is
    built from its config, and this makes an accidental fetch fail instead of downloading."""
    import huggingface_hub.constants

    huggingface_hub.constants.HF_HUB_OFFLINE = True


@dataclass(frozen=True)
class Architecture:
    name: str
    title: str
    summary: str
    make: Callable[[LibraryConfig], nn.Module]
    seq2seq: bool = False
    cache: bool = True  # its forward takes use_cache
    generates: bool = False  # a decoder: the generation lab runs it with the library's caches


ARCHITECTURES = (
    Architecture("gpt2", "GPT-2 (transformers)", "Hugging Face's GPT-2, built from GPT2Config with random weights: "
                 "causal attention through SDPA, learned positions, tied embeddings.", _gpt2, generates=True),
    Architecture("bert", "BERT (transformers)", "Hugging Face's BERT classifier, built from BertConfig: a padding "
                 "mask from the lengths, a pooler over the first token.", _bert, cache=False),
    Architecture("llama", "Llama (transformers)", "Hugging Face's Llama, built from LlamaConfig: rotary positions, "
                 "RMSNorm, a gated MLP.", _llama, generates=True),
    Architecture("t5", "T5 (transformers)", "Hugging Face's T5, built from T5Config: an encoder-decoder with "
                 "relative position buckets and cross-attention.", _t5, seq2seq=True),
)


class LibrarySource(ProbedSource):
    """One architecture of the `transformers` library as a model source."""

    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        self.arch = arch
        self.name, self.title, self.summary = arch.name, arch.title, arch.summary
        self.supports = Supports(batched=True, trainable=True, exportable=True)
        self.tree: tuple[str, str] | None = None
        self.own_code = False  # the library's code, built from validated knobs only

    def knobs(self) -> list[Knob]:
        return knobs(LibraryConfig)

    def config(self, values: Mapping[str, Any] | None = None) -> LibraryConfig:
        return build_config(LibraryConfig, values)

    def _model(self, config: LibraryConfig) -> LibraryModel:
        _offline()
        kind = LibraryDecoder if self.arch.generates else LibraryModel
        return kind(self.arch.make(config), self.arch.seq2seq, self.arch.cache)

    def build(self, config: LibraryConfig) -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            model = self._model(config)
        model.cfg = config
        model.source = self.name  # how `builds` tells the four apart: they share one class
        return model.eval()

    def builds(self, module: nn.Module) -> bool:
        return isinstance(module, LibraryModel) and getattr(module, "source", None) == self.name

    def param_count(self, config: LibraryConfig) -> int:
        with torch.device("meta"):
            return sum(p.numel() for p in self._model(config).parameters())


def library_sources() -> list[LibrarySource]:
    return [LibrarySource(a) for a in ARCHITECTURES]
