"""Remembered NLI probabilities: each distinct (premise, hypothesis) pair goes through the model once.

Sentence-level MENLI on paragraphs and the stress tests both score the same pairs again and again: a perturbed
paragraph shares all but one or two sentences with the gold one, and every perturbation level pairs them with
the same reference sentences. The model dominates the cost, so a bounded memo in front of it turns those runs
from days into hours. Probabilities of a pair do not depend on what else is in the call (only on the batch it
is padded with, at the level of float rounding), so cached and uncached scores agree to ~1e-6.

With ``path`` the cache also lives in a JSON Lines file: runs that take several days (MENLI over every sentence pair
of the blind-spot suites: ~0.9 million distinct pairs on TED-MT) are stopped and resumed, and without the file
every restart would send the pairs it shares with earlier chunks through the model again. It is the toolkit's one
cache format (``nlgmetrics.diskcache``: append-only, fsync'd), and its header names the model it holds
probabilities of: a file made with another model is refused, not mixed in. The NLI teacher cache
(``distill.teacher_probabilities``) is such a file too.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nlgmetrics.diskcache import CacheFile, record_key

KIND = "nli-pairs"  # the cache file's kind (nlgmetrics.diskcache); values are [e, n, c] probabilities


def pair_key(premise: str, hypothesis: str) -> str:
    """The file key of one pair (the texts themselves would make pair files several times larger)."""
    return record_key(premise, hypothesis)


def pair_file(folder: str | Path, nli_hash: str) -> Path:
    """The pair file of one NLI model in a folder of pair files, named by its weights' hash.

    Args:
        folder: the folder that holds the files (one per NLI model).
        nli_hash: the hash of the model's weights (``NLIModel.hash``).

    Returns:
        ``<folder>/<hash[:16]>.pairs.jsonl``.
    """
    return Path(folder) / f"{nli_hash[:16]}.pairs.jsonl"


def model_identity(nli: Any) -> dict[str, Any]:
    """What the probabilities depend on: the weights' hash, the calibration temperature and the truncation window."""
    return {name: getattr(nli, name, None) for name in ("hash", "temperature", "max_length")}


class PairCache:
    """Wraps an ``NLIModel`` (or anything with its ``predict_proba``); other attributes pass through.

    ``max_pairs`` bounds memory (least recently used pairs go first); ``hits``/``misses`` count pairs (a pair
    found in the file is a hit). ``path``: a JSON Lines file the cache is read from and every newly scored pair is
    appended to after each call (created if missing); its pairs are kept in memory whatever ``max_pairs`` says.
    """

    def __init__(self, nli: Any, max_pairs: int = 200_000, path: str | Path | None = None) -> None:
        if max_pairs < 1:
            raise ValueError(f"max_pairs must be >= 1, got {max_pairs}")
        self.nli, self.max_pairs = nli, max_pairs
        self._memo: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.hits = self.misses = 0
        self.path = Path(path) if path is not None else None
        self._stored: dict[str, np.ndarray] = self._read(self.path) if self.path is not None else {}

    def _read(self, path: Path) -> dict[str, np.ndarray]:
        """The file's pairs (``nlgmetrics.diskcache``: refused if made with another model)."""
        self._file = CacheFile(path, KIND, model_identity(self.nli), label="NLI pair cache", owner="NLI model")
        stored: dict[str, np.ndarray] = {}
        for key, probs in self._file.read().items():
            if not isinstance(probs, list) or len(probs) != 3:
                raise ValueError(f"{path}: the record {key} is not three probabilities ({probs!r}); move the file away")
            stored[key] = np.asarray(probs, dtype=np.float64)
        return stored

    def _append(self, fresh: dict[str, np.ndarray]) -> None:
        """``fresh``: file key -> probabilities of the pairs this call scored."""
        self._stored.update(fresh)
        self._file.append({key: [float(x) for x in row] for key, row in fresh.items()})

    def __getattr__(self, name: str) -> Any:  # max_length, tokenizer, hash, spec, ...
        if name == "nli":  # not yet set (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.nli, name)

    def __len__(self) -> int:
        return len(self._memo)

    def stored(self, premise: str, hypothesis: str) -> bool:
        """Whether the pair would be answered without the model (in memory or in the file); counts nothing."""
        return (premise, hypothesis) in self._memo or (
            bool(self._stored) and pair_key(premise, hypothesis) in self._stored
        )

    def predict_proba(
        self,
        premises: Sequence[str],
        hypotheses: Sequence[str],
        batch_size: int = 64,
        progress: bool = False,
        desc: str = "NLI",
    ) -> np.ndarray:
        """[N, 3] probabilities like ``NLIModel.predict_proba``; only unseen distinct pairs reach the model."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        keys = list(zip(premises, hypotheses))
        missing = [k for k in dict.fromkeys(keys) if k not in self._memo]
        hashed = {k: pair_key(*k) for k in missing} if self.path is not None else {}  # once per pair and call
        if self._stored and missing:
            for key in missing:
                row = self._stored.get(hashed[key])
                if row is not None:
                    self._memo[key] = row
            missing = [k for k in missing if k not in self._memo]
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        fresh: dict[tuple[str, str], np.ndarray] = {}
        if missing:
            probs = self.nli.predict_proba(
                [k[0] for k in missing], [k[1] for k in missing], batch_size=batch_size, progress=progress, desc=desc
            )
            fresh = dict(zip(missing, np.asarray(probs, dtype=np.float64)))
            if self.path is not None:
                self._append({hashed[key]: row for key, row in fresh.items()})
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
