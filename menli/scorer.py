"""MENLI in the common Scorer shape, and the combination of MENLI with any other Scorer."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from menli.combine import CombinationStats, MinMax, combine, packaged_stats
from menli.functional import AGGREGATIONS, menli_scores
from menli.granularity import check_granularity
from menli.pooling import check_strategy
from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.nli.model import DEFAULT_NLI

_VERSION = toolkit_version()


@dataclass
class MENLIScorer:
    """NLI probabilities pooled into a score. ``reference_free`` puts the source in the premise's place.

    ``pair_cache`` remembers that many distinct (premise, hypothesis) probabilities across calls (0 = off).
    """

    model: str = DEFAULT_NLI
    formula: str = "e"
    direction: str = "<->"
    aggregation: str = "max"
    reference_free: bool = False
    batch_size: int = 64
    device: str | None = None
    progress: bool = False
    name: str = "menli"
    granularity: str = "auto"
    sentence_reduce: str = "mean"
    sentence_candidates: int = 0
    pair_cache: int = 200_000
    _nli: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.formula, self.direction = check_strategy(self.formula, self.direction)
        check_granularity(self.granularity, self.sentence_reduce)
        if self.sentence_candidates < 0:
            raise ValueError(f"sentence_candidates must be >= 0 (0 = every sentence pair), got {self.sentence_candidates}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation '{self.aggregation}'; choose from {AGGREGATIONS}")

    @property
    def nli(self) -> Any:
        if self._nli is None:
            from nlgmetrics.nli import PairCache, load_nli

            nli = load_nli(self.model, self.device)
            # repeated pairs (stress levels, sentence pairs of near-identical paragraphs) are scored once
            self._nli = PairCache(nli, self.pair_cache) if self.pair_cache else nli
        return self._nli

    def score(self, hyps: Sequence[str], refs: Sequence | None, srcs: Sequence[str] | None = None) -> list[float]:
        anchors = srcs if self.reference_free else refs
        if anchors is None:
            raise ValueError("reference-free MENLI needs sources" if self.reference_free else "MENLI needs references")
        scores = menli_scores(
            self.nli, hyps, anchors, self.formula, self.direction, self.aggregation, self.batch_size, self.progress,
            self.granularity, self.sentence_reduce, self.sentence_candidates,
        )
        return [float(s) for s in scores]

    def signature(self) -> str:
        mode = "src" if self.reference_free else "ref"
        return (
            f"{self.name}|nli:{self.model}@{self.nli.hash}|formula:{self.formula}|direction:{self.direction}"
            f"|anchor:{mode}|refs:{self.aggregation}|granularity:{self.granularity}/{self.sentence_reduce}"
            f"{f'/k{self.sentence_candidates}' if self.sentence_candidates else ''}"
            f"|version:{_VERSION}"
        )


def fitted_with(menli_signature: str, metric_signature: str) -> dict[str, str] | None:
    """The record stored ranges carry (``CombinationStats.fitted_with``), read off the two parts' signatures: the
    NLI model with its weights' hash and MENLI's formula and direction, and the partner's signature. Toolkit
    versions are left out: a release does not move scores it does not say it moves, and ranges should not expire
    with every version. None when the MENLI part's signature does not name those (a custom scorer)."""
    fields = dict(part.split(":", 1) for part in menli_signature.split("|") if ":" in part)
    if not {"nli", "formula", "direction"} <= set(fields):
        return None
    metric = "|".join(part for part in metric_signature.split("|") if not part.startswith("version:"))
    return {"nli": f"{fields['nli']}|formula:{fields['formula']}|direction:{fields['direction']}", "metric": metric}


NORMALIZATIONS = ("auto", "set")


@dataclass
class CombinedScorer:
    """w * MENLI + (1 - w) * M for any Scorer M; normalised by stored statistics or over the scored set.

    ``stats``: stored ranges (``CombinationStats``); ``"auto"`` (default) takes the packaged ranges fitted with
    exactly these models (``packaged_stats``) and falls back to ``"set"`` with a warning when there are none;
    ``"set"`` (or None) min-max normalises over each scored set, so a row's score depends on the rows scored with it.
    The default is ``"auto"`` so that the Python API scores a segment the way ``evaluate.py`` does: on its own.
    """

    menli: MENLIScorer
    metric: Any
    weight: float = 0.2
    stats: CombinationStats | str | None = "auto"
    name: str = ""
    last_stats: CombinationStats | None = field(default=None, repr=False)
    stats_file: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"NLI weight must be in [0, 1], got {self.weight}")
        if isinstance(self.stats, str):
            if self.stats not in NORMALIZATIONS:
                raise ValueError(f"unknown normalisation '{self.stats}': pass CombinationStats, 'auto' or 'set'")
            if self.stats == "set":
                self.stats = None
        elif self.stats is not None and not isinstance(self.stats, CombinationStats):
            raise TypeError(f"stats must be CombinationStats, 'auto', 'set' or None, got {type(self.stats).__name__}")
        self.name = self.name or f"menli+{getattr(self.metric, 'name', 'metric')}"

    def resolve_stats(self, warn: bool = True) -> CombinationStats | None:
        """The stored ranges this scorer uses (None: set normalisation), looking up packaged ones once for "auto".

        The lookup needs the parts' signatures (the NLI model's weights hash), so it runs on first use, not at
        construction. ``warn=False`` lets a caller word the fallback itself (the CLI does)."""
        if isinstance(self.stats, str):  # "auto": never "set", __post_init__ turned that into None
            found = packaged_stats(self.fitted_with())
            self.stats_file, self.stats = found if found is not None else (None, None)
            if found is None and warn:
                warnings.warn(f"{self.name}: no packaged ranges were fitted with these models, so both parts are "
                              "min-max normalised over each scored set and a score depends on the rows scored with "
                              "it; fit ranges once (last_stats.save) and pass them as stats", stacklevel=2)
        return self.stats

    @property
    def batch_dependent(self) -> bool:
        """Whether a row's score depends on the other rows scored with it: set normalisation fits its ranges on the
        scored set, so such scores must be computed in one call and never mixed across calls (stored ranges: no)."""
        return self.resolve_stats() is None

    def fitted_with(self) -> dict[str, str] | None:
        """What stored ranges must have been fitted on to apply here (``fitted_with``); from the parts' signatures,
        so a part sharded over processes (``--devices``) answers too."""
        return fitted_with(self.menli.signature(), self.metric.signature())

    def _check_stats(self) -> None:
        resolved = self.resolve_stats()
        stored = resolved.fitted_with if resolved is not None else None
        if not stored:
            return
        here = self.fitted_with() or {}
        wrong = [f"{part}: fitted with '{stored[part]}', this run uses '{here.get(part, 'an unnamed model')}'"
                 for part in ("nli", "metric") if part in stored and stored[part] != here.get(part)]
        if wrong:
            raise ValueError("the stored normalisation does not fit this combination (" + "; ".join(wrong)
                             + "): use the models it was fitted with, or fit ranges for these (--save-normalization)")

    def score(self, hyps: Sequence[str], refs: Sequence | None, srcs: Sequence[str] | None = None) -> list[float]:
        self._check_stats()
        nli_scores = self.menli.score(hyps, refs, srcs)
        metric_scores = self.metric.score(hyps, refs, srcs)
        stats = self.resolve_stats() or CombinationStats(MinMax.fit(nli_scores), MinMax.fit(metric_scores),
                                                          self.fitted_with())
        self.last_stats = stats
        return [float(s) for s in combine(nli_scores, metric_scores, self.weight, stats)]

    def signature(self) -> str:
        norm = "stored" if self.resolve_stats() is not None else "set"
        return f"{self.name}|w:{self.weight}|norm:{norm}|nli=[{self.menli.signature()}]|m=[{self.metric.signature()}]"
