"""MENLI in the common Scorer shape, and the combination of MENLI with any other Scorer."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from menli.combine import (CombinationStats, MinMax, MixPart, MixRecipe, check_mix_weights, combine, mix,
                           packaged_recipe, packaged_stats)
from menli.functional import AGGREGATIONS, menli_scores
from menli.granularity import check_granularity
from menli.pooling import check_strategy
from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision, forward_precision, precision_tag
from nlgmetrics.nli.model import DEFAULT_NLI

_VERSION = toolkit_version()


@dataclass
class MENLIScorer:
    """NLI probabilities pooled into a score. ``reference_free`` puts the source in the premise's place.

    ``pair_cache`` remembers that many distinct (premise, hypothesis) probabilities across calls (0 = off).
    ``precision``: the NLI model's forward pass, float32 or bfloat16 (``nlgmetrics.modelroles.precision``); the
    softmax runs in float32 either way.
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
    precision: str = DEFAULT_PRECISION

    def __post_init__(self) -> None:
        check_precision(self.precision)
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
        # float32 asks nothing of the NLI object (any object with predict_proba works); the pair cache is this scorer's
        device = self.nli.device if self.precision != DEFAULT_PRECISION else None
        with forward_precision(device, self.precision):
            scores = menli_scores(
                self.nli, hyps, anchors, self.formula, self.direction, self.aggregation, self.batch_size,
                self.progress, self.granularity, self.sentence_reduce, self.sentence_candidates,
            )
        return [float(s) for s in scores]

    def signature(self) -> str:
        mode = "src" if self.reference_free else "ref"
        return (
            f"{self.name}|nli:{self.model}@{self.nli.hash}|formula:{self.formula}|direction:{self.direction}"
            f"|anchor:{mode}|refs:{self.aggregation}|granularity:{self.granularity}/{self.sentence_reduce}"
            f"{f'/k{self.sentence_candidates}' if self.sentence_candidates else ''}"
            f"{precision_tag(self.precision)}|version:{_VERSION}"
        )


def nli_fitted_with(menli_signature: str) -> str | None:
    """What stored ranges record of a MENLI part: the NLI model with its weights' hash and MENLI's formula and
    direction, read off its signature; None when the signature does not name those (a custom scorer)."""
    fields = dict(part.split(":", 1) for part in menli_signature.split("|") if ":" in part)
    if not {"nli", "formula", "direction"} <= set(fields):
        return None
    return f"{fields['nli']}|formula:{fields['formula']}|direction:{fields['direction']}"


def metric_fitted_with(metric_signature: str) -> str:
    """What stored ranges record of a partner: its signature without the toolkit version (a release does not move
    scores it does not say it moves, and ranges should not expire with every version) and without its precision
    (bfloat16 moved SEScore and BERTScore scores by at most 0.002 on 1,000 TED segments, ``bench/bench_precision.py``:
    ranges fitted in float32 still apply)."""
    return "|".join(part for part in metric_signature.split("|") if not part.startswith(("version:", "precision:")))


def fitted_with(menli_signature: str, metric_signature: str) -> dict[str, str] | None:
    """The record stored ranges carry (``CombinationStats.fitted_with``), read off the two parts' signatures
    (``nli_fitted_with``, ``metric_fitted_with``). None when the MENLI part's signature does not name its model."""
    nli = nli_fitted_with(menli_signature)
    return None if nli is None else {"nli": nli, "metric": metric_fitted_with(metric_signature)}


NORMALIZATIONS = ("auto", "set")


def _normalization(field_name: str, value: Any, stored: type) -> Any:
    """A scorer's normalisation argument checked: "auto" stays, "set" becomes None, else a ``stored`` object."""
    if isinstance(value, str):
        if value not in NORMALIZATIONS:
            raise ValueError(f"unknown normalisation '{value}': pass {stored.__name__}, 'auto' or 'set'")
        return None if value == "set" else value
    if value is not None and not isinstance(value, stored):
        raise TypeError(f"{field_name} must be {stored.__name__}, 'auto', 'set' or None, got {type(value).__name__}")
    return value


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
        self.stats = _normalization("stats", self.stats, CombinationStats)
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


@dataclass
class MixedScorer:
    """``w_0 * MENLI + sum_i w_i * M_i`` over stored ranges: MENLI with several partners (e.g. SEScore for
    similarity and the causal-LM ratio for fluency, the fluency ablation's carried combination).

    ``weights``: one per part, MENLI first, summing to 1; None takes the recipe's. ``recipe``: a ``MixRecipe``
    (its ranges; its weights unless ``weights`` is given), ``"auto"`` (default: the packaged recipe fitted with
    exactly these models, ``packaged_recipe``; without one, ``"set"`` with a warning, which needs ``weights``) or
    ``"set"`` (min-max over each scored set: a row's score then depends on the rows scored with it).
    """

    menli: Any
    partners: Sequence[Any]
    weights: Sequence[float] | None = None
    recipe: MixRecipe | str | None = "auto"
    name: str = ""
    last_recipe: MixRecipe | None = field(default=None, repr=False)
    recipe_file: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.partners = list(self.partners)
        if not self.partners:
            raise ValueError("a mix needs at least one partner metric")
        if self.weights is not None:
            self.weights = [float(w) for w in self.weights]
            check_mix_weights(self.weights, 1 + len(self.partners))
        self.recipe = _normalization("recipe", self.recipe, MixRecipe)
        if isinstance(self.recipe, MixRecipe) and len(self.recipe.parts) != 1 + len(self.partners):
            raise ValueError(f"the recipe has {len(self.recipe.parts)} parts, this mix {1 + len(self.partners)} "
                             "(MENLI and each partner)")
        if self.recipe is None and self.weights is None:
            raise ValueError("set normalisation needs weights: pass weights (MENLI first) or a recipe")
        self.name = self.name or "+".join(["menli"] + [getattr(m, "name", "metric") for m in self.partners])

    @property
    def scorers(self) -> list[Any]:
        return [self.menli, *self.partners]

    def fitted_with(self) -> list[str | None]:
        """What each part's stored range must have been fitted with, MENLI first (``nli_fitted_with``,
        ``metric_fitted_with``), from the parts' signatures."""
        return [nli_fitted_with(self.menli.signature())] + [metric_fitted_with(m.signature()) for m in self.partners]

    def resolve_recipe(self, warn: bool = True) -> MixRecipe | None:
        """The stored recipe in use (None: set normalisation); "auto" looks for a packaged one once, on first use
        (the lookup needs the parts' signatures, which load their models)."""
        if isinstance(self.recipe, str):
            found = packaged_recipe(self.fitted_with())
            if found is None and self.weights is None:  # raised before any state changes: a retry raises again
                raise ValueError(f"{self.name}: no packaged recipe was fitted with these models, so there are "
                                 "no stored weights: pass weights (MENLI first), or a recipe file")
            self.recipe_file, self.recipe = found if found is not None else (None, None)
            if found is None and warn:
                warnings.warn(f"{self.name}: no packaged recipe was fitted with these models, so every part is "
                              "min-max normalised over each scored set and a score depends on the rows scored with "
                              "it; save last_recipe once and pass it as recipe", stacklevel=2)
        return self.recipe

    @property
    def batch_dependent(self) -> bool:
        """Whether a row's score depends on the other rows scored with it (set normalisation)."""
        return self.resolve_recipe() is None

    def used_weights(self) -> list[float]:
        recipe = self.resolve_recipe()
        return list(self.weights) if self.weights is not None else recipe.weights

    def _check_recipe(self, recipe: MixRecipe) -> None:
        here = self.fitted_with()
        wrong = [f"{part.name}: fitted with '{part.fitted_with}', this run uses '{now or 'an unnamed model'}'"
                 for part, now in zip(recipe.parts, here) if part.fitted_with and part.fitted_with != now]
        if wrong:
            raise ValueError("the stored recipe does not fit this mix (" + "; ".join(wrong) + "): use the models "
                             "it was fitted with, or fit ranges for these (save last_recipe)")

    def score(self, hyps: Sequence[str], refs: Sequence | None, srcs: Sequence[str] | None = None) -> list[float]:
        recipe = self.resolve_recipe()
        if recipe is not None:
            self._check_recipe(recipe)
        weights = self.used_weights()
        scores = [scorer.score(hyps, refs, srcs) for scorer in self.scorers]
        if recipe is None:
            names = [getattr(s, "name", "metric") for s in self.scorers]
            recipe = MixRecipe(tuple(MixPart(n, w, MinMax.fit(s), f)
                                     for n, w, s, f in zip(names, weights, scores, self.fitted_with())))
        else:
            recipe = recipe.with_weights(weights)
        self.last_recipe = recipe
        return [float(s) for s in mix(scores, weights, [p.range for p in recipe.parts])]

    def signature(self) -> str:
        norm = "stored" if self.resolve_recipe() is not None else "set"
        weights = ",".join(f"{w:g}" for w in self.used_weights())
        parts = "".join(f"|{i}=[{s.signature()}]" for i, s in enumerate(self.scorers))
        return f"{self.name}|w:{weights}|norm:{norm}{parts}"
