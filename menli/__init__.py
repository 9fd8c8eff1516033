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
from nlgmetrics.lazy import lazy_exports

# the torchmetrics classes: imported on first use (nlgmetrics.lazy says why)
__getattr__ = lazy_exports("menli", {"MENLI": "menli.metric", "MENLIMix": "menli.metric"})

__all__ = [
    "ALL_STRATEGIES", "CombinationStats", "CombinedScorer", "DIRECTIONS", "FORMULAS", "MENLI", "MENLIMix",
    "MENLIScorer", "MinMax", "MixPart", "MixRecipe", "MixedScorer", "PAPER_CHOICES", "TASKS", "combine", "fitted_with",
    "menli_scores", "mix", "packaged_recipe", "packaged_stats", "pool", "task_strategy",
]
