"""MARS: language-model augmented relevance score (Liu, Wei & Vosoughi, ACL 2021).

Mask the human reference (knapsack over POS/idf priorities and LCS costs), fill the blanks with a causal LM
steered toward the following text (self-planning, generate-judge-revise), and score a candidate by its
weighted cosine similarity to the human and augmented references. See ``mars/README.md`` for every choice the
paper leaves open.

The metric has the toolkit's standard shape: ``mars.functional`` (pure functions, ``mars_scores``), ``MARSScorer``
and ``build`` (Scorer shape), ``MARS`` (torchmetrics Metric) and ``MARSConfig`` / ``load_config`` (its recipe).
Every name is imported on first access (``nlgmetrics.lazy`` says why): ``import mars`` or a light submodule such as
``mars.registration`` loads neither torch nor a model.
"""

from nlgmetrics.lazy import lazy_exports
from nlgmetrics.metaeval.scorer import toolkit_version

__version__ = toolkit_version()  # what every MARS signature names (``mars.scorer.package_version``)

_EXPORTS = {
    "mars.config": ("ABLATIONS", "MARSConfig", "load_config"),
    "mars.functional": ("geometric_weights", "mars_score", "mars_scores", "mean_pooled_embeddings", "weighted_cosine"),
    "mars.knapsack": ("solve_knapsack",),
    "mars.metric": ("MARS",),
    "mars.scorer": ("MARSScorer", "build", "package_version"),
}

__getattr__ = lazy_exports("mars", {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = sorted(name for names in _EXPORTS.values() for name in names if name != "package_version")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
