"""MENLI: NLI models as evaluation metrics, their combination with other metrics, and the 15 pooling strategies.

- ``menli_scores`` (pure function) and ``MENLIScorer`` (Scorer shape) for scoring;
- ``MENLI`` and ``MENLIMix`` (torchmetrics.Metric) for training loops;
- ``mix`` / ``MixedScorer`` for MENLI with one partner (the paper's w * NLI + (1 - w) * M: weights
  ``pair_weights(w)``) or several, with guarded min-max normalisation (weights and ranges stored in a ``MixRecipe``).

Every name is imported on first access (``nlgmetrics.lazy`` says why): ``import menli`` or a light submodule such
as ``menli.registration`` loads neither torch nor the NLI code.
"""

from nlgmetrics.lazy import lazy_exports

_EXPORTS = {
    "menli.combine": ("DEFAULT_NLI_WEIGHT", "MinMax", "MixPart", "MixRecipe", "mix", "packaged_recipe", "pair_weights"),
    "menli.functional": ("menli_scores",),
    "menli.metric": ("MENLI", "MENLIMix"),
    "menli.pooling": ("ALL_STRATEGIES", "DIRECTIONS", "FORMULAS", "PAPER_CHOICES", "TASKS", "pool", "task_strategy"),
    "menli.scorer": ("MENLIScorer", "MixedScorer", "fitted_with"),
}

__getattr__ = lazy_exports("menli", {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = sorted(name for names in _EXPORTS.values() for name in names)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
