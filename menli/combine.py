"""MENLI's combination with other metrics: ``sum_i w_i * MinMax_i(part_i)``, MENLI first, each part min-max
normalised to [0, 1].

The paper's ``w * NLI + (1 - w) * M`` is this mix with one partner and weights ``[w, 1 - w]`` (``pair_weights``):
one recipe type (``MixRecipe``), one pure function (``mix``) and one scorer (``menli.scorer.MixedScorer``) serve
one partner and several alike, so a fix or a check reaches both.

The paper normalises over whatever set is scored together, which makes a segment's score depend on its
neighbours, divides by zero when all scores are equal, and leaves a single item unnormalised. Here the range
is explicit: fitted on the scored set or fitted once and stored (a ``MixRecipe`` saved as JSON), and a
degenerate range maps every score to 0.5 instead of dividing by zero.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

EPS = 1e-12
# the paper's NLI weight, and the one-partner default of MixedScorer and --weight
DEFAULT_NLI_WEIGHT = 0.2

_MIX_FORMAT = (
    "{parts: [{name, weight, low, high, fitted_with?}, ...], source?} with MENLI first and weights summing to 1"
)
_PAIR_FORMAT = "{nli: {low, high}, metric: {low, high}} and optionally fitted_with: {nli: str, metric: str}"
# the part names of a two-part ranges file, which stores none
_PAIR_NAMES = ("menli", "metric")


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


def pair_weights(weight: float) -> list[float]:
    """The weights ``[w, 1 - w]`` of MENLI with one partner, from the paper's single NLI weight ``w``.

    The partner's weight is computed as ``1.0 - w``, exactly as the former one-partner combination did, so a
    ``--weight`` run scores and signs (``MixedScorer.signature``) to the bit as before.

    Args:
        weight: the NLI weight, in [0, 1].

    Returns:
        ``[weight, 1.0 - weight]`` as floats.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"NLI weight must be in [0, 1], got {weight}")
    weight = float(weight)
    return [weight, 1.0 - weight]


@dataclass(frozen=True)
class MixPart:
    """One part of a mix: its name, weight (None: not stored), stored range and what the range was fitted with
    (None: unknown)."""

    name: str
    weight: float | None
    range: MinMax
    fitted_with: str | None = None


@dataclass(frozen=True)
class MixRecipe:
    """Weights and stored ranges of ``sum_i w_i * MinMax_i(part_i)``, MENLI first, with one partner or several.

    Two partners are what the fluency experiment on the MENLI results page found necessary: NLI is blind to
    fluency and a similarity metric to entailment errors, and a causal-LM likelihood ratio adds the fluency
    signal. The recipe keeps both the weights and the ranges the combination was measured with (``source`` says
    where), so a packaged recipe scores a row exactly as the measured combination did, whatever rows are scored
    with it.

    Two-part ranges files (``{nli, metric, fitted_with?}``, the packaged ``menli/*.json`` and what
    ``--save-normalization`` wrote for one partner before) load as two-part recipes without weights: those files
    never stored one, the scorer's ``weights`` supply it. Every part has a weight or none has.

    ``fitted_with`` of each part names what its range was fitted on (``menli.scorer.fitted_with``): ranges of one
    NLI model or encoder put another's scores in the wrong place without any error, so a scorer given a recipe that
    names other models refuses it. Parts without it (older or hand-written files) are taken as they are.
    """

    parts: tuple[MixPart, ...]
    source: str | None = None

    def __post_init__(self) -> None:
        stored = [part.weight for part in self.parts]
        if all(weight is None for weight in stored):
            if len(stored) < 2:
                raise ValueError(f"a mix needs MENLI and at least one partner, got {len(stored)} part(s)")
        elif any(weight is None for weight in stored):
            raise ValueError("either every part of a recipe has a weight or none has")
        else:
            check_mix_weights(stored)

    @classmethod
    def from_ranges(
        cls,
        ranges: Sequence[MinMax],
        fitted_with: Sequence[str | None] | None = None,
        weights: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
        source: str | None = None,
    ) -> "MixRecipe":
        """A recipe from its parts' ranges, MENLI first: what fitting code stores (a bench script, a user's own fit).

        Without ``weights`` and with two parts it saves as a two-part ranges file, byte for byte what such files
        were before (the packaged ``menli/*.json``).

        Args:
            ranges: one per part.
            fitted_with: each part's record (``menli.scorer.fitted_with``); None: none recorded.
            weights: one per part, summing to 1; None: not stored (the scorer's weights apply).
            names: the parts' names; default "menli" and "metric" for two parts, else "menli", "part1", ...
            source: where the recipe was measured.

        Returns:
            The recipe.
        """
        n = len(ranges)
        names = (
            list(names)
            if names is not None
            else (list(_PAIR_NAMES) if n == 2 else ["menli"] + [f"part{i}" for i in range(1, n)])
        )
        records = list(fitted_with) if fitted_with is not None else [None] * n
        stored = [float(w) for w in weights] if weights is not None else [None] * n
        if not len(names) == len(records) == len(stored) == n:
            raise ValueError(f"{n} ranges but {len(names)} names, {len(records)} records and {len(stored)} weights")
        return cls(tuple(MixPart(str(name), w, r, f) for name, w, r, f in zip(names, stored, ranges, records)), source)

    @property
    def weights(self) -> list[float] | None:
        """The stored weights, MENLI first; None for a recipe without weights (a two-part ranges file)."""
        stored = [part.weight for part in self.parts]
        return None if any(weight is None for weight in stored) else stored

    @property
    def ranges(self) -> list[MinMax]:
        return [part.range for part in self.parts]

    @property
    def fitted_with(self) -> list[str | None]:
        return [part.fitted_with for part in self.parts]

    def with_weights(self, weights: Sequence[float]) -> "MixRecipe":
        """The same ranges with other weights (a user's own trade-off on the measured scales)."""
        check_mix_weights(weights, len(self.parts))
        return MixRecipe(
            tuple(MixPart(p.name, float(w), p.range, p.fitted_with) for p, w in zip(self.parts, weights)), self.source
        )

    def save(self, path: str | Path) -> None:
        """Write the recipe as JSON; a recipe without weights is written as the two-part ranges file it came from,
        so such files round-trip unchanged (they have no place for names or a source)."""
        if self.weights is None:
            if len(self.parts) != 2:
                raise ValueError(
                    f"a recipe without weights is saved as two-part ranges; this one has {len(self.parts)} parts"
                )
            raw: dict[str, Any] = {
                key: {"low": p.range.low, "high": p.range.high} for key, p in zip(("nli", "metric"), self.parts)
            }
            records = {key: p.fitted_with for key, p in zip(("nli", "metric"), self.parts) if p.fitted_with}
            if records:
                raw["fitted_with"] = records
        else:
            parts = [
                {
                    "name": p.name,
                    "weight": p.weight,
                    "low": p.range.low,
                    "high": p.range.high,
                    **({"fitted_with": p.fitted_with} if p.fitted_with else {}),
                }
                for p in self.parts
            ]
            raw = {"parts": parts, **({"source": self.source} if self.source else {})}
        Path(path).write_text(json.dumps(raw, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "MixRecipe":
        """Read a mix recipe, or a two-part ranges file as a two-part recipe without weights.

        Args:
            path: a JSON file in either format.

        Returns:
            The recipe; its ``weights`` are None for a two-part ranges file.
        """
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as error:
            raise ValueError(f"mix recipe {path}: no such file") from error
        except json.JSONDecodeError as error:
            raise ValueError(
                f"mix recipe {path}: not JSON; expected {_MIX_FORMAT}, or two-part ranges {_PAIR_FORMAT} ({error})"
            ) from error
        if isinstance(raw, dict) and "parts" in raw:
            expected, read = _MIX_FORMAT, _mix_from_json
        elif isinstance(raw, dict) and ("nli" in raw or "metric" in raw):
            expected, read = _PAIR_FORMAT, _pair_from_json
        else:
            raise ValueError(f"mix recipe {path}: expected {_MIX_FORMAT}, or two-part ranges {_PAIR_FORMAT}")
        try:
            return read(raw)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"mix recipe {path}: expected {expected} ({error})") from error


def _mix_from_json(raw: dict) -> MixRecipe:
    parts = tuple(
        MixPart(
            str(p["name"]),
            float(p["weight"]),
            MinMax(float(p["low"]), float(p["high"])),
            _optional_str(p.get("fitted_with")),
        )
        for p in raw["parts"]
    )
    return MixRecipe(parts, _optional_str(raw.get("source")))


def _pair_from_json(raw: dict) -> MixRecipe:
    records = raw.get("fitted_with")
    if records is not None and not isinstance(records, dict):
        raise TypeError(f"fitted_with: expected {{nli: str, metric: str}}, got {type(records).__name__}")
    records = records or {}
    return MixRecipe(
        tuple(
            MixPart(
                name, None, MinMax(float(raw[key]["low"]), float(raw[key]["high"])), _optional_str(records.get(key))
            )
            for name, key in zip(_PAIR_NAMES, ("nli", "metric"))
        )
    )


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


def mix(
    scores: Sequence[Sequence[float]], weights: Sequence[float], ranges: Sequence[MinMax] | None = None
) -> np.ndarray:
    """``sum_i weights[i] * ranges[i].apply(scores[i])``: the pure core of ``MixedScorer``.

    The terms are added left to right starting from MENLI's, so one partner with ``pair_weights(w)`` computes
    exactly the paper's ``w * NLI + (1 - w) * M`` in float64.

    Args:
        scores: each part's scores, MENLI first, all of one length.
        weights: one per part, summing to 1.
        ranges: one per part; None fits each on ``scores`` (set normalisation: a row's value then depends on
            the other rows).

    Returns:
        The mixed score of each row.
    """
    check_mix_weights(weights, len(scores))
    if ranges is None:
        ranges = [MinMax.fit(s) for s in scores]
    if len(ranges) != len(scores):
        raise ValueError(f"{len(ranges)} ranges for {len(scores)} parts")
    lengths = {len(s) for s in scores}
    if len(lengths) > 1:
        raise ValueError(f"the parts scored different numbers of rows: {[len(s) for s in scores]}")
    terms = [w * r.apply(s) for w, r, s in zip(weights, ranges, scores)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def packaged_recipe(
    wanted: Sequence[str | None] | None, folder: str | Path | None = None
) -> tuple[Path, MixRecipe] | None:
    """The stored recipe fitted with exactly the parts in ``wanted`` (``MixedScorer.fitted_with()``), in that order,
    with its file; None when there is none.

    This is what makes the default normalisation ("auto") batch-independent for the models a recipe was fitted for.
    Parts without a ``fitted_with`` record never match (they could belong to any model).

    Args:
        wanted: each part's record, MENLI first.
        folder: where to look, default the packaged configs' ``menli/``: its two-part ranges files (``*.json``)
            first, then its mix recipes (``mix/*.json``).

    Returns:
        (file, recipe), or None.
    """
    if not wanted or any(part is None for part in wanted):
        return None
    if folder is None:
        from nlgmetrics.resources import CONFIG_DIR

        folder = CONFIG_DIR / "menli"
    root = Path(folder)
    for path in sorted(root.glob("*.json")) + sorted((root / "mix").glob("*.json")):
        recipe = MixRecipe.load(path)
        if recipe.fitted_with == list(wanted):
            return path, recipe
    return None
