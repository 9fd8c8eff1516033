"""MARS as a torchmetrics ``Metric``: a thin stateful shell over ``MARSScorer``.

The shared contract (``nlgmetrics.textmetric``): ``update(preds, target, srcs=None)`` (``srcs`` is the
generation context, e.g. the story so far), float64, mean or ``per_sample``, ``nan`` before any update,
per-sample ``cat`` state, pickling with the config but without the models (reloaded from the config).
"""

from __future__ import annotations

import dataclasses
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
        built = scorer if scorer is not None else build(config, ablation=ablation, overrides=overrides)
        self.config = built.config  # picklable: the scorer (and its models) is rebuilt from it
        self.given_scorer = scorer is not None
        self._set_model(scorer)  # a scorer passed in is used as it is; else built on the metric's device on first use

    @property
    def follows_device(self) -> bool:  # type: ignore[override]
        return not self.given_scorer

    @property
    def scorer(self) -> MARSScorer:
        return self._model()

    def _load_model(self) -> MARSScorer:
        """The scorer on the metric's device when the config leaves the device to the run (``device: auto``), as
        Lightning expects of a metric it moves with its module; a device the config names wins."""
        config = self.config
        if config.device in (None, "auto"):
            config = dataclasses.replace(config, device=str(self.device))
        return MARSScorer(config)

    def _score(self, hyps: list[str], refs: list[list[str]], srcs: Sequence[str | None] | None) -> Sequence[float]:
        return self._model().score(hyps, refs, srcs)

    def signature(self) -> str:
        return self._model().signature()
