"""One torchmetrics contract for every text metric of the toolkit (SEScore, MENLI, MARS).

The three classes share this shell, so argument names, dtype, empty state and pickling agree, and
``tests/test_metric_contract.py`` holds each of them to it:

- ``update(preds, target)``: candidates and their reference (or list of references), checked by the shared
  input policy (``nlgmetrics.inputs``); metrics that read sources take ``srcs=`` too, the others refuse it;
- ``compute()``: float64; the mean of every per-sample score, or all of them in update order with
  ``per_sample=True``; before any update the mean is ``nan`` and the per-sample result is an empty tensor;
- the state is only per-sample scores (``cat``), so DDP sync moves a few floats per sample and equals one
  process on the union of the data, also when a rank never called ``update`` (torchmetrics fills an empty
  rank's list state with ``self.dtype``, so that dtype is float64 here like the scores of the other ranks);
- pickling (checkpoints, ``deepcopy``, multiprocessing) keeps the configuration and the scores, never the
  model: the model is reloaded from its spec on the next ``update``.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from nlgmetrics.inputs import InputError, check_pairs


class TextScoreMetric(Metric):
    """Shell: subclasses implement ``_score`` (pure scoring) and ``_load_model`` (from a picklable spec)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    uses_sources = False

    def __init__(self, per_sample: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.per_sample = per_sample
        self._dtype = torch.float64
        self._model_object: Any = None
        self._model_device: torch.device | None = None
        self.add_state("scores", default=[], dist_reduce_fx="cat")

    # -- model handling ----------------------------------------------------------------------------------------
    def _set_model(self, model: Any) -> None:
        object.__setattr__(self, "_model_object", model)  # never an nn.Module child: not in the host's parameters
        object.__setattr__(self, "_model_device", self.device)

    def _load_model(self) -> Any:
        raise NotImplementedError

    def _model(self) -> Any:
        """The model, loaded on first use on the metric's device, and loaded again there after ``.to(device)``
        moved the metric (Lightning moves it with the module; a model left behind would score on the old device).
        Subclasses whose model can move itself override this to move instead of reloading."""
        if self._model_object is None or (self.follows_device and self._model_device != self.device):
            self._set_model(self._load_model())
        return self._model_object

    follows_device = True  # False for a model object passed in by the caller: it stays where the caller put it

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_model_object"] = None
        state["_model_device"] = None
        return state

    # -- scoring -----------------------------------------------------------------------------------------------
    def _score(self, hyps: list[str], refs: list[list[str]], srcs: list[str | None] | None) -> Sequence[float]:
        raise NotImplementedError

    def update(
        self,
        preds: Sequence[str],
        target: Sequence[str] | Sequence[Sequence[str]],
        srcs: Sequence[str | None] | None = None,
    ) -> None:
        """``preds`` candidates, ``target`` one reference (or list of references) each, ``srcs`` optional."""
        name = type(self).__name__
        if srcs is not None and not self.uses_sources:
            raise InputError(f"{name}.update takes no srcs (it scores candidates against references only)")
        hyps, refs, sources = check_pairs(
            preds,
            target,
            srcs,
            hyp_name=f"{name}.update preds",
            ref_name=f"{name}.update target",
            src_name=f"{name}.update srcs",
        )
        if not hyps:
            return
        scores = self._score(hyps, refs, sources)
        self.scores.append(torch.as_tensor(list(scores), dtype=torch.float64, device=self.device))

    def compute(self) -> torch.Tensor:
        if isinstance(self.scores, list) and not self.scores:
            empty = torch.zeros(0, dtype=torch.float64, device=self.device)
            return empty if self.per_sample else torch.tensor(float("nan"), dtype=torch.float64, device=self.device)
        values = dim_zero_cat(self.scores).to(torch.float64)
        if self.per_sample:
            return values
        return values.mean() if values.numel() else torch.tensor(float("nan"), dtype=torch.float64)
