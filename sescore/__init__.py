"""SEScore: stratified error synthesis (``sescore.synthesis``) and the regressor trained on it (``sescore.regressor``).

    from sescore import SEScoreScorer, SEScore          # score with a checkpoint (Scorer shape / torchmetrics)
    from sescore.synthesis import run_synthesis          # raw sentences -> (reference, candidate, score) dataset
"""
from sescore.regressor import DEFAULT_CHECKPOINT, MINILM_V2_CHECKPOINT, SEScoreScorer, load_checkpoint, sescore_scores


def __getattr__(name: str):
    if name == "SEScore":  # torchmetrics class: imported on first use
        from sescore.regressor.metric import SEScore

        return SEScore
    raise AttributeError(f"module 'sescore' has no attribute '{name}'")


__all__ = ["DEFAULT_CHECKPOINT", "MINILM_V2_CHECKPOINT", "SEScore", "SEScoreScorer", "load_checkpoint", "sescore_scores"]
