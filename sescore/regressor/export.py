"""Callback that exports the best model so far (by ``val_tau_like``) as a safetensors + YAML checkpoint.

Lightning's own ``.ckpt`` files are pickles; the exported folder is what users load. Only global rank 0
writes; every rank sees the same monitored value because the dev tau-like is computed on gathered predictions.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from nlgmetrics.resources import refuse_shipped_output
from sescore.regressor.card import write_model_card
from sescore.regressor.checkpoint import export_checkpoint


class ExportBest(pl.Callback):
    """Export when ``monitor`` improves after a validation run.

    Args:
        dirpath: checkpoint folder (overwritten by each improvement).
        monitor: logged metric that decides (``val_tau_like``; ``val_loss`` with mode ``min`` without dev data).
        mode: ``max`` or ``min``.
        export_last: also export when training ends if nothing was exported (e.g. the monitor never appeared).
    """

    def __init__(
        self,
        dirpath: str = "runs/sescore/best",
        monitor: str = "val_tau_like",
        mode: str = "max",
        export_last: bool = True,
    ) -> None:
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        refuse_shipped_output(dirpath, "export.dirpath")
        self.dirpath, self.monitor, self.mode, self.export_last = dirpath, monitor, mode, export_last
        self.best: float | None = None
        self.exports = 0
        self._started = time.time()

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._started = time.time()

    def _better(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        return value > self.best if self.mode == "max" else value < self.best

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        value = trainer.callback_metrics.get(self.monitor)
        if value is None or not self._better(float(value)):
            return
        self.best = float(value)
        self._export(trainer, pl_module, "best")

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.export_last and self.exports == 0:
            self._export(trainer, pl_module, "last (monitor never improved)")

    def _export(self, trainer: pl.Trainer, pl_module: pl.LightningModule, why: str) -> None:
        if trainer.is_global_zero:
            record = self.record(trainer, pl_module, why)
            language = (record.get("data") or {}).get("language")
            export_checkpoint(pl_module.regressor, self.dirpath, record, languages=[language] if language else None)
            write_model_card(self.dirpath)
            print(f"exported ({why}) to {Path(self.dirpath).resolve()}", file=sys.stderr, flush=True)
        self.exports += 1

    def record(self, trainer: pl.Trainer, pl_module: pl.LightningModule, why: str) -> dict[str, Any]:
        """Training record stored in ``hparams.yaml``: how, on what, and how well."""
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if getattr(v, "numel", lambda: 1)() == 1}
        datamodule = getattr(trainer, "datamodule", None)
        return {
            "selected": why,
            "monitor": self.monitor,
            "mode": self.mode,
            "best": self.best,
            "epoch": trainer.current_epoch,
            "global_step": trainer.global_step,
            "metrics": metrics,
            "train_seconds": round(time.time() - self._started, 1),
            "world_size": trainer.world_size,
            "precision": str(trainer.precision),
            "model_hparams": {k: v for k, v in pl_module.hparams.items() if not k.startswith("_")},
            "data": datamodule.describe() if hasattr(datamodule, "describe") else None,
            "data_hparams": {k: v for k, v in datamodule.hparams.items() if not k.startswith("_")}
            if datamodule is not None
            else None,
        }

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "exports": self.exports, "dirpath": str(Path(self.dirpath))}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.best, self.exports = state_dict.get("best"), state_dict.get("exports", 0)
