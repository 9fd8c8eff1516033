"""MENLI's combination: w * NLI + (1 - w) * M, both min-max normalised to [0, 1].

The paper normalises over whatever set is scored together, which makes a segment's score depend on its
neighbours, divides by zero when all scores are equal, and leaves a single item unnormalised. Here the range
is explicit: fitted on the scored set (``corpus``) or fitted once and stored (``MinMax`` saved as JSON), and a
degenerate range maps every score to 0.5 instead of dividing by zero.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

EPS = 1e-12


@dataclass(frozen=True)
class MinMax:
    """A fitted score range."""

    low: float
    high: float

    @classmethod
    def fit(cls, scores: Sequence[float]) -> "MinMax":
        values = np.asarray(scores, dtype=np.float64)
        if values.size == 0 or not np.all(np.isfinite(values)):
            raise ValueError("cannot fit a min-max range on an empty or non-finite score set")
        return cls(float(values.min()), float(values.max()))

    @property
    def degenerate(self) -> bool:
        return self.high - self.low < EPS

    def apply(self, scores: Sequence[float]) -> np.ndarray:
        """Map to [0, 1] by the stored range (values outside it fall outside [0, 1]: no clipping, no ties)."""
        values = np.asarray(scores, dtype=np.float64)
        if self.degenerate:
            return np.full_like(values, 0.5)
        return (values - self.low) / (self.high - self.low)


@dataclass(frozen=True)
class CombinationStats:
    """Stored normalisation for both parts, so single segments get stable combined scores.

    ``fitted_with`` names what the ranges were fitted on (``{"nli": ..., "metric": ...}``, see
    ``CombinedScorer.fitted_with``): ranges of one NLI model or encoder put another's scores in the wrong place
    without any error, so a scorer given stats that name other models refuses them. Files without it (older ones,
    hand-written ones) are taken as they are.
    """

    nli: MinMax
    metric: MinMax
    fitted_with: dict[str, str] | None = None

    def save(self, path: str | Path) -> None:
        raw = {"nli": asdict(self.nli), "metric": asdict(self.metric)}
        if self.fitted_with:
            raw["fitted_with"] = dict(self.fitted_with)
        Path(path).write_text(json.dumps(raw, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "CombinationStats":
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
            fitted_with = raw.get("fitted_with")
            if fitted_with is not None and not (isinstance(fitted_with, dict)
                                                and all(isinstance(v, str) for v in fitted_with.values())):
                raise TypeError("fitted_with")
            return cls(MinMax(**raw["nli"]), MinMax(**raw["metric"]), fitted_with)
        except FileNotFoundError as error:
            raise ValueError(f"normalisation file {path}: no such file") from error
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"normalisation file {path}: expected {{nli: {{low, high}}, metric: {{low, high}}}} and "
                             "optionally fitted_with: {nli: str, metric: str}") from error


def packaged_stats(wanted: dict[str, str] | None, folder: str | Path | None = None
                   ) -> tuple[Path, CombinationStats] | None:
    """The stored ranges (``folder``, default the packaged ``menli/`` configs) fitted with exactly the models in
    ``wanted`` (``CombinedScorer.fitted_with()``), with their file; None when no file was fitted with them.

    This is what makes ``evaluate.py``'s default normalisation batch-independent for the models ranges were fitted
    for; files without a ``fitted_with`` record never match (they could belong to any model)."""
    if not wanted:
        return None
    if folder is None:
        from nlgmetrics.resources import CONFIG_DIR

        folder = CONFIG_DIR / "menli"
    for path in sorted(Path(folder).glob("*.json")):
        stats = CombinationStats.load(path)
        if stats.fitted_with == wanted:
            return path, stats
    return None


def combine(
    nli_scores: Sequence[float],
    metric_scores: Sequence[float],
    weight: float,
    stats: CombinationStats | None = None,
) -> np.ndarray:
    """``weight`` * normalised NLI + (1 - ``weight``) * normalised metric."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"NLI weight must be in [0, 1], got {weight}")
    if len(nli_scores) != len(metric_scores):
        raise ValueError(f"{len(nli_scores)} NLI scores but {len(metric_scores)} metric scores")
    if stats is None:
        stats = CombinationStats(MinMax.fit(nli_scores), MinMax.fit(metric_scores))
    return weight * stats.nli.apply(nli_scores) + (1.0 - weight) * stats.metric.apply(metric_scores)


@dataclass(frozen=True)
class MixPart:
    """One part of a mix: its name, weight, stored range and what the range was fitted with (None: unknown)."""

    name: str
    weight: float
    range: MinMax
    fitted_with: str | None = None


@dataclass(frozen=True)
class MixRecipe:
    """Weights and stored ranges of ``sum_i w_i * MinMax_i(part_i)``, MENLI first: NLI with more than one partner.

    Two partners are what the MENLI issue's fluency ablation found necessary: NLI is blind to fluency and a
    similarity metric to entailment errors, and a causal-LM likelihood ratio adds the fluency signal. The recipe
    keeps both the weights and the ranges the combination was measured with (``source`` says where), so a packaged
    recipe scores a row exactly as the measured combination did, whatever rows are scored with it.
    """

    parts: tuple[MixPart, ...]
    source: str | None = None

    def __post_init__(self) -> None:
        check_mix_weights([part.weight for part in self.parts])

    @property
    def weights(self) -> list[float]:
        return [part.weight for part in self.parts]

    @property
    def fitted_with(self) -> list[str | None]:
        return [part.fitted_with for part in self.parts]

    def with_weights(self, weights: Sequence[float]) -> "MixRecipe":
        """The same ranges with other weights (a user's own trade-off on the measured scales)."""
        check_mix_weights(weights, len(self.parts))
        return MixRecipe(tuple(MixPart(p.name, float(w), p.range, p.fitted_with) for p, w in zip(self.parts, weights)),
                         self.source)

    def save(self, path: str | Path) -> None:
        parts = [{"name": p.name, "weight": p.weight, "low": p.range.low, "high": p.range.high,
                  **({"fitted_with": p.fitted_with} if p.fitted_with else {})} for p in self.parts]
        raw = {"parts": parts, **({"source": self.source} if self.source else {})}
        Path(path).write_text(json.dumps(raw, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "MixRecipe":
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
            parts = tuple(MixPart(str(p["name"]), float(p["weight"]), MinMax(float(p["low"]), float(p["high"])),
                                  _optional_str(p.get("fitted_with"))) for p in raw["parts"])
            return cls(parts, _optional_str(raw.get("source")))
        except FileNotFoundError as error:
            raise ValueError(f"mix recipe {path}: no such file") from error
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"mix recipe {path}: expected {{parts: [{{name, weight, low, high, fitted_with?}}, ...], "
                             f"source?}} with MENLI first and weights summing to 1 ({error})") from error


def _optional_str(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def check_mix_weights(weights: Sequence[float], parts: int | None = None) -> None:
    """Finite, non-negative weights, one per part (MENLI and at least one partner), summing to 1."""
    if parts is not None and len(weights) != parts:
        raise ValueError(f"{len(weights)} weights for {parts} parts (MENLI first, then each partner)")
    if len(weights) < 2:
        raise ValueError(f"a mix needs MENLI and at least one partner, got {len(weights)} weight(s)")
    if any(not np.isfinite(w) or w < 0 for w in weights):
        raise ValueError(f"mix weights must be finite and >= 0, got {list(weights)}")
    if abs(sum(weights) - 1.0) > 1e-6:
        raise ValueError(f"mix weights must sum to 1, got {list(weights)} (sum {sum(weights):.6g})")


def mix(scores: Sequence[Sequence[float]], weights: Sequence[float], ranges: Sequence[MinMax]) -> np.ndarray:
    """``sum_i weights[i] * ranges[i].apply(scores[i])``: the pure core of ``MixedScorer``."""
    check_mix_weights(weights, len(scores))
    if len(ranges) != len(scores):
        raise ValueError(f"{len(ranges)} ranges for {len(scores)} parts")
    lengths = {len(s) for s in scores}
    if len(lengths) > 1:
        raise ValueError(f"the parts scored different numbers of rows: {[len(s) for s in scores]}")
    return sum(w * r.apply(s) for w, r, s in zip(weights, ranges, scores))


def packaged_recipe(wanted: Sequence[str | None] | None, folder: str | Path | None = None
                    ) -> tuple[Path, MixRecipe] | None:
    """The packaged mix recipe (``folder``, default the configs' ``menli/mix/``) fitted with exactly the parts in
    ``wanted`` (``MixedScorer.fitted_with()``), in that order, with its file; None when there is none."""
    if not wanted or any(part is None for part in wanted):
        return None
    if folder is None:
        from nlgmetrics.resources import CONFIG_DIR

        folder = CONFIG_DIR / "menli" / "mix"
    for path in sorted(Path(folder).glob("*.json")):
        recipe = MixRecipe.load(path)
        if recipe.fitted_with == list(wanted):
            return path, recipe
    return None
