"""On-disk store of augmented references, so re-scoring costs only the encoder.

Generating augmented references is by far the slowest part of MARS and depends only on (reference, context,
ratio) and the augmentation settings. One cache file per augmentation-config hash (``nlgmetrics.diskcache``, the
toolkit's one cache format: append-only, fsync'd, its header naming the config) holds one record per (reference,
context, ratio).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from nlgmetrics.diskcache import CacheFile, record_key

KIND = "mars-augmentations"


def entry_key(reference: str, context: str, ratio: float) -> str:
    """The record key of one augmentation (the ratio rounded, so 0.1 and 0.1000000001 share it)."""
    return record_key(reference, context, round(float(ratio), 6))


class AugmentationCache:
    """Augmented references keyed by (reference, context, ratio) within one config ``namespace``.

    Args:
        directory: the cache folder (None: kept in memory only).
        namespace: the augmentation config's name; the file is ``<directory>/<namespace>.aug.jsonl``.
    """

    def __init__(self, directory: str | Path | None, namespace: str) -> None:
        self.file = (
            CacheFile(
                Path(directory).expanduser() / f"{namespace}.aug.jsonl",
                KIND,
                {"config": namespace},
                label="MARS augmentation cache",
                owner="augmentation config",
            )
            if directory
            else None
        )
        self._entries: dict[str, str] | None = None

    @property
    def path(self) -> Path | None:
        """The cache file, or None without a folder."""
        return self.file.path if self.file is not None else None

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = {}
            if self.file is not None:
                for key, value in self.file.read().items():
                    if not isinstance(value, str):
                        raise ValueError(f"{self.file.path}: the record {key} is not a text; move the file away")
                    self._entries[key] = value
        return self._entries

    def get(self, reference: str, context: str, ratio: float) -> str | None:
        """The stored augmentation of (reference, context, ratio), or None."""
        return self._load().get(entry_key(reference, context, ratio))

    def __len__(self) -> int:
        return len(self._load())

    def put(self, items: Iterable[tuple[str, str, float, str]]) -> None:
        """Store (reference, context, ratio, augmented) tuples in memory and append them to the file."""
        entries = self._load()
        fresh = {entry_key(reference, context, ratio): augmented for reference, context, ratio, augmented in items}
        entries.update(fresh)
        if self.file is not None:
            self.file.append(fresh)
