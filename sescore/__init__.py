"""SEScore: stratified error synthesis (``sescore.synthesis``) and the regressor trained on it (``sescore.regressor``).

The metric has the toolkit's standard shape:

    from sescore.functional import sescore_scores      # pure function: loaded regressor, texts -> scores
    from sescore import SEScoreScorer, SEScore         # Scorer shape (checkpoint folders) / torchmetrics Metric
    from sescore.synthesis import run_synthesis        # raw sentences -> (reference, candidate, score) dataset

Every name is imported on first access (``nlgmetrics.lazy`` says why): ``import sescore`` or a light submodule
such as ``sescore.registration`` loads neither torch nor transformers.
"""

from nlgmetrics.lazy import lazy_exports

_EXPORTS = {
    "sescore.functional": ("ensemble_scores", "sescore_scores"),
    "sescore.metric": ("SEScore",),
    "sescore.regressor.checkpoint": ("load_checkpoint",),
    "sescore.scorer": ("DEFAULT_CHECKPOINT", "MINILM_V2_CHECKPOINT", "SEScoreScorer"),
}

__getattr__ = lazy_exports("sescore", {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = sorted(name for names in _EXPORTS.values() for name in names)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
