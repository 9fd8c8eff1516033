"""``sescore.regressor.SEScore``: a torchmetrics Metric for use inside training/validation loops.

State is the per-sample scores (a ``cat`` list of small tensors), so syncing across DDP processes is cheap and
``compute()`` equals the single-process result on the union of the data. The regressor is held outside the
module tree: it must not appear in the host LightningModule's parameters, optimizer or state_dict.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from sescore.regressor.scoring import DEFAULT_CHECKPOINT, sescore_scores


class SEScore(Metric):
    """Mean SEScore of all updates, or every per-sample score with ``per_sample=True`` (in update order)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        checkpoint: str = DEFAULT_CHECKPOINT,
        batch_size: int = 64,
        per_sample: bool = False,
        regressor: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.checkpoint, self.batch_size, self.per_sample = checkpoint, batch_size, per_sample
        object.__setattr__(self, "_regressor", regressor)  # bypass nn.Module registration on purpose
        self.add_state("scores", default=[], dist_reduce_fx="cat")

    def _model(self) -> Any:
        if self._regressor is None:
            from sescore.regressor.checkpoint import load_checkpoint

            object.__setattr__(self, "_regressor", load_checkpoint(self.checkpoint, str(self.device)))
        elif self._regressor.device != self.device:
            self._regressor.to(self.device)
        return self._regressor

    def update(self, preds: Sequence[str], target: Sequence[str] | Sequence[Sequence[str]]) -> None:
        """``preds`` candidates, ``target`` their reference (or list of references)."""
        scores = sescore_scores(self._model(), preds, target, self.batch_size)
        if len(scores):
            self.scores.append(torch.as_tensor(scores, dtype=torch.float64, device=self.device))

    def compute(self) -> torch.Tensor:
        if isinstance(self.scores, list) and not self.scores:
            return torch.tensor(float("nan"), dtype=torch.float64)
        values = dim_zero_cat(self.scores)
        return values if self.per_sample else values.mean()
