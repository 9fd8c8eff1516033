"""SEScore's quality-prediction model (the metric half): train on synthesis data, export, score.

Heavy pieces (Lightning module, data module, CLI) are imported on first use, so ``from sescore.regressor import
SEScoreScorer`` stays light and nothing loads a model at import time.
"""
from __future__ import annotations

from nlgmetrics.lazy import lazy_exports
from sescore.regressor.checkpoint import CheckpointError, export_checkpoint, load_checkpoint, read_hparams
from sescore.regressor.model import LoraSettings, RegressorConfig, SEScoreRegressor, build_regressor
from sescore.regressor.scale import OUTPUT_SCALES, to_target
from sescore.regressor.scoring import DEFAULT_CHECKPOINT, MINILM_V2_CHECKPOINT, SEScoreScorer, sescore_scores
from sescore.regressor.split import split_by_reference

_LAZY = {
    "SEScore": "sescore.regressor.metric",
    "SEScoreModule": "sescore.regressor.module",
    "SEScoreDataModule": "sescore.regressor.datamodule",
    "ExportBest": "sescore.regressor.export",
    "DevTauLike": "sescore.regressor.selection",
    "fit_main": "sescore.regressor.cli",
}
__getattr__ = lazy_exports("sescore.regressor", _LAZY)


__all__ = [
    "DEFAULT_CHECKPOINT", "MINILM_V2_CHECKPOINT", "OUTPUT_SCALES", "CheckpointError", "DevTauLike", "ExportBest", "LoraSettings",
    "RegressorConfig", "SEScore", "SEScoreDataModule", "SEScoreModule", "SEScoreRegressor", "SEScoreScorer",
    "build_regressor", "export_checkpoint", "fit_main", "load_checkpoint", "read_hparams", "sescore_scores",
    "split_by_reference", "to_target",
]
