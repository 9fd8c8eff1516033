"""MARS as a torchmetrics ``Metric``: a thin stateful shell over ``MARSScorer``.

Only per-sample scores are kept as state (``cat``), so distributed sync moves a few floats per sample; all the
work (augmentation, encoding) happens in ``update`` through the scorer.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import torch
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from mars.config import MARSConfig
from mars.scorer import MARSScorer, build


class MARS(Metric):
    """Language-model augmented relevance score; ``compute()`` returns the per-sample scores (mean = system score)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        config: str | Path | Mapping[str, Any] | MARSConfig | None = None,
        *,
        scorer: MARSScorer | None = None,
        ablation: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.scorer = scorer if scorer is not None else build(config, ablation=ablation, overrides=overrides)
        self.add_state("scores", default=[], dist_reduce_fx="cat")

    def update(self, hyps: Sequence[str], refs: Sequence[str], srcs: Sequence[str | None] | None = None) -> None:
        scores = self.scorer.score(list(hyps), list(refs), None if srcs is None else list(srcs))
        self.scores.append(torch.tensor(scores, dtype=torch.float32))

    def compute(self) -> torch.Tensor:
        if not self.scores:
            return torch.zeros(0)
        return dim_zero_cat(self.scores)

    def signature(self) -> str:
        return self.scorer.signature()
