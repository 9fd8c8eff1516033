"""Natural language inference shared by the metrics: MENLI scores with it, SEScore labels severity with it.

Names are imported on first use (``nlgmetrics.lazy``): ``nlgmetrics.nli.defaults`` must stay importable without
torch, since the command line reads the default model for ``--help``.
"""

from nlgmetrics.lazy import lazy_exports
from nlgmetrics.nli.defaults import DEFAULT_NLI, PUBLISHED_NLI

__getattr__ = lazy_exports(
    "nlgmetrics.nli",
    {
        "PairCache": "nlgmetrics.nli.cache",
        "CANONICAL": "nlgmetrics.nli.labels",
        "canonical_order": "nlgmetrics.nli.labels",
        "NLIModel": "nlgmetrics.nli.model",
        "load_nli": "nlgmetrics.nli.model",
        "predict_proba": "nlgmetrics.nli.model",
    },
)

__all__ = [
    "CANONICAL",
    "DEFAULT_NLI",
    "NLIModel",
    "PUBLISHED_NLI",
    "PairCache",
    "canonical_order",
    "load_nli",
    "predict_proba",
]
