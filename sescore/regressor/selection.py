"""Checkpoint selection: WMT20 tau-like Kendall of the model's scores on a dev set with human judgments.

Each dev batch carries, per (hypothesis, reference) pair, the judged row it belongs to, the row's human score
and its item. The states are ``cat`` lists, so torchmetrics gathers them from every DDP rank (uneven sizes are
fine) before ``compute``; duplicates that a distributed sampler pads in are removed by row index, and several
references of one row are reduced with max, as the scorer does. Every rank then logs the same number.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from nlgmetrics.metaeval import tau_like


def rowwise_max(rows: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique row ids and, per row, the max of its values (multi-reference max; padded duplicates collapse)."""
    unique, inverse = np.unique(rows, return_inverse=True)
    best = np.full(len(unique), -np.inf)
    np.maximum.at(best, inverse, values)
    return unique, best


class DevTauLike(Metric):
    """tau-like over all pairs seen since the last reset, grouped by item, one score per judged row; with
    several dev sets (``sets``), the mean of the per-set tau-likes."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        for name in ("preds", "rows", "human", "items", "sets"):
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(
        self,
        preds: torch.Tensor,
        rows: torch.Tensor,
        human: torch.Tensor,
        items: torch.Tensor,
        sets: torch.Tensor | None = None,
    ) -> None:
        if not (len(preds) == len(rows) == len(human) == len(items)):
            raise ValueError("DevTauLike.update: preds, rows, human and items differ in length")
        self.preds.append(preds.detach().double().flatten())
        self.rows.append(rows.long().flatten())
        self.human.append(human.double().flatten())
        self.items.append(items.long().flatten())
        self.sets.append(torch.zeros_like(rows).long().flatten() if sets is None else sets.long().flatten())

    def compute(self) -> torch.Tensor:
        if isinstance(self.preds, list) and not self.preds:
            return torch.tensor(math.nan, dtype=torch.float64)
        rows = dim_zero_cat(self.rows).cpu().numpy()
        preds = dim_zero_cat(self.preds).cpu().numpy()
        human = dim_zero_cat(self.human).cpu().numpy()
        items = dim_zero_cat(self.items).cpu().numpy()
        sets = dim_zero_cat(self.sets).cpu().numpy()
        _, best = rowwise_max(rows, preds)
        _, first = np.unique(rows, return_index=True)  # aligned with rowwise_max's sorted unique rows
        human, items, sets = human[first], items[first], sets[first]
        # a dev mix: the unweighted mean of the sets' tau-likes (one set alone is plain tau-like)
        values = [tau_like(best[sets == s], human[sets == s], items[sets == s].tolist()) for s in np.unique(sets)]
        values = [v for v in values if not math.isnan(v)]
        return torch.tensor(float(np.mean(values)) if values else math.nan, dtype=torch.float64)
