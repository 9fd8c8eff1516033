"""MARS: language-model augmented relevance score (Liu, Wei & Vosoughi, ACL 2021).

Mask the human reference (knapsack over POS/idf priorities and LCS costs), fill the blanks with a causal LM
steered toward the following text (self-planning, generate-judge-revise), and score a candidate by its
weighted cosine similarity to the human and augmented references. See ``mars/README.md`` for every choice the
paper leaves open. Nothing here loads a model at import time.
"""
from mars.config import ABLATIONS, MARSConfig, load_config
from mars.functional import geometric_weights, mars_score, mean_pooled_embeddings, weighted_cosine
from mars.knapsack import solve_knapsack
from mars.scorer import MARSScorer, build, package_version
from nlgmetrics.lazy import lazy_exports

__version__ = package_version()
__getattr__ = lazy_exports("mars", {"MARS": "mars.metric"})  # torchmetrics class: imported on first use

__all__ = [
    "ABLATIONS", "MARS", "MARSConfig", "MARSScorer", "build", "geometric_weights", "load_config", "mars_score",
    "mean_pooled_embeddings", "solve_knapsack", "weighted_cosine",
]
