"""Optimiser set-up for fine-tuning an encoder under a fresh head (the released SEScore v1 / COMET recipe).

- Separate learning rates: the new head moves faster than the pretrained encoder.
- Layer-wise lr decay: block k of L gets ``encoder_lr * decay ** (L - k)``, embeddings ``decay ** L``, so
  lower (more general) layers change least.
- Encoder warm freeze: for the first fraction of an epoch only the head (and layer mix) learns, so the random
  head's large early gradients do not wreck the pretrained encoder. The freeze is a learning-rate factor of 0 on
  the encoder groups, which keeps the weights exactly still and works unchanged under DDP (no parameter changes
  ``requires_grad`` after DDP has wrapped the model).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from torch import nn

_BLOCK = re.compile(r"(?:^|\.)layers?\.(\d+)\.")

GROUP_KIND = "kind"  # param-group key: "encoder" or "head"


def layer_depth(name: str, num_layers: int) -> int:
    """0 for embeddings, k + 1 for transformer block k, ``num_layers`` for anything else (final norms)."""
    if "embeddings" in name:
        return 0
    match = _BLOCK.search(name)
    if match:
        return min(int(match.group(1)) + 1, num_layers)
    return num_layers


def freeze_embeddings(encoder: nn.Module) -> int:
    """Stop gradients to the embedding tables (v1 recipe); returns how many tensors were frozen."""
    count = 0
    for name, parameter in encoder.named_parameters():
        if "embeddings" in name and parameter.requires_grad:
            parameter.requires_grad_(False)
            count += 1
    return count


def param_groups(
    encoder: nn.Module,
    head_modules: Iterable[nn.Module],
    encoder_lr: float,
    head_lr: float,
    num_layers: int,
    layerwise_decay: float = 1.0,
    weight_decay: float = 0.0,
) -> list[dict[str, Any]]:
    """AdamW parameter groups: one per encoder depth (decayed lr) plus one for the head; frozen tensors left out."""
    if not 0.0 < layerwise_decay <= 1.0:
        raise ValueError(f"layerwise_decay must be in (0, 1], got {layerwise_decay}")
    if encoder_lr < 0 or head_lr <= 0:
        raise ValueError(f"learning rates must be positive (encoder {encoder_lr}, head {head_lr})")
    by_depth: dict[int, list[nn.Parameter]] = {}
    for name, parameter in encoder.named_parameters():
        if parameter.requires_grad:
            by_depth.setdefault(layer_depth(name, num_layers), []).append(parameter)
    groups = [
        {
            "params": params,
            "lr": encoder_lr * layerwise_decay ** (num_layers - depth),
            "weight_decay": weight_decay,
            GROUP_KIND: "encoder",
            "depth": depth,
        }
        for depth, params in sorted(by_depth.items())
    ]
    head_params = [p for module in head_modules for p in module.parameters() if p.requires_grad]
    groups.append({"params": head_params, "lr": head_lr, "weight_decay": weight_decay, GROUP_KIND: "head"})
    return groups


def freeze_factor(kind: str, frozen_steps: Callable[[], int]) -> Callable[[int], float]:
    """LambdaLR factor: 0 for encoder groups while ``step < frozen_steps()``, else 1 (constant lr, as v1)."""
    if kind == "head":
        return lambda step: 1.0
    return lambda step: 0.0 if step < frozen_steps() else 1.0
