"""Per-row stress scores kept on disk, so a killed stress run resumes where it stopped.

A blind-spot run scores every noised text of every test in one call per metric: 100k-300k rows for the suites of
docs/stress/, 20-40 minutes for a trained metric on a CPU, hours for sentence-level MENLI. Losing that to an
interrupt (or a second run that adds one metric) is the cost this store removes: scores are written after every
chunk of rows, keyed by a hash of (hypothesis, reference[, source]) under a name the caller chooses (a metric's
signature, so scores of another checkpoint or setting are never reused), and a later run scores only rows it has not
stored. ``evaluate.py stress`` keeps one in ``<out>/scores.json``; ``bench/stress_menli.py`` shares one per set-up.

Beside the store, ``<store>.costs.json`` adds up what scoring cost per name over every run that wrote it (rows,
seconds, and any running counters the caller reports, e.g. NLI pairs), so a run stopped and resumed across days
still reports its whole cost, not the last run's.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Sequence

ScoreFn = Callable[[list[str], list, "list[str] | None"], Sequence[float]]


def row_key(hyp: str, ref: Any, src: str | None = None) -> str:
    """Key of one scored row; without a source it is the key stores written before sources were keyed used."""
    parts = [hyp, ref] if src is None else [hyp, ref, src]
    return hashlib.sha1(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def _read_json(path: Path, what: str) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable {what} ({error}); move it away to start the scores afresh") from error
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError(f"{path}: not a {what} (expected {{name: {{...}}}}); move it away to start afresh")
    return value


class ScoreStore:
    """{name: {row key: score}} in one JSON file, rewritten atomically after every chunk of scored rows."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.costs_path = self.path.with_name(self.path.stem + ".costs.json")
        self.scores: dict[str, dict[str, float]] = (_read_json(self.path, "score store")
                                                    if self.path.exists() else {})
        self.costs: dict[str, dict[str, float]] = (_read_json(self.costs_path, "cost ledger")
                                                   if self.costs_path.exists() else {})
        # () -> {"nli_pairs_scored": ..., ...}: running totals the ledger records the per-chunk differences of
        self.counters: Callable[[], dict[str, int]] | None = None

    def save(self) -> None:
        from nlgmetrics.metaeval import atomic_write

        with atomic_write(self.path) as handle:
            handle.write(json.dumps(self.scores))
        with atomic_write(self.costs_path) as handle:
            handle.write(json.dumps(self.costs, indent=1))

    def _counted(self) -> dict[str, int]:
        return dict(self.counters()) if self.counters else {}

    def metric(self, name: str, fn: ScoreFn, chunk: int, log: Callable[[str], None] | None = print,
               sources: bool = True, label: str | None = None) -> Callable[[Sequence[str], Sequence, Any], list[float]]:
        """A stress metric (``fn(hyps, refs, srcs)``) that scores only rows not stored under ``name``, ``chunk``
        rows per stored step; ``log`` gets one progress line per chunk (None: silent). ``sources=False``: a
        reference-based metric whose rows are keyed and scored without sources (``fn`` gets ``srcs=None``); ``label``:
        the metric's name in the log lines when ``name`` is a long signature."""
        if chunk < 1:
            raise ValueError(f"chunk must be a positive number of rows, got {chunk}")
        table = self.scores.setdefault(name, {})
        say = log or (lambda _line: None)
        shown = label or name

        def score(hyps: Sequence[str], refs: Sequence, srcs: Sequence[str] | None) -> list[float]:
            srcs = srcs if sources else None
            keys = [row_key(h, r, None if srcs is None else s)
                    for h, r, s in zip(hyps, refs, srcs if srcs is not None else [None] * len(hyps))]
            first: dict[str, int] = {}  # one row per key: a row repeated in this call is scored once
            for i, k in enumerate(keys):
                if k not in table:
                    first.setdefault(k, i)
            todo = list(first.values())
            say(f"{shown}: {sum(k in table for k in keys)} stored, {len(todo)} to score")
            started = time.perf_counter()
            for start in range(0, len(todo), chunk):
                rows = todo[start: start + chunk]
                before, t0 = self._counted(), time.perf_counter()
                values = list(fn([hyps[i] for i in rows], [refs[i] for i in rows],
                                 None if srcs is None else [srcs[i] for i in rows]))
                if len(values) != len(rows):
                    raise ValueError(f"metric {shown!r} returned {len(values)} scores for {len(rows)} rows")
                table.update((keys[i], float(v)) for i, v in zip(rows, values))
                ledger = self.costs.setdefault(name, {})
                for key, value in [("rows", len(rows)), ("seconds", time.perf_counter() - t0),
                                   *((k, v - before.get(k, 0)) for k, v in self._counted().items())]:
                    ledger[key] = round(ledger.get(key, 0) + value, 1)
                self.save()
                done = start + len(rows)
                rate = done / max(time.perf_counter() - started, 1e-9)
                left = (len(todo) - done) / rate / 60
                say(f"{shown}: {done}/{len(todo)} rows, {rate:.2f} rows/s, ~{left:.0f} min left")
            return [table[k] for k in keys]

        return score
