"""SEScore: stratified error synthesis (``sescore.synthesis``) and the regressor trained on it (``sescore.regressor``).

    from sescore import SEScoreScorer, SEScore          # score with a checkpoint (Scorer shape / torchmetrics)
    from sescore.synthesis import run_synthesis          # raw sentences -> (reference, candidate, score) dataset
"""
from nlgmetrics.lazy import lazy_exports
from sescore.regressor import DEFAULT_CHECKPOINT, MINILM_V2_CHECKPOINT, SEScoreScorer, load_checkpoint, sescore_scores

__getattr__ = lazy_exports("sescore", {"SEScore": "sescore.regressor.metric"})  # torchmetrics class: on first use


__all__ = ["DEFAULT_CHECKPOINT", "MINILM_V2_CHECKPOINT", "SEScore", "SEScoreScorer", "load_checkpoint", "sescore_scores"]
