"""``menli.MENLI``: a torchmetrics Metric for use inside training/validation loops.

The shared contract (``nlgmetrics.textmetric``): ``update(preds, target)``, float64, mean or ``per_sample``,
``nan`` before any update, per-sample ``cat`` state (never token tensors) that syncs across DDP processes,
pickling without the NLI model. Granularity options are those of ``menli_scores``.
"""
from __future__ import annotations

from typing import Any, Sequence

from menli.functional import AGGREGATIONS, menli_scores
from menli.granularity import check_granularity
from menli.pooling import check_strategy
from menli.scorer import DEFAULT_NLI
from nlgmetrics.inputs import InputError
from nlgmetrics.textmetric import TextScoreMetric


class MENLI(TextScoreMetric):
    """Mean MENLI score of all updates (or every per-sample score with ``per_sample=True``).

    ``model`` is an NLI role value (default: the packaged adapter); ``nli`` passes a loaded model instead (its
    ``spec`` is kept for reloading after pickling when it has one).
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
        **kwargs: Any,
    ) -> None:
        super().__init__(per_sample=per_sample, **kwargs)
        self.formula, self.direction = check_strategy(formula, direction)
        if aggregation not in AGGREGATIONS:
            raise InputError(f"unknown multi-reference aggregation '{aggregation}'; choose from {AGGREGATIONS}")
        check_granularity(granularity, sentence_reduce)
        spec = getattr(nli, "spec", None) if nli is not None else DEFAULT_NLI
        self.model_spec = model if model is not None else (spec if isinstance(spec, str) else None)
        self.aggregation, self.batch_size = aggregation, batch_size
        self.granularity, self.sentence_reduce, self.sentence_candidates = granularity, sentence_reduce, sentence_candidates
        self._set_model(nli)

    def _load_model(self) -> Any:
        if self.model_spec is None:
            raise InputError("MENLI was given an NLI object without a spec, which is not pickled; create the metric "
                             "with model=SPEC to reload it after unpickling")
        from nlgmetrics.nli import load_nli

        return load_nli(self.model_spec, str(self.device))

    def _score(self, hyps: list[str], refs: list[list[str]], srcs: Sequence[str | None] | None) -> Sequence[float]:
        return menli_scores(self._model(), hyps, refs, self.formula, self.direction, self.aggregation,
                            self.batch_size, granularity=self.granularity, sentence_reduce=self.sentence_reduce,
                            sentence_candidates=self.sentence_candidates)
