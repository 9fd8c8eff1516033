"""Per-row metric scores kept on disk, so a rerun (or a run killed half-way) scores only the rows it has not stored.

Why: the expensive runs of the toolkit score the same texts again and again. A blind-spot run scores 100k-300k
noised texts per metric (20-40 minutes for a trained metric on a CPU, hours for sentence-level MENLI); the dev mix
scores each set's half once per metric and per comparison; the benchmarks' ablations score the same dev rows under
many recipes. Losing that work to an interrupt, or paying it again for a second comparison against the same
baseline, is what this cache removes. The stress suite, ``evaluate.py devmix`` and the benchmarks all keep their
scores here.

One file (``<stem>.jsonl``, the toolkit's one cache format, ``nlgmetrics.diskcache``) holds one record per (name,
row): ``name`` is what would change the scores (a metric's signature, so scores of another checkpoint or setting
are never reused), the row a hash of its hypothesis, references and (where scored with one) source. Records are
appended and fsync'd after every chunk of scored rows, so a killed run keeps every finished chunk. Beside it,
``<stem>.costs.json`` adds up what scoring cost per name over every run that wrote it (rows, seconds, and any
running counters the caller reports, e.g. NLI pairs), so a run stopped and resumed across days still reports its
whole cost. A store of earlier versions (``<stem>.json``, one JSON object) is read once into the new file and
left where it is.

A row's score is reused wherever the same (hypothesis, references, source) comes back under the same name, which
assumes a metric scores a row the same whatever rows it is scored with: true of every metric here except a
combination normalised over the scored set (``menli+<metric> --normalization set``), whose scores depend on
their neighbours.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from nlgmetrics.diskcache import CacheFile, record_key

ScoreFn = Callable[[list[str], list, "list[str] | None"], Sequence[float]]
RowScores = Callable[[Any, Sequence[dict]], Sequence[float]]
KIND = "scores"  # the cache file's kind (nlgmetrics.diskcache)


def row_key(hyp: str, ref: Any, src: str | None = None) -> str:
    """Key of one scored row; a row scored without a source leaves it out of the key.

    Args:
        hyp: the hypothesis.
        ref: its reference, or its list of references.
        src: its source, or None for a row scored without one.

    Returns:
        A SHA-1 hex digest (``nlgmetrics.diskcache.record_key``).
    """
    return record_key(hyp, ref) if src is None else record_key(hyp, ref, src)


def _read_json(path: Path, what: str) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable {what} ({error}); move it away to start the scores afresh") from error
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError(f"{path}: not a {what} (expected {{name: {{...}}}}); move it away to start afresh")
    return value


def _name_key(name: str, key: str) -> str:
    """The record key of one row's score under one name."""
    return record_key(name, key)


class ScoreCache:
    """Per-row scores under names, in one append-only cache file; every chunk of scored rows is stored at once.

    Args:
        path: the score file ``<stem>.jsonl`` (``<stem>.json``, an earlier version's name, means the same store and
            is read once into the new file); its cost ledger is ``<stem>.costs.json`` beside it.
        reuse: other stores, read only: a row missing here whose score one of them holds under the same name is
            copied from it instead of scored (e.g. a MENLI mix's MENLI part from a finished ``menli`` run on the
            same rows); the ledger counts such rows as ``reused``, not as scored.
    """

    def __init__(self, path: str | Path, reuse: Sequence["ScoreCache"] = ()) -> None:
        given = Path(path)
        self.path = given.with_suffix(".jsonl")
        self.reuse = list(reuse)
        self.costs_path = self.path.with_name(self.path.stem + ".costs.json")
        legacy = given.with_suffix(".json")
        fresh = not self.path.exists()
        old = _read_json(legacy, "score store") if fresh and legacy.is_file() else {}
        self.file = CacheFile(self.path, KIND, label="score store")
        self._table: dict[str, float] = {k: float(v) for k, v in self.file.read().items()}
        if old:  # written by an earlier version: copied once, the old file left in place
            copied = {_name_key(name, k): float(v) for name, rows in old.items() for k, v in rows.items()}
            self.file.append(copied)
            self._table.update(copied)
        self.costs: dict[str, dict[str, float]] = (
            _read_json(self.costs_path, "cost ledger") if self.costs_path.exists() else {}
        )
        # () -> {"nli_pairs_scored": ..., ...}: running totals the ledger records the per-chunk differences of
        self.counters: Callable[[], dict[str, int]] | None = None

    def __len__(self) -> int:
        return len(self._table)

    def holds(self, name: str, key: str) -> bool:
        """Whether the row ``key`` (``row_key``) has a score stored under ``name``."""
        return _name_key(name, key) in self._table

    def get(self, name: str, key: str) -> float | None:
        """The score of the row ``key`` under ``name``, or None."""
        return self._table.get(_name_key(name, key))

    def store(self, name: str, scores: dict[str, float]) -> None:
        """Append ``{row key: score}`` under ``name`` to the file (durable on return)."""
        records = {_name_key(name, k): float(v) for k, v in scores.items()}
        self.file.append(records)
        self._table.update(records)

    def save(self) -> None:
        """Write the cost ledger atomically (the scores are on disk as soon as they are stored)."""
        from nlgmetrics.metaeval.textio import atomic_write

        with atomic_write(self.costs_path) as handle:
            handle.write(json.dumps(self.costs, indent=1))

    def _counted(self) -> dict[str, int]:
        return dict(self.counters()) if self.counters else {}

    def _record(self, name: str, rows: int, seconds: float, before: dict[str, int]) -> None:
        self._add(name, rows=rows, seconds=seconds, **{k: v - before.get(k, 0) for k, v in self._counted().items()})

    def _add(self, name: str, **amounts: float) -> None:
        """Add amounts to ``name``'s running totals in the ledger."""
        ledger = self.costs.setdefault(name, {})
        for key, value in amounts.items():
            ledger[key] = round(ledger.get(key, 0) + value, 1)

    def metric(
        self,
        name: str,
        fn: ScoreFn,
        chunk: int | None,
        log: Callable[[str], None] | None = print,
        sources: bool = True,
        label: str | None = None,
    ) -> Callable[[Sequence[str], Sequence, Any], list[float]]:
        """A metric ``fn(hyps, refs, srcs)`` that scores only the rows not stored under ``name``.

        Args:
            name: what the scores are stored under: whatever would change them (a signature).
            fn: the metric; it gets the rows still to score, each distinct row once.
            chunk: rows scored (and saved) per step; None scores every missing row in one call.
            log: gets one progress line per chunk (None: silent).
            sources: False for a reference-based metric: rows are keyed and scored without sources (``fn`` gets
                ``srcs=None``).
            label: the metric's name in the log lines when ``name`` is a long signature.

        Returns:
            ``score(hyps, refs, srcs) -> list[float]``, one score per row, stored or new.
        """
        if chunk is not None and chunk < 1:
            raise ValueError(f"chunk must be a positive number of rows, got {chunk}")
        say = log or (lambda _line: None)
        shown = label or name

        def score(hyps: Sequence[str], refs: Sequence, srcs: Sequence[str] | None) -> list[float]:
            srcs = srcs if sources else None
            keys = [
                row_key(h, r, None if srcs is None else s)
                for h, r, s in zip(hyps, refs, srcs if srcs is not None else [None] * len(hyps))
            ]
            first: dict[str, int] = {}  # one row per key: a row repeated in this call is scored once
            lent: dict[str, float] = {}  # rows another store holds under the same name
            for i, k in enumerate(keys):
                if not self.holds(name, k) and k not in lent:
                    found = next((v for v in (other.get(name, k) for other in self.reuse) if v is not None), None)
                    if found is not None:
                        lent[k] = found
                    else:
                        first.setdefault(k, i)
            reused = len(lent)
            if reused:
                self.store(name, lent)
                self._add(name, reused=reused)
                self.save()
            todo = list(first.values())
            say(
                f"{shown}: {sum(self.holds(name, k) for k in keys)} stored"
                + (f" ({reused} reused from other stores)" if reused else "")
                + f", {len(todo)} to score"
            )
            step = chunk or max(len(todo), 1)
            started = time.perf_counter()
            for start in range(0, len(todo), step):
                rows = todo[start : start + step]
                before, t0 = self._counted(), time.perf_counter()
                values = list(
                    fn(
                        [hyps[i] for i in rows],
                        [refs[i] for i in rows],
                        None if srcs is None else [srcs[i] for i in rows],
                    )
                )
                if len(values) != len(rows):
                    raise ValueError(f"metric {shown!r} returned {len(values)} scores for {len(rows)} rows")
                self.store(name, {keys[i]: float(v) for i, v in zip(rows, values)})
                self._record(name, len(rows), time.perf_counter() - t0, before)
                self.save()
                done = start + len(rows)
                rate = done / max(time.perf_counter() - started, 1e-9)
                left = (len(todo) - done) / rate / 60
                say(f"{shown}: {done}/{len(todo)} rows, {rate:.2f} rows/s, ~{left:.0f} min left")
            return [self.get(name, k) for k in keys]  # type: ignore[misc]

        return score


def _name_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _legacy_file(folder: Path, tag: str, signature: str, rows: Sequence[dict]) -> Path:
    """Where ``evaluate.py devmix --cache`` kept a whole list of scores before this cache: one file per
    (tag, signature, exact rows)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row.get("hyp"), row.get("refs"), row.get("src")], ensure_ascii=False).encode())
    key = _name_digest(signature + "\x1f" + digest.hexdigest())
    return folder / f"{tag}-{key}.json"


def _adopt_legacy(
    cache: ScoreCache, folder: Path, tag: str, signature: str, rows: Sequence[dict], keys: Sequence[str]
) -> None:
    """Copy the scores of a pre-cache whole-list file for exactly these rows into ``cache`` (then saved)."""
    if all(cache.holds(signature, k) for k in keys):
        return
    path = _legacy_file(folder, tag, signature, rows)
    if not path.is_file():
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return  # unreadable: the rows are scored again
    if stored.get("signature") != signature or len(stored.get("scores", [])) != len(rows):
        return
    cache.store(signature, {k: float(s) for k, s in zip(keys, stored["scores"])})


def cached_row_scores(
    scorer: Any,
    rows: Sequence[dict],
    folder: str | Path | None,
    tag: str,
    *,
    row_scores: RowScores | None = None,
    sources: bool = True,
    chunk: int | None = None,
    log: Callable[[str], None] | None = None,
) -> list[float]:
    """One score per judged row, the rows stored in ``folder`` read back and only the others scored.

    Args:
        scorer: a Scorer (``score(hyps, refs, srcs)`` and ``signature()``); its signature names the stored scores.
        rows: dicts with ``hyp``, ``refs`` (a list) and optionally ``src``.
        folder: the cache folder (one file per tag and signature); None scores without a cache.
        tag: what the rows are (e.g. ``<set file>-<half>-<split seed>``): rows of one tag share a file, so keep
            tags of overlapping rows equal to reuse their scores.
        row_scores: how rows are scored (default ``nlgmetrics.metaeval.score_rows``: each distinct row once).
        sources: False scores against the references only (sources blanked and left out of the key), e.g. to keep
            ``lm-ratio`` a fluency signal rather than a source-conditioned likelihood.
        chunk: rows scored between two saves (None: every missing row in one call).
        log: gets the cache's progress lines (None: silent).

    Returns:
        The rows' scores, in order.
    """
    from nlgmetrics.metaeval.rows import score_rows, source_text

    score_fn = row_scores or score_rows
    if folder is None:
        return [float(s) for s in score_fn(scorer, rows if sources else [{**r, "src": None} for r in rows])]
    folder = Path(folder)
    signature = scorer.signature()
    cache = ScoreCache(folder / f"{tag}-{_name_digest(signature)}.jsonl")
    hyps = [r["hyp"] for r in rows]
    refs = [list(r["refs"]) for r in rows]
    srcs = [source_text(r.get("src")) for r in rows] if sources else None
    srcs = srcs if srcs and any(srcs) else None
    keys = [
        row_key(h, r, None if srcs is None else s)
        for h, r, s in zip(hyps, refs, srcs if srcs is not None else [None] * len(rows))
    ]
    _adopt_legacy(cache, folder, tag, signature, rows, keys)

    def score(h: list[str], r: list, s: list[str] | None) -> list[float]:
        batch = [{"hyp": a, "refs": b, "src": c} for a, b, c in zip(h, r, s if s is not None else [None] * len(h))]
        return [float(x) for x in score_fn(scorer, batch)]

    return cache.metric(signature, score, chunk, log, sources=srcs is not None, label=tag)(hyps, refs, srcs)


__all__ = ["ScoreCache", "cached_row_scores", "row_key"]
