"""The regressor's building blocks, pure tensor functions and small modules: pooling, the RUSE/COMET pair
features, BERTScore-style greedy alignment, the learned layer mix and the feed-forward head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

from nlgmetrics.modelroles.encode import masked_mean


def pair_features(cand: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """RUSE/COMET features [c; r; c*r; |c-r|]: symmetric similarity cues the head can weigh."""
    return torch.cat([cand, ref, cand * ref, (cand - ref).abs()], dim=-1)


def greedy_alignment(
    cand: torch.Tensor, cand_mask: torch.Tensor, ref: torch.Tensor, ref_mask: torch.Tensor
) -> torch.Tensor:
    """[B, 3] BERTScore precision, recall, F1 of unit-norm token states [B, T, H] under boolean masks [B, T].

    Each candidate token takes its most similar reference token (precision) and vice versa (recall), averaged
    over the real content tokens. A side without content tokens (empty text) scores 0 instead of NaN.
    """
    sim = torch.einsum("bih,bjh->bij", cand, ref)
    floor = torch.finfo(sim.dtype).min
    best_for_cand = sim.masked_fill(~ref_mask[:, None, :], floor).amax(-1)
    best_for_ref = sim.masked_fill(~cand_mask[:, :, None], floor).amax(1)
    c_any, r_any = cand_mask.any(-1, keepdim=True), ref_mask.any(-1, keepdim=True)
    best_for_cand = torch.where(r_any & cand_mask, best_for_cand, torch.zeros_like(best_for_cand))
    best_for_ref = torch.where(c_any & ref_mask, best_for_ref, torch.zeros_like(best_for_ref))
    precision = best_for_cand.sum(-1) / cand_mask.sum(-1).clamp(min=1)
    recall = best_for_ref.sum(-1) / ref_mask.sum(-1).clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-6)
    return torch.stack([precision, recall, f1], dim=-1)


@dataclass
class TextStates:
    """Encoded texts: pooled vectors [B, H]; with alignment also unit-norm token states [B, T, H] and the
    boolean mask of real content tokens [B, T] (padding and special tokens off)."""

    pooled: torch.Tensor
    tokens: torch.Tensor | None = None
    mask: torch.Tensor | None = None

    def rows(self, index: torch.Tensor | slice) -> "TextStates":
        return TextStates(
            self.pooled[index],
            None if self.tokens is None else self.tokens[index],
            None if self.mask is None else self.mask[index],
        )


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


__all__ = ["ScalarMix", "TextStates", "build_head", "greedy_alignment", "masked_mean", "pair_features"]
