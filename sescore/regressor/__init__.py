"""SEScore's quality-prediction model (the metric half): train on synthesis data, export, score.

Every name is imported on first access (``nlgmetrics.lazy`` says why), so ``import sescore.regressor`` loads
neither torch nor Lightning and nothing loads a model at import time. Scoring lives in ``sescore.functional`` and
``sescore.scorer`` (the package's standard places); its names are still exported here for existing imports.
"""

from nlgmetrics.lazy import lazy_exports

_EXPORTS = {
    "sescore.functional": ("sescore_scores",),
    "sescore.metric": ("SEScore",),
    "sescore.regressor.checkpoint": ("CheckpointError", "export_checkpoint", "load_checkpoint", "read_hparams"),
    "sescore.regressor.cli": ("fit_main",),
    "sescore.regressor.datamodule": ("SEScoreDataModule",),
    "sescore.regressor.export": ("ExportBest",),
    "sescore.regressor.config": ("LoraSettings", "RegressorConfig"),
    "sescore.regressor.model": ("SEScoreRegressor", "build_regressor"),
    "sescore.regressor.module": ("SEScoreModule",),
    "sescore.regressor.scale": ("OUTPUT_SCALES", "to_target"),
    "sescore.regressor.selection": ("DevTauLike",),
    "sescore.regressor.split": ("split_by_reference",),
    "sescore.scorer": ("DEFAULT_CHECKPOINT", "MINILM_V2_CHECKPOINT", "SEScoreScorer"),
}

__getattr__ = lazy_exports("sescore.regressor", {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = sorted(name for names in _EXPORTS.values() for name in names)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
