"""Natural language inference shared by the metrics: MENLI scores with it, SEScore labels severity with it."""
from nlgmetrics.nli.cache import PairCache
from nlgmetrics.nli.labels import CANONICAL, canonical_order
from nlgmetrics.nli.model import DEFAULT_NLI, PUBLISHED_NLI, NLIModel, load_nli, predict_proba

__all__ = ["CANONICAL", "DEFAULT_NLI", "NLIModel", "PUBLISHED_NLI", "PairCache", "canonical_order", "load_nli",
           "predict_proba"]
