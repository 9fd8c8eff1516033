"""Remembered NLI probabilities: each distinct (premise, hypothesis) pair goes through the model once.

Sentence-level MENLI on paragraphs and the stress tests both score the same pairs again and again: a perturbed
paragraph shares all but one or two sentences with the gold one, and every perturbation level pairs them with
the same reference sentences. The model dominates the cost, so a bounded memo in front of it turns those runs
from days into hours. Probabilities of a pair do not depend on what else is in the call (only on the batch it
is padded with, at the level of float rounding), so cached and uncached scores agree to ~1e-6.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

import numpy as np


class PairCache:
    """Wraps an ``NLIModel`` (or anything with its ``predict_proba``); other attributes pass through.

    ``max_pairs`` bounds memory (least recently used pairs go first); ``hits``/``misses`` count pairs.
    """

    def __init__(self, nli: Any, max_pairs: int = 200_000) -> None:
        if max_pairs < 1:
            raise ValueError(f"max_pairs must be >= 1, got {max_pairs}")
        self.nli, self.max_pairs = nli, max_pairs
        self._memo: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:  # max_length, tokenizer, hash, spec, ...
        if name == "nli":  # not yet set (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.nli, name)

    def __len__(self) -> int:
        return len(self._memo)

    def predict_proba(self, premises: Sequence[str], hypotheses: Sequence[str], batch_size: int = 64,
                      progress: bool = False, desc: str = "NLI") -> np.ndarray:
        """[N, 3] probabilities like ``NLIModel.predict_proba``; only unseen distinct pairs reach the model."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        keys = list(zip(premises, hypotheses))
        missing = [k for k in dict.fromkeys(keys) if k not in self._memo]
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        fresh: dict[tuple[str, str], np.ndarray] = {}
        if missing:
            probs = self.nli.predict_proba([k[0] for k in missing], [k[1] for k in missing], batch_size=batch_size,
                                           progress=progress, desc=desc)
            fresh = dict(zip(missing, np.asarray(probs)))
        out = np.zeros((len(keys), 3), dtype=np.float64)
        for index, key in enumerate(keys):
            row = fresh.get(key)
            if row is None:
                row = self._memo[key]
                self._memo.move_to_end(key)
            out[index] = row
        for key, row in fresh.items():
            self._memo[key] = row
        while len(self._memo) > self.max_pairs:
            self._memo.popitem(last=False)
        return out
