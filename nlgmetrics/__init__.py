"""nlgmetrics: what the metric packages (``sescore``, ``menli``, ``mars``) share, under one namespace.

Sub-packages: ``modelroles`` (offline model roles), ``nli`` (NLI models and their training), ``baselines``
(BLEU, chrF, BERTScore, cosine), ``metaeval`` (correlation, adversarial protocol, I/O), ``perturb`` and
``stress`` (the blind-spot suite), ``resources`` (packaged configs). None of these imports a metric package;
``nlgmetrics.cli`` is the entry-point layer (the console commands and ``evaluate.py``/``train.py``), the one
place that composes metric packages. ``tests/test_layering.py`` checks both rules.
"""
from nlgmetrics.metaeval.scorer import toolkit_version

__version__ = toolkit_version()

__all__ = ["__version__"]
