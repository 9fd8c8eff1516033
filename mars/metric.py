"""MARS as a torchmetrics ``Metric``: a thin stateful shell over ``MARSScorer``.

The shared contract (``nlgmetrics.textmetric``): ``update(preds, target, srcs=None)`` (``srcs`` is the
generation context, e.g. the story so far), float64, mean or ``per_sample``, ``nan`` before any update,
per-sample ``cat`` state, pickling with the config but without the models (reloaded from the config).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from mars.config import MARSConfig
from mars.scorer import MARSScorer, build
from nlgmetrics.textmetric import TextScoreMetric


class MARS(TextScoreMetric):
    """Language-model augmented relevance score: mean of the per-sample scores (``per_sample=True``: all)."""

    uses_sources = True

    def __init__(
        self,
        config: str | Path | Mapping[str, Any] | MARSConfig | None = None,
        *,
        scorer: MARSScorer | None = None,
        ablation: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        per_sample: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(per_sample=per_sample, **kwargs)
        scorer = scorer if scorer is not None else build(config, ablation=ablation, overrides=overrides)
        self.config = scorer.config  # picklable: the scorer (and its models) is rebuilt from it
        self._set_model(scorer)

    @property
    def scorer(self) -> MARSScorer:
        return self._model()

    def _load_model(self) -> MARSScorer:
        return MARSScorer(self.config)

    def _score(self, hyps: list[str], refs: list[list[str]], srcs: Sequence[str | None] | None) -> Sequence[float]:
        return self._model().score(hyps, refs, srcs)

    def signature(self) -> str:
        return self._model().signature()
