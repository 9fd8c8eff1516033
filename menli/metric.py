"""``menli.MENLI`` and ``menli.MENLIMix``: torchmetrics Metrics for use inside training/validation loops.

The shared contract (``nlgmetrics.textmetric``): ``update(preds, target)``, float64, mean or ``per_sample``,
``nan`` before any update, per-sample ``cat`` state (never token tensors) that syncs across DDP processes,
pickling without the NLI model. Granularity options are those of ``menli_scores``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from menli.functional import AGGREGATIONS, menli_scores
from menli.granularity import check_granularity
from menli.pooling import check_strategy
from menli.scorer import DEFAULT_NLI, language_error, nli_language
from nlgmetrics.inputs import InputError
from nlgmetrics.language import check_lang
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision, forward_precision
from nlgmetrics.textmetric import TextScoreMetric


class MENLI(TextScoreMetric):
    """Mean MENLI score of all updates (or every per-sample score with ``per_sample=True``).

    ``model`` is an NLI role value (default: the packaged adapter); ``nli`` passes a loaded model instead (its
    ``spec`` is kept for reloading after pickling when it has one). ``precision``: the NLI model's forward pass,
    float32 or bfloat16 (``nlgmetrics.modelroles.precision``). ``lang``: the references' language (default:
    identified from each update's references); a language the NLI model does not cover is refused.
    """

    def __init__(
        self,
        model: str | None = None,
        formula: str = "e",
        direction: str = "<->",
        aggregation: str = "max",
        batch_size: int = 64,
        per_sample: bool = False,
        nli: Any = None,
        granularity: str = "auto",
        sentence_reduce: str = "mean",
        sentence_candidates: int = 0,
        precision: str = DEFAULT_PRECISION,
        lang: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(per_sample=per_sample, **kwargs)
        self.precision = check_precision(precision)
        self.lang = check_lang(lang)
        self.formula, self.direction = check_strategy(formula, direction)
        if aggregation not in AGGREGATIONS:
            raise InputError(f"unknown multi-reference aggregation '{aggregation}'; choose from {AGGREGATIONS}")
        check_granularity(granularity, sentence_reduce)
        spec = getattr(nli, "spec", None) if nli is not None else DEFAULT_NLI
        self.model_spec = model if model is not None else (spec if isinstance(spec, str) else None)
        self.aggregation, self.batch_size = aggregation, batch_size
        self.granularity, self.sentence_reduce = granularity, sentence_reduce
        self.sentence_candidates = sentence_candidates
        self._set_model(nli)

    @property
    def follows_device(self) -> bool:  # type: ignore[override]
        """An NLI model given without a spec stays where the caller put it; one with a spec is loaded again on the
        metric's device after ``.to()`` (``load_nli`` keeps one copy per device)."""
        return self.model_spec is not None

    def _load_model(self) -> Any:
        if self.model_spec is None:
            raise InputError(
                "MENLI was given an NLI object without a spec, which is not pickled; create the metric "
                "with model=SPEC to reload it after unpickling"
            )
        from nlgmetrics.nli import load_nli

        return load_nli(self.model_spec, str(self.device))

    def _score(self, hyps: list[str], refs: list[list[str]], srcs: Sequence[str | None] | None) -> Sequence[float]:
        if self.model_spec is not None:
            found, covered = nli_language(self.model_spec, self.lang, refs)
            if covered is not None:
                raise language_error(self.model_spec, found, covered)
        with forward_precision(self.device, self.precision):
            return menli_scores(
                self._model(),
                hyps,
                refs,
                self.formula,
                self.direction,
                self.aggregation,
                self.batch_size,
                granularity=self.granularity,
                sentence_reduce=self.sentence_reduce,
                sentence_candidates=self.sentence_candidates,
            )


class MENLIMix(TextScoreMetric):
    """Mean ``MixedScorer`` score (MENLI with one partner or several, over stored ranges) of all updates.

    ``partners``: picklable factories of the partner scorers (``functools.partial(BERTScorer, encoder=...)`` for
    the paper's combination; ``functools.partial(SEScoreScorer, checkpoint)`` and
    ``functools.partial(LMLikelihoodScorer, "packaged:smollm2", relative=True)`` for the fluency mix): the metric
    pickles without its models and rebuilds them from these. ``weights``: MENLI first (``pair_weights(w)`` for one
    partner); None takes the recipe's, or [0.2, 0.8] for one partner whose ranges store none. ``recipe``: a
    ``MixRecipe``, a recipe or two-part ranges file, or ``"auto"`` (the packaged recipe fitted with exactly these
    models). Set normalisation is refused: a training-loop score that moved with the other rows of its batch would
    make two epochs' values incomparable.
    """

    def __init__(
        self,
        partners: Sequence[Callable[[], Any]],
        weights: Sequence[float] | None = None,
        recipe: Any = "auto",
        model: str | None = None,
        formula: str = "e",
        direction: str = "<->",
        granularity: str = "auto",
        sentence_reduce: str = "mean",
        sentence_candidates: int = 0,
        batch_size: int = 64,
        per_sample: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(per_sample=per_sample, **kwargs)
        self.formula, self.direction = check_strategy(formula, direction)
        check_granularity(granularity, sentence_reduce)
        if not partners or not all(callable(p) for p in partners):
            raise InputError("MENLIMix partners: give one or more factories (callables returning a scorer)")
        if recipe == "set":
            raise InputError(
                "MENLIMix needs stored ranges (a recipe or 'auto'): set normalisation would make a "
                "score depend on the other rows of its batch"
            )
        self.partner_factories = list(partners)
        self.weights = None if weights is None else [float(w) for w in weights]
        self.recipe = recipe
        self.model_spec = model if model is not None else DEFAULT_NLI
        self.granularity, self.sentence_reduce = granularity, sentence_reduce
        self.sentence_candidates, self.batch_size = sentence_candidates, batch_size
        self._set_model(None)

    def _load_model(self) -> Any:
        from menli.combine import MixRecipe
        from menli.scorer import MENLIScorer, MixedScorer

        recipe = self.recipe
        if isinstance(recipe, (str, Path)) and recipe != "auto":
            recipe = MixRecipe.load(recipe)
        menli = MENLIScorer(
            self.model_spec,
            self.formula,
            self.direction,
            batch_size=self.batch_size,
            device=str(self.device),
            granularity=self.granularity,
            sentence_reduce=self.sentence_reduce,
            sentence_candidates=self.sentence_candidates,
        )
        try:
            scorer = MixedScorer(menli, [factory() for factory in self.partner_factories], self.weights, recipe)
            if scorer.resolve_recipe(warn=False) is None:
                raise ValueError("no packaged recipe was fitted with these models: pass recipe=<file>")
        except ValueError as error:
            raise InputError(f"MENLIMix: {error}") from None
        return scorer

    def _score(self, hyps: list[str], refs: list[list[str]], srcs: Sequence[str | None] | None) -> Sequence[float]:
        return self._model().score(hyps, refs)
