"""The process's loaded models, one table for every role: the encoders and LMs of ``load_model``, the NLI models
of ``nlgmetrics.nli.load_nli`` and the NLI pair memos SEScore's features keep in front of them.

Why one table: a process that scores several metrics asks for the same weights through different doors, and each
door keeping its own cache either loads a model twice or keeps one alive after it was let go (a distillation
teacher). Keys say which door built the value (``("nli", spec, device)``); the least recently used entry goes
when the table is full.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, TypeVar

T = TypeVar("T")
MAX_ENTRIES = 16


class ModelMemo:
    """Least-recently-used table of loaded models (not thread-safe: model loading is not either)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value stored under ``key``, built (and stored) on first use."""
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        value = build()
        self._entries[key] = value
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def forget(self, value: Any) -> None:
        """Drop every entry holding ``value`` (identity), so its memory goes once the caller lets go too."""
        for key in [k for k, v in self._entries.items() if v is value]:
            del self._entries[key]

    def keys(self) -> list[Hashable]:
        return list(self._entries)

    def clear(self) -> None:
        self._entries.clear()


MODELS = ModelMemo()


def memoised(key: Hashable, build: Callable[[], T]) -> T:
    """``MODELS.get(key, build)``: the process-wide table (looked up at each call, so a test may swap it).

    Args:
        key: a tuple naming the door and what it loads, e.g. ``("nli", "packaged:nli-mpnet", "cpu")``.
        build: loads the value when it is not in the table.

    Returns:
        The stored or newly built value.
    """
    return MODELS.get(key, build)


def forget(value: Any) -> None:
    """Drop ``value`` from the process-wide table (``ModelMemo.forget``)."""
    MODELS.forget(value)


__all__ = ["MAX_ENTRIES", "MODELS", "ModelMemo", "forget", "memoised"]
