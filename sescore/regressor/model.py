"""SEScore's quality predictor: encoder -> mean-pooled sentence vectors -> RUSE/COMET features -> FFN -> score.

Pure PyTorch (no Lightning) so that training, export, the scorer and the torchmetrics class share one forward.
Candidate and reference are encoded by the same encoder; the head sees [c; r; c*r; |c-r|]. The released SEScore
v1 mixed all hidden layers with learned softmax weights before pooling; ``layer_mix`` turns that on.

The encoder is always loaded fresh from its folder (never through the shared ``modelroles`` cache): training
changes its weights and a checkpoint loads its own weights into it, which must not leak into other metrics.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from modelroles import ModelRoleError, fingerprint, resolve
from modelroles.batching import length_sorted_batches
from sescore.regressor.scale import check_scale

# LoRA on the attention projections and feed-forward of every transformer block (BERT/RoBERTa/XLM-R naming);
# the pooler is left out because SEScore pools the token states itself.
DEFAULT_LORA_TARGETS = (
    r".*encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense"
    r"|intermediate\.dense|output\.dense)"
)


@dataclass(frozen=True)
class LoraSettings:
    """Low-rank adapters on the encoder: small checkpoints (adapter + head) over a named, hashed base."""

    r: int = 8
    alpha: int = 16
    dropout: float = 0.1
    target_modules: str = DEFAULT_LORA_TARGETS


@dataclass(frozen=True)
class RegressorConfig:
    """Everything that shapes the network (and so must be in a checkpoint to rebuild it)."""

    encoder: str = "packaged:minilm"
    layer_mix: bool = False
    hidden_sizes: tuple[int, ...] = (2048, 1024)
    dropout: float = 0.1
    max_length: int = 256
    output_scale: str = "unit"
    lora: LoraSettings | None = None

    def __post_init__(self) -> None:
        check_scale(self.output_scale)
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive integers, got {list(self.hidden_sizes)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.max_length < 8:
            raise ValueError(f"max_length must be at least 8 tokens, got {self.max_length}")
        object.__setattr__(self, "hidden_sizes", tuple(int(h) for h in self.hidden_sizes))

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        body["hidden_sizes"] = list(self.hidden_sizes)
        return body

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "RegressorConfig":
        raw = dict(raw)
        lora = raw.pop("lora", None)
        return cls(**raw, lora=LoraSettings(**lora) if lora else None)


def masked_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, T, H] -> [B, H] mean over real tokens (the same pooling as ``baselines.mean_pooled``, differentiable)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def pair_features(cand: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """RUSE/COMET features [c; r; c*r; |c-r|]: symmetric similarity cues the head can weigh."""
    return torch.cat([cand, ref, cand * ref, (cand - ref).abs()], dim=-1)


class ScalarMix(nn.Module):
    """gamma * sum_k softmax(w)_k * layer_k; starts as the plain average of all layers."""

    def __init__(self, num_layers: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: Sequence[torch.Tensor]) -> torch.Tensor:
        mix = torch.softmax(self.weights, dim=0)
        return self.gamma * sum(w * layer for w, layer in zip(mix, layers))


def build_head(in_features: int, hidden_sizes: Sequence[int], dropout: float) -> nn.Sequential:
    """Feed-forward head: (Linear, tanh, dropout) per hidden size, then one linear output."""
    layers: list[nn.Module] = []
    width = in_features
    for size in hidden_sizes:
        layers += [nn.Linear(width, size), nn.Tanh(), nn.Dropout(dropout)]
        width = size
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


class SEScoreRegressor(nn.Module):
    """Encoder + optional layer mix + head. ``tokenizer`` is kept alongside (it is not a module)."""

    def __init__(self, config: RegressorConfig, encoder: nn.Module, tokenizer: Any, encoder_hash: str = "") -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.encoder_hash = encoder_hash
        base_config = encoder.config
        self.num_layers = int(base_config.num_hidden_layers)
        self.hidden_size = int(base_config.hidden_size)
        self.layer_mix = ScalarMix(self.num_layers + 1) if config.layer_mix else None
        self.head = build_head(4 * self.hidden_size, config.hidden_sizes, config.dropout)

    @property
    def device(self) -> torch.device:
        return next(self.head.parameters()).device

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        encoded = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.config.max_length, return_tensors="pt"
        )
        return {k: v.to(self.device) for k, v in encoded.items()}

    def embed(self, encoded: dict[str, torch.Tensor], encoder_grad: bool = True) -> torch.Tensor:
        """Pooled sentence vectors [B, H]; ``encoder_grad=False`` runs the encoder without a graph (frozen phase)."""
        with torch.set_grad_enabled(encoder_grad and torch.is_grad_enabled()):
            output = self.encoder(**encoded, output_hidden_states=self.layer_mix is not None)
        if self.layer_mix is not None:
            hidden = self.layer_mix(output.hidden_states)
        else:
            hidden = output.last_hidden_state
        return masked_mean(hidden, encoded["attention_mask"])

    def predict(self, cand: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """Scores [B] from pooled candidate and reference vectors."""
        return self.head(pair_features(cand, ref)).squeeze(-1)

    def forward(self, candidates: Sequence[str], references: Sequence[str], encoder_grad: bool = True) -> torch.Tensor:
        """Scores [B] for text pairs; both sides go through the encoder in one call (one padded batch)."""
        if len(candidates) != len(references):
            raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
        pooled = self.embed(self.tokenize(list(candidates) + list(references)), encoder_grad)
        return self.predict(pooled[: len(candidates)], pooled[len(candidates) :])

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str], batch_size: int = 64) -> torch.Tensor:
        """[N, H] pooled vectors in input order; length-sorted batches, longest first."""
        out: torch.Tensor | None = None
        for batch in length_sorted_batches([len(t) for t in texts], batch_size):
            pooled = self.embed(self.tokenize([texts[i] for i in batch]), encoder_grad=False)
            if out is None:
                out = torch.empty((len(texts), pooled.shape[-1]), dtype=pooled.dtype, device=pooled.device)
            out[torch.as_tensor(batch, device=pooled.device)] = pooled
        if out is None:
            return torch.empty((0, self.hidden_size), device=self.device)
        return out


def load_base_encoder(spec: str) -> tuple[nn.Module, Any, str]:
    """A fresh (uncached) encoder, its tokenizer and weight hash for a role value; clear errors when unusable."""
    from transformers import AutoModel, AutoTokenizer

    resolved = resolve("encoder", spec)
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved.location)
        encoder = AutoModel.from_pretrained(resolved.location)
    except (OSError, ValueError, KeyError) as error:
        raise ModelRoleError(f"role 'encoder': cannot load '{spec}' from {resolved.location}: {error}") from error
    return encoder, tokenizer, fingerprint(resolved.location)


def add_lora(encoder: nn.Module, lora: LoraSettings) -> nn.Module:
    """Wrap the encoder with peft LoRA; only the adapters stay trainable inside the encoder."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                        target_modules=lora.target_modules, bias="none")
    return get_peft_model(encoder, config)


def build_regressor(config: RegressorConfig) -> SEScoreRegressor:
    """A trainable regressor: fresh encoder (LoRA-wrapped when asked), new layer mix and head.

    The pooler is frozen: SEScore pools the token states itself, and a parameter that never gets a gradient
    makes DDP stop with an "unused parameters" error.
    """
    encoder, tokenizer, encoder_hash = load_base_encoder(config.encoder)
    for name, parameter in encoder.named_parameters():
        if name.startswith("pooler."):
            parameter.requires_grad_(False)
    if config.lora is not None:
        encoder = add_lora(encoder, config.lora)
    encoder.train()  # from_pretrained returns eval mode; Lightning keeps the modes it finds
    return SEScoreRegressor(config, encoder, tokenizer, encoder_hash)


def scores_from_vectors(
    regressor: SEScoreRegressor, vectors: torch.Tensor, cand_rows: np.ndarray, ref_rows: np.ndarray, batch_size: int = 1024
) -> np.ndarray:
    """Head scores for pairs given by row indices into ``vectors`` (the head is cheap; batches keep memory flat)."""
    out = np.zeros(len(cand_rows), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(cand_rows), batch_size):
            c = torch.as_tensor(cand_rows[start : start + batch_size], device=vectors.device)
            r = torch.as_tensor(ref_rows[start : start + batch_size], device=vectors.device)
            out[start : start + batch_size] = regressor.predict(vectors[c], vectors[r]).double().cpu().numpy()
    return out


__all__ = [
    "DEFAULT_LORA_TARGETS", "LoraSettings", "RegressorConfig", "ScalarMix", "SEScoreRegressor", "add_lora",
    "build_head", "build_regressor", "load_base_encoder", "masked_mean", "pair_features", "scores_from_vectors",
]
