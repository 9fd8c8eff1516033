"""The precision a model's forward pass runs in when scoring: float32 (default) or bfloat16 autocast.

Why: on CPUs with AVX-512 BF16 or AMX and on GPUs from Ampere on, bfloat16 matrix products run about twice as fast
as float32 (``bench/bench_precision.py`` measures it on the machine it runs on). Only the model's own forward runs
under autocast; its outputs are cast back to float32 before any metric arithmetic (pooling, cosine similarities,
alignment, softmax). Rounding those to bfloat16's 8-bit mantissa would turn close scores into exact ties, which
the WMT tau-like counts against a metric. Weights stay float32: autocast rounds each product's inputs, not the model.

Scores in bfloat16 are close to float32's, not equal, so a scorer's signature names a non-default precision and
cached float32 scores are never reused for it.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

PRECISIONS = ("float32", "bfloat16")
DEFAULT_PRECISION = "float32"


def check_precision(precision: str) -> str:
    """``precision`` if known; otherwise an InputError (a ValueError) naming the choices, before any model loads."""
    from nlgmetrics.inputs import InputError

    if precision not in PRECISIONS:
        raise InputError(f"unknown precision '{precision}': choose {' or '.join(PRECISIONS)}")
    return precision


def precision_tag(precision: str) -> str:
    """The signature part of a non-default precision (empty for float32, so float32 signatures and the score
    caches keyed by them stay as they were)."""
    return "" if check_precision(precision) == DEFAULT_PRECISION else f"|precision:{precision}"


@contextlib.contextmanager
def forward_precision(device: Any, precision: str) -> Iterator[None]:
    """Run the model calls inside in ``precision`` on ``device`` (a torch.device or a string like "cuda:1").

    float32 is a no-op (``device`` may then be None). bfloat16 on a GPU without bfloat16 support stops with a clear error instead of running
    slowly in emulation.
    """
    import torch

    if check_precision(precision) == DEFAULT_PRECISION:
        yield
        return
    device_type = torch.device(device).type
    if device_type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError("precision bfloat16: this GPU has no bfloat16 support; use float32")
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        yield
