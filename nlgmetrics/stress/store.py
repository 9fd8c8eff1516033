"""The stress suite's name for the on-disk score cache of ``nlgmetrics.scorecache``.

``evaluate.py stress`` keeps one in ``<out>/scores.json`` (the removed ``bench/stress_menli.py`` kept one per
set-up, git history 6764470); the dev mix and the benchmarks use the same cache
(``nlgmetrics.scorecache.cached_row_scores``). Existing stores and their ``.costs.json`` ledgers are read as they are.
"""

from __future__ import annotations

from nlgmetrics.scorecache import ScoreCache, ScoreFn, row_key

ScoreStore = ScoreCache  # the name stress code and stored reports know
"""The stress suite's name for :class:`nlgmetrics.scorecache.ScoreCache`: the per-row score file
(``scores.json``) that lets a killed stress run resume and ``stress-report`` re-judge without scoring again."""

__all__ = ["ScoreFn", "ScoreStore", "row_key"]
