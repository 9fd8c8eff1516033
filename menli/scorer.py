"""MENLI in the common Scorer shape, and the combination of MENLI with any other Scorer."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from menli.combine import CombinationStats, MinMax, combine
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


@dataclass
class CombinedScorer:
    """w * MENLI + (1 - w) * M for any Scorer M; normalised over the scored set or by stored statistics."""

    menli: MENLIScorer
    metric: Any
    weight: float = 0.2
    stats: CombinationStats | None = None
    name: str = ""
    last_stats: CombinationStats | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"NLI weight must be in [0, 1], got {self.weight}")
        self.name = self.name or f"menli+{getattr(self.metric, 'name', 'metric')}"

    @property
    def batch_dependent(self) -> bool:
        """Whether a row's score depends on the other rows scored with it: set normalisation fits its ranges on the
        scored set, so such scores must be computed in one call and never mixed across calls (stored ranges: no)."""
        return self.stats is None

    def fitted_with(self) -> dict[str, str] | None:
        """What stored ranges must have been fitted on to apply here (``fitted_with``); from the parts' signatures,
        so a part sharded over processes (``--devices``) answers too."""
        return fitted_with(self.menli.signature(), self.metric.signature())

    def _check_stats(self) -> None:
        stored = self.stats.fitted_with if self.stats is not None else None
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
        stats = self.stats or CombinationStats(MinMax.fit(nli_scores), MinMax.fit(metric_scores), self.fitted_with())
        self.last_stats = stats
        return [float(s) for s in combine(nli_scores, metric_scores, self.weight, stats)]

    def signature(self) -> str:
        norm = "stored" if self.stats is not None else "set"
        return f"{self.name}|w:{self.weight}|norm:{norm}|nli=[{self.menli.signature()}]|m=[{self.metric.signature()}]"
