"""Perturbations of text for metric stress tests (blind-spot paper) and adversarial suites (MENLI).

Every perturbation is a pure function ``(text, rng, level, **context) -> str`` that raises ``NotApplicable``
instead of returning its input when it cannot apply. Look them up by name::

    from nlgmetrics.perturb import get_perturbation, NotApplicable
    noise = get_perturbation("article_removal")
    noise("The cat sat on a mat.", np.random.default_rng(0), 1.0)   # -> "cat sat on mat."

``PERTURBATIONS`` lists all of them with family (fluency / consistency / targeted / menli), default levels,
whether their noise ratio is halved, and the context they need (see ``perturb.registry``).
"""

from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.lexicon import Lexicon, default_lexicon
from nlgmetrics.perturb.ngrams import top_ngrams
from nlgmetrics.perturb.noise_ratio import noise_ratio
from nlgmetrics.perturb.numbers import spell_out_numbers
from nlgmetrics.perturb.registry import (
    CONTEXT_KEYS,
    FAMILIES,
    MENLI_CODES,
    PERTURBATIONS,
    Perturbation,
    get_perturbation,
    perturbations_in,
)

__all__ = [
    "CONTEXT_KEYS",
    "FAMILIES",
    "MENLI_CODES",
    "PERTURBATIONS",
    "Lexicon",
    "NotApplicable",
    "Perturbation",
    "default_lexicon",
    "get_perturbation",
    "noise_ratio",
    "perturbations_in",
    "spell_out_numbers",
    "top_ngrams",
]
