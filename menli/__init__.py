"""MENLI: NLI models as evaluation metrics, their combination with other metrics, and the 15 pooling strategies.

- ``menli_scores`` (pure function) and ``MENLIScorer`` (Scorer shape) for scoring;
- ``MENLI`` and ``MENLIMix`` (torchmetrics.Metric) for training loops;
- ``combine`` / ``CombinedScorer`` for w * NLI + (1 - w) * M with guarded min-max normalisation;
- ``mix`` / ``MixedScorer`` for MENLI with several partners (weights and ranges stored in a ``MixRecipe``).
"""
from menli.combine import CombinationStats, MinMax, MixPart, MixRecipe, combine, mix, packaged_recipe, packaged_stats
from menli.functional import menli_scores
from menli.pooling import ALL_STRATEGIES, DIRECTIONS, FORMULAS, PAPER_CHOICES, TASKS, pool, task_strategy
from menli.scorer import CombinedScorer, MENLIScorer, MixedScorer, fitted_with


def __getattr__(name: str):
    # the torchmetrics classes are imported on first use: importing torchmetrics takes ~4 s (it loads its audio,
    # image and text modules, scipy.signal, transformers), which every CLI run and --devices worker paid for nothing
    if name in ("MENLI", "MENLIMix"):
        from menli import metric

        return getattr(metric, name)
    raise AttributeError(f"module 'menli' has no attribute '{name}'")


__all__ = [
    "ALL_STRATEGIES", "CombinationStats", "CombinedScorer", "DIRECTIONS", "FORMULAS", "MENLI", "MENLIMix",
    "MENLIScorer", "MinMax", "MixPart", "MixRecipe", "MixedScorer", "PAPER_CHOICES", "TASKS", "combine", "fitted_with",
    "menli_scores", "mix", "packaged_recipe", "packaged_stats", "pool", "task_strategy",
]
