"""The stress suite's name for the on-disk score cache of ``nlgmetrics.scorecache``.

``evaluate.py stress`` keeps one in ``<out>/scores.jsonl``; the dev mix and the benchmarks use the same cache
(``nlgmetrics.scorecache.cached_row_scores``). Stores of earlier versions (``scores.json``) are read once into the
new file.
"""

from __future__ import annotations

from nlgmetrics.scorecache import ScoreCache, ScoreFn, row_key

ScoreStore = ScoreCache  # the name stress code and stored reports know
"""The stress suite's name for :class:`nlgmetrics.scorecache.ScoreCache`: the per-row score file
(``scores.jsonl``) that lets a killed stress run resume and ``stress-report`` re-judge without scoring again."""

__all__ = ["ScoreFn", "ScoreStore", "row_key"]
