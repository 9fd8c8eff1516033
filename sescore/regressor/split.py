"""Train/validation split by reference: every variant of one reference lands on the same side.

Variants of a reference share most of their words, so a random row split lets validation loss reward
memorising references. The side is a pure function of (seed, reference text) through a keyed BLAKE2 hash,
not Python's per-process ``hash``: every run, process and DDP rank agrees on it without communicating.
"""

from __future__ import annotations

import hashlib
from typing import Sequence


def reference_fraction(reference: str, seed: int) -> float:
    """A uniform-looking number in [0, 1) determined by the reference text and the seed."""
    digest = hashlib.blake2b(reference.encode("utf-8"), digest_size=8, key=str(int(seed)).encode()).digest()
    return int.from_bytes(digest, "big") / 2**64


def is_validation_reference(reference: str, seed: int, val_fraction: float) -> bool:
    return reference_fraction(reference, seed) < val_fraction


def split_by_reference(references: Sequence[str], val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Row indices (train, validation); about ``val_fraction`` of the distinct references go to validation."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    side: dict[str, bool] = {}
    train: list[int] = []
    val: list[int] = []
    for index, reference in enumerate(references):
        if reference not in side:
            side[reference] = is_validation_reference(reference, seed, val_fraction)
        (val if side[reference] else train).append(index)
    return train, val
