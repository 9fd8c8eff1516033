"""Where synthesis time goes: wall time versus time inside model calls, per model."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator


class Stopwatch:
    """Accumulates seconds per label; ``measure`` wraps each model call so the report can say what is slow."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def measure(self, label: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[label] += time.perf_counter() - start
            self.calls[label] += 1

    def total(self) -> float:
        return float(sum(self.seconds.values()))

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            label: {"seconds": round(self.seconds[label], 4), "calls": self.calls[label]}
            for label in sorted(self.seconds)
        }


__all__ = ["Stopwatch"]
