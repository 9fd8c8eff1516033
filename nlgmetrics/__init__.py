"""nlgmetrics: what the metric packages (``sescore``, ``menli``, ``mars``) share, under one namespace.

Sub-packages: ``modelroles`` (offline model roles), ``nli`` (NLI models and their training), ``baselines``
(BLEU, chrF, BERTScore, cosine), ``metaeval`` (correlation, adversarial protocol, I/O), ``perturb`` and
``stress`` (the blind-spot suite), ``resources`` (packaged configs), ``registry`` (every metric by name:
``load_metric``, ``list_metrics``). No module here imports a metric package: the metric packages declare their
metrics in the registry's entry-point group, and ``nlgmetrics.cli`` (the console commands, the top layer) composes
them only through the registry. ``tests/test_layering.py`` checks these rules on every import, module- and
function-level.
"""

import os

# Why: with MKL's default code path a matrix product with few rows (a classifier or regressor head on a batch of
# pooled vectors) rounds differently depending on how many rows there are, so an item scored in a batch of 1 and in
# a batch of 8, or in one process and in two (``--devices``), differed in the last bits (measured with torch 2.13:
# a 768x768 linear layer, 1 to 3 rows vs 8). MKL's strict conditional-numerical-reproducibility mode made gemm
# results independent of row count on the CPU of earlier sessions; on an AMD EPYC it does not for 1 to 3 rows, so
# the heads on one vector per text also run on batches filled to a multiple of 8 rows
# (``modelroles.batching.filled_rows``). The AUTO branch keeps the CPU's fastest kernels (bench/results/mkl_mode.md
# measures both modes).
# It takes effect only if set before the first MKL call of the process, so it is set here, on import, unless the
# user chose a mode; spawned ``--devices`` workers inherit it. Without MKL (e.g. ARM builds) it does nothing.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

from nlgmetrics.metaeval.scorer import toolkit_version  # noqa: E402
from nlgmetrics.registry import list_metrics, load_metric, metric_spec  # noqa: E402

__version__ = toolkit_version()

__all__ = ["__version__", "list_metrics", "load_metric", "metric_spec"]
