"""Remembered NLI probabilities: each distinct (premise, hypothesis) pair goes through the model once.

Sentence-level MENLI on paragraphs and the stress tests both score the same pairs again and again: a perturbed
paragraph shares all but one or two sentences with the gold one, and every perturbation level pairs them with
the same reference sentences. The model dominates the cost, so a bounded memo in front of it turns those runs
from days into hours. Probabilities of a pair do not depend on what else is in the call (only on the batch it
is padded with, at the level of float rounding), so cached and uncached scores agree to ~1e-6.

With ``path`` the cache also lives in a JSON Lines file: runs that take several days (MENLI over every sentence pair
of the blind-spot suites: ~0.9 million distinct pairs on TED-MT) are stopped and resumed, and without the file
every restart would send the pairs it shares with earlier chunks through the model again. The file is append-only
(nothing written is rewritten), and names the model it holds probabilities of: a file made with another model is
refused, not mixed in. The NLI teacher cache (``distill.teacher_probabilities``) is such a file too.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

FILE_FORMAT = "nlgmetrics-nli-pairs/2"  # /1 keyed pairs by another hash, in [key, e, n, c] lists


def pair_key(premise: str, hypothesis: str) -> str:
    """The file key of one pair (the texts themselves would make pair files several times larger)."""
    return hashlib.sha1(f"{premise}\x1f{hypothesis}".encode("utf-8")).hexdigest()


def pair_record(key: str, probs: Sequence[float]) -> str:
    """One line of a pair file: ``{"k": key, "p": [e, n, c]}`` (floats written exactly)."""
    return json.dumps({"k": key, "p": [float(x) for x in probs]}) + "\n"


def read_pair_record(line: str) -> tuple[str, list[float]]:
    """The inverse of ``pair_record``; ValueError for anything else (a corrupt or cut-off line)."""
    try:
        entry = json.loads(line)
        key, probs = entry["k"], entry["p"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"not a pair record: {line[:80]!r}") from error
    if not isinstance(key, str) or not isinstance(probs, list) or len(probs) != 3:
        raise ValueError(f"not a pair record: {line[:80]!r}")
    return key, probs


def pair_file(folder: str | Path, nli_hash: str) -> Path:
    """The pair file of one NLI model in a folder of pair files, named by its weights' hash.

    Args:
        folder: the folder that holds the files (one per NLI model).
        nli_hash: the hash of the model's weights (``NLIModel.hash``).

    Returns:
        ``<folder>/<hash[:16]>.jsonl``.
    """
    return Path(folder) / f"{nli_hash[:16]}.jsonl"


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
        """The file's pairs; a new file gets its header. A last line cut off by a kill is dropped (and cut from
        the file, so the next append starts on a fresh line); any other unreadable line is an error."""
        identity = model_identity(self.nli)
        if not path.exists() or path.stat().st_size == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"format": FILE_FORMAT, "model": identity}) + "\n")
            return {}
        raw = path.read_bytes()
        complete = raw.rfind(b"\n") + 1
        try:
            lines = raw[:complete].decode("utf-8").splitlines()
            header = json.loads(lines[0]) if lines else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            header = None
        if not isinstance(header, dict) or header.get("format") != FILE_FORMAT:  # checked before any change
            raise ValueError(
                f"{path}: not an NLI pair cache (its first line is not a {FILE_FORMAT} header); "
                "pass another path or move the file away"
            )
        if header.get("model") != identity:
            raise ValueError(
                f"{path} holds probabilities of another NLI model ({header.get('model')}), this one is "
                f"{identity}; pass another path or move the file away"
            )
        if complete < len(raw):
            with open(path, "r+b") as handle:
                handle.truncate(complete)
        stored: dict[str, np.ndarray] = {}
        for number, line in enumerate(lines[1:], start=2):
            try:
                key, probs = read_pair_record(line)
            except ValueError as error:
                raise ValueError(
                    f"{path}, line {number}: not a {{k, p}} pair record ({line[:80]!r}); the file is "
                    "corrupt: move it away (its pairs are then scored again)"
                ) from error
            stored[key] = np.asarray(probs, dtype=np.float64)
        return stored

    def _append(self, fresh: dict[str, np.ndarray]) -> None:
        """``fresh``: file key -> probabilities of the pairs this call scored."""
        self._stored.update(fresh)
        with open(self.path, "a", encoding="utf-8") as handle:  # type: ignore[arg-type]
            handle.write("".join(pair_record(key, row) for key, row in fresh.items()))
            handle.flush()
            os.fsync(handle.fileno())

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
