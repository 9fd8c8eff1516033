"""``menli.MENLI``: a torchmetrics Metric for use inside training/validation loops.

State is the per-sample scores (a ``cat`` list of small tensors), never token tensors, so syncing across
DDP processes is cheap and ``compute()`` equals the single-process result on the union of the data.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from menli.functional import menli_scores
from menli.pooling import check_strategy
from menli.scorer import DEFAULT_NLI


class MENLI(Metric):
    """Mean MENLI score of all updates (or every per-sample score with ``per_sample=True``)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        model: str = DEFAULT_NLI,
        formula: str = "e",
        direction: str = "<->",
        aggregation: str = "max",
        batch_size: int = 64,
        per_sample: bool = False,
        nli: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.formula, self.direction = check_strategy(formula, direction)
        self.model_spec, self.aggregation, self.batch_size, self.per_sample = model, aggregation, batch_size, per_sample
        self._nli = nli
        self.add_state("scores", default=[], dist_reduce_fx="cat")

    def _model(self) -> Any:
        if self._nli is None:
            from nlgmetrics.nli import load_nli

            self._nli = load_nli(self.model_spec, str(self.device) if self.device.type != "cpu" else "cpu")
        return self._nli

    def update(self, preds: Sequence[str], target: Sequence[str] | Sequence[Sequence[str]]) -> None:
        """``preds`` candidates, ``target`` their reference (or list of references)."""
        if isinstance(preds, str) or isinstance(target, str):
            raise ValueError("MENLI.update expects lists of strings, not a single string")
        if len(preds) != len(target):
            raise ValueError(f"MENLI.update: {len(preds)} predictions but {len(target)} targets")
        if not len(preds):
            return
        scores = menli_scores(self._model(), list(preds), list(target), self.formula, self.direction,
                              self.aggregation, self.batch_size)
        self.scores.append(torch.as_tensor(scores, dtype=torch.float64, device=self.device))

    def compute(self) -> torch.Tensor:
        if isinstance(self.scores, list) and not self.scores:
            return torch.tensor(float("nan"), dtype=torch.float64)
        values = dim_zero_cat(self.scores)
        return values if self.per_sample else values.mean()
