"""MENLI in the common Scorer shape, and its combination with any other Scorers (one partner or several)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from menli.combine import (
    DEFAULT_NLI_WEIGHT,
    MinMax,
    MixPart,
    MixRecipe,
    check_mix_weights,
    mix,
    packaged_recipe,
    pair_weights,
)
from menli.functional import AGGREGATIONS, menli_scores
from menli.granularity import check_granularity
from menli.pooling import check_strategy
from nlgmetrics.language import UNDETERMINED, LanguageError, check_lang, name, resolve_lang
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision, forward_precision
from nlgmetrics.nli.defaults import MULTILINGUAL_NLI
from nlgmetrics.nli.model import DEFAULT_NLI
from nlgmetrics.signature import Signature, signature_fields


def nli_language(spec: str, lang: str | None, texts: Sequence) -> tuple[str, list[str] | None]:
    """The language of ``texts`` (``lang`` when given) and, when NLI model ``spec`` does not cover it, the languages
    it does; ``(lang, None)`` when it does, or when the model declares none or the language is undetermined."""
    from nlgmetrics.modelroles import resolve
    from nlgmetrics.nli.checkpoint import adapter_languages, is_adapter_dir

    found = resolve_lang(lang, texts)
    if found == UNDETERMINED:
        return found, None
    resolved = resolve("nli", spec)
    covered = adapter_languages(resolved.location) if resolved.local and is_adapter_dir(resolved.location) else None
    return found, (None if covered is None or found in covered else covered)


def language_error(spec: str, found: str, covered: list[str], anchors: str = "references") -> LanguageError:
    """The one-line refusal of text in ``found`` by NLI model ``spec``: what covers it, and how to override."""
    return LanguageError(
        f"menli: the {anchors} are {name(found)}; NLI model {spec} covers {', '.join(covered)}. Use --nli-model "
        f"{MULTILINGUAL_NLI} (about 100 languages), or pass --lang {covered[0]} (lang='{covered[0]}') to score "
        f"them as {name(covered[0])} anyway"
    )


@dataclass
class MENLIScorer:
    """NLI probabilities pooled into a score. ``reference_free`` puts the source in the premise's place.

    ``pair_cache`` remembers that many distinct (premise, hypothesis) probabilities across calls (0 = off).
    ``precision``: the NLI model's forward pass, float32, bfloat16 or int8 (``nlgmetrics.modelroles.precision``); the
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
    lang: str | None = None
    follow_language: bool = False
    _scored_lang: str | None = field(default=None, repr=False)  # the language of the last score call

    def __post_init__(self) -> None:
        self.lang = check_lang(self.lang)
        check_precision(self.precision)
        self.formula, self.direction = check_strategy(self.formula, self.direction)
        check_granularity(self.granularity, self.sentence_reduce)
        if self.sentence_candidates < 0:
            raise ValueError(
                f"sentence_candidates must be >= 0 (0 = every sentence pair), got {self.sentence_candidates}"
            )
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

    def check_language(self, texts: Sequence) -> str:
        """The language of ``texts`` (references, or sources when reference-free), checked against the NLI model.

        With ``follow_language`` (the NLI model was left at its default), text the model does not cover switches
        this scorer to the multilingual NLI model; otherwise it is a :class:`~nlgmetrics.language.LanguageError`.
        """
        lang, covered = nli_language(self.model, self.lang, texts)
        if covered is not None:
            if not self.follow_language:
                raise language_error(self.model, lang, covered, "sources" if self.reference_free else "references")
            self.model, self._nli = MULTILINGUAL_NLI, None
        return lang

    def score(self, hyps: Sequence[str], refs: Sequence | None, srcs: Sequence[str] | None = None) -> list[float]:
        anchors = srcs if self.reference_free else refs
        if anchors is None:
            raise ValueError("reference-free MENLI needs sources" if self.reference_free else "MENLI needs references")
        self._scored_lang = self.check_language(anchors)
        # float32 asks nothing of the NLI object (any object with predict_proba works); the pair cache is this scorer's
        device = self.nli.device if self.precision != DEFAULT_PRECISION else None
        with forward_precision(device, self.precision):
            scores = menli_scores(
                self.nli,
                hyps,
                anchors,
                self.formula,
                self.direction,
                self.aggregation,
                self.batch_size,
                self.progress,
                self.granularity,
                self.sentence_reduce,
                self.sentence_candidates,
            )
        return [float(s) for s in scores]

    def signature(self) -> str:
        mode = "src" if self.reference_free else "ref"
        granularity = f"{self.granularity}/{self.sentence_reduce}"
        granularity += f"/k{self.sentence_candidates}" if self.sentence_candidates else ""
        parts = (
            ("nli", f"{self.model}@{self.nli.hash}"),
            ("formula", self.formula),
            ("direction", self.direction),
            ("anchor", mode),
            ("refs", self.aggregation),
            ("granularity", granularity),
            ("lang", self.lang or "auto"),
        )
        return str(Signature(self.name, parts, precision=self.precision))


def nli_fitted_with(menli_signature: str) -> str | None:
    """What stored ranges record of a MENLI part: the NLI model with its weights' hash and MENLI's formula and
    direction, read off its signature; None when the signature does not name those (a custom scorer)."""
    fields = signature_fields(menli_signature)
    if not {"nli", "formula", "direction"} <= set(fields):
        return None
    return f"{fields['nli']}|formula:{fields['formula']}|direction:{fields['direction']}"


def metric_fitted_with(metric_signature: str) -> str:
    """What stored ranges record of a partner: its signature without the toolkit version (a release does not move
    scores it does not say it moves, and ranges should not expire with every version) and without its precision
    (bfloat16 moved SEScore and BERTScore scores by at most 0.002 on 1,000 TED segments, ``bench/bench_precision.py``:
    ranges fitted in float32 still apply) and without the language, which says what text was scored, not how.
    """
    return "|".join(
        part for part in metric_signature.split("|") if not part.startswith(("version:", "precision:", "lang:"))
    )


def fitted_with(menli_signature: str, *partner_signatures: str) -> list[str | None]:
    """The records stored ranges carry (``MixRecipe.fitted_with``), MENLI first, read off the parts' signatures
    (``nli_fitted_with``, ``metric_fitted_with``). MENLI's is None when its signature does not name its model.

    Args:
        menli_signature: the MENLI part's ``signature()``.
        partner_signatures: each partner's ``signature()``, in the mix's order.

    Returns:
        One record per part.
    """
    return [nli_fitted_with(menli_signature)] + [metric_fitted_with(s) for s in partner_signatures]


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
class MixedScorer:
    """``w_0 * MENLI + sum_i w_i * M_i`` over min-max normalised parts: MENLI with one partner (the paper's
    ``w * NLI + (1 - w) * M``, e.g. BERTScore) or several (e.g. SEScore for similarity and the causal-LM ratio for
    fluency, the fluency ablation's carried combination).

    ``weights``: one per part, MENLI first, summing to 1 (``pair_weights(w)`` for the paper's single ``w``); None
    takes the recipe's stored weights, and with one partner and a recipe that stores none (a two-part ranges file,
    or set normalisation) ``pair_weights(DEFAULT_NLI_WEIGHT)``, i.e. [0.2, 0.8]. ``recipe``: a ``MixRecipe`` (its
    ranges; its weights unless ``weights`` is given), ``"auto"`` (default: the packaged recipe fitted with exactly
    these models, ``packaged_recipe``; without one, ``"set"`` with a warning) or ``"set"`` (min-max over each scored
    set: a row's score then depends on the rows scored with it). The default is ``"auto"`` so that the Python API
    scores a segment the way ``evaluate.py`` does: on its own.
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
            raise ValueError(
                f"the recipe has {len(self.recipe.parts)} parts, this mix {1 + len(self.partners)} "
                "(MENLI and each partner)"
            )
        if self.recipe is None and self._weights_without_recipe() is None:
            raise ValueError("set normalisation needs weights: pass weights (MENLI first) or a recipe")
        self.name = self.name or "+".join(["menli"] + [getattr(m, "name", "metric") for m in self.partners])

    @property
    def scorers(self) -> list[Any]:
        return [self.menli, *self.partners]

    def _weights_without_recipe(self) -> list[float] | None:
        """The weights when no recipe supplies them: the argument, or one partner's default; None otherwise."""
        if self.weights is not None:
            return list(self.weights)
        return pair_weights(DEFAULT_NLI_WEIGHT) if len(self.partners) == 1 else None

    def fitted_with(self) -> list[str | None]:
        """What each part's stored range must have been fitted with, MENLI first (``fitted_with``), from the parts'
        signatures, so a part sharded over processes (``--devices``) answers too."""
        return fitted_with(self.menli.signature(), *[m.signature() for m in self.partners])

    def resolve_recipe(self, warn: bool = True) -> MixRecipe | None:
        """The stored recipe in use (None: set normalisation); "auto" looks for a packaged one once, on first use
        (the lookup needs the parts' signatures, which load their models).

        Args:
            warn: whether a fallback to set normalisation warns; False lets a caller word it itself (the CLI does).

        Returns:
            The recipe, or None for set normalisation.
        """
        if isinstance(self.recipe, str):  # "auto": never "set", __post_init__ turned that into None
            found = packaged_recipe(self.fitted_with())
            if found is None and self._weights_without_recipe() is None:  # raised before any state changes
                raise ValueError(
                    f"{self.name}: no packaged recipe was fitted with these models, so there are "
                    "no stored weights: pass weights (MENLI first), or a recipe file"
                )
            self.recipe_file, self.recipe = found if found is not None else (None, None)
            if found is None and warn:
                warnings.warn(
                    f"{self.name}: no packaged recipe was fitted with these models, so every part is "
                    "min-max normalised over each scored set and a score depends on the rows scored with "
                    "it; save last_recipe once and pass it as recipe",
                    stacklevel=2,
                )
        return self.recipe

    @property
    def batch_dependent(self) -> bool:
        """Whether a row's score depends on the other rows scored with it: set normalisation fits its ranges on the
        scored set, so such scores must be computed in one call and never mixed across calls (stored ranges: no)."""
        return self.resolve_recipe() is None

    def used_weights(self) -> list[float]:
        """The weights scores are computed with, MENLI first: the ``weights`` argument, else the recipe's stored
        ones, else (one partner) the default ``pair_weights(DEFAULT_NLI_WEIGHT)``."""
        recipe = self.resolve_recipe()
        if self.weights is None and recipe is not None and recipe.weights is not None:
            return recipe.weights
        weights = self._weights_without_recipe()
        assert weights is not None, "__post_init__ and resolve_recipe refuse a mix without weights"
        return weights

    def _check_recipe(self, recipe: MixRecipe) -> None:
        here = self.fitted_with()
        wrong = [
            f"{part.name}: fitted with '{part.fitted_with}', this run uses '{now or 'an unnamed model'}'"
            for part, now in zip(recipe.parts, here)
            if part.fitted_with and part.fitted_with != now
        ]
        if wrong:
            raise ValueError(
                "the stored recipe does not fit this mix (" + "; ".join(wrong) + "): use the models "
                "it was fitted with, or fit ranges for these (save last_recipe; on the command line "
                "--save-normalization)"
            )

    def score(self, hyps: Sequence[str], refs: Sequence | None, srcs: Sequence[str] | None = None) -> list[float]:
        recipe = self.resolve_recipe()
        if recipe is not None:
            self._check_recipe(recipe)
        weights = self.used_weights()
        scores = [scorer.score(hyps, refs, srcs) for scorer in self.scorers]
        if recipe is None:
            names = [getattr(self.menli, "name", "menli")] + [getattr(m, "name", "metric") for m in self.partners]
            recipe = MixRecipe(
                tuple(MixPart(n, w, MinMax.fit(s), f) for n, w, s, f in zip(names, weights, scores, self.fitted_with()))
            )
        else:
            recipe = recipe.with_weights(weights)
        self.last_recipe = recipe
        return [float(s) for s in mix(scores, weights, recipe.ranges)]

    def signature(self) -> str:
        """What stored scores are keyed by. One partner keeps the former combination's format
        (``{name}|w:{w}|norm:..|nli=[..]|m=[..]``) so score caches written before stay valid; ``w`` is MENLI's weight
        alone when the partner's is ``1.0 - w`` (``pair_weights``), else both weights."""
        norm = "stored" if self.resolve_recipe() is not None else "set"
        weights = self.used_weights()
        if len(self.partners) == 1:
            w = f"{weights[0]}" if weights[1] == 1.0 - weights[0] else f"{weights[0]},{weights[1]}"
            inner = (f"nli=[{self.menli.signature()}]", f"m=[{self.partners[0].signature()}]")
        else:
            w = ",".join(f"{w:g}" for w in weights)
            inner = tuple(f"{i}=[{s.signature()}]" for i, s in enumerate(self.scorers))
        return str(Signature(self.name, (("w", w), ("norm", norm), *inner), version_key=None))
