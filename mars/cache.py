"""On-disk store of augmented references, so re-scoring costs only the encoder.

Generating augmented references is by far the slowest part of MARS and depends only on (reference, context,
ratio) and the augmentation settings. One JSON-lines file per augmentation-config hash holds one line per
(reference, context, ratio); lines are appended, never rewritten, and unreadable lines are skipped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable


def entry_key(reference: str, context: str, ratio: float) -> str:
    payload = json.dumps([reference, context, round(float(ratio), 6)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class AugmentationCache:
    """Augmented references keyed by (reference, context, ratio) within one config ``namespace``."""

    def __init__(self, directory: str | Path | None, namespace: str) -> None:
        self.path = Path(directory).expanduser() / f"{namespace}.jsonl" if directory else None
        self._entries: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = {}
            if self.path is not None and self.path.is_file():
                with open(self.path, encoding="utf-8") as handle:
                    for line in handle:
                        try:
                            item = json.loads(line)
                            self._entries[item["key"]] = item["augmented"]
                        except (json.JSONDecodeError, KeyError, TypeError):
                            continue
        return self._entries

    def get(self, reference: str, context: str, ratio: float) -> str | None:
        return self._load().get(entry_key(reference, context, ratio))

    def __len__(self) -> int:
        return len(self._load())

    def put(self, items: Iterable[tuple[str, str, float, str]]) -> None:
        """Store (reference, context, ratio, augmented) tuples in memory and append them to the file."""
        entries = self._load()
        lines = []
        for reference, context, ratio, augmented in items:
            key = entry_key(reference, context, ratio)
            entries[key] = augmented
            lines.append(
                json.dumps(
                    {"key": key, "ratio": ratio, "reference": reference, "context": context, "augmented": augmented},
                    ensure_ascii=False,
                )
            )
        if self.path is not None and lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
