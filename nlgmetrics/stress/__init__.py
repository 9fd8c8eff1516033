"""Stress tests for NLG metrics: the blind-spot protocol and a MENLI-style adversarial suite builder.

Public API (what ``evaluate.py stress`` / ``evaluate.py make-adversarial`` call)::

    from nlgmetrics.stress import run_blindspot, write_report, markdown_table, make_adversarial

    report = run_blindspot(
        metrics,                 # {name: fn(hyps: list[str], refs: list[str], srcs: list[str] | None) -> list[float]}
        hyps, refs, srcs=None,   # gold hypotheses (e.g. reference A), references (reference B, or a list of
                                 # references per sample: the metric aggregates), optional sources
        tests=None,              # names from nlgmetrics.perturb.PERTURBATIONS; None = DEFAULT_TESTS
        levels=None,             # {test: [levels]} overrides; default = the registry"s default levels
        seeds=(1, 2, 3, 4, 5),
        nlp=None,                # spaCy Language or spec (default packaged:en_core_web_sm), parsed once per hyp
        mlm=None,                # masked_lm spec or LoadedModel, needed only by "bert_diverge"
        ngrams=None, vocabulary=None,   # frequent_ngram / positioned_random_* material (default: from refs)
        keep_last_sentence=False,       # True for open-ended text (sentence switching keeps the last one)
        min_applied=10,          # tests applying to fewer samples are shown, not judged
    )
    report = judge(report, min_applied=5)  # re-judge stored curves (e.g. a loaded report.json); scores nothing
    store = ScoreStore("runs/stress/scores.jsonl")  # per-row scores on disk: a rerun scores only new rows
    metrics = {"mine": store.metric("mine|v1", my_metric, chunk=4096)}  # key by what would change the scores
    write_report(report, "runs/stress")   # report.json, report.md (pass/fail table), plots/<test>.png

    rows = make_adversarial(multiref_rows, np.random.default_rng(0), types=ERROR_CODES)  # MENLI-format dicts

    # MARS Table 4: 50% of each candidate"s tokens reordered / a context sentence copied; scores must drop
    report = run_robustness({"mine": my_metric}, hyps, refs, srcs, seed=0)

Report shape (JSON-able)::

    {"protocol": {...}, "metrics": [...],
     "tests": {test: {"family", "description", "applicable", "judged", "n_applied", "skipped": {reason: n},
                      "warnings", "levels": [0, l1, ...], "noise_ratio": [0, r1, ...], "noise_ratio_std": [...],
                      "metrics": {metric: {"mean": [gold, ...], "std": [0, ...], "passed": bool | None}},
                      "passed": {metric: bool | None}}},   # None: too few samples, not judged
     "summary": {metric: {"passed": n, "failed": n, "too_few": n, "not_applicable": n}},
     "unavailable": {test: {"family", "reason"}}}   # e.g. self_evaluation_bias; never counted as passed

Index 0 of every curve is the gold point. A test that applied to no sample has ``applicable: false`` and a
``reason``; one that applied to fewer than ``protocol.min_applied`` samples has ``judged: false``, a ``reason`` and
its curves. Metrics must be sample-level, higher = better.
"""

from nlgmetrics.lazy import lazy_exports
from nlgmetrics.stress.defaults import DEFAULT_MIN_APPLIED, DEFAULT_SEEDS

# imported on first use: the suite loads spaCy, matplotlib and the perturbation tables (~2 s), which the command
# line's --help and the stress defaults must not wait for
__getattr__ = lazy_exports(
    "nlgmetrics.stress",
    {
        "ERROR_CODES": "nlgmetrics.stress.adversarial",
        "make_adversarial": "nlgmetrics.stress.adversarial",
        "DEFAULT_TESTS": "nlgmetrics.stress.blindspot",
        "UNAVAILABLE_OFFLINE": "nlgmetrics.stress.blindspot",
        "MetricFn": "nlgmetrics.stress.blindspot",
        "judge": "nlgmetrics.stress.blindspot",
        "run_blindspot": "nlgmetrics.stress.blindspot",
        "score_noised": "nlgmetrics.stress.blindspot",
        "strictly_decreasing": "nlgmetrics.stress.blindspot",
        "NoisedTest": "nlgmetrics.stress.noising",
        "noise_test": "nlgmetrics.stress.noising",
        "sample_rng": "nlgmetrics.stress.noising",
        "curve_table": "nlgmetrics.stress.report",
        "markdown_table": "nlgmetrics.stress.report",
        "plot_test": "nlgmetrics.stress.report",
        "write_report": "nlgmetrics.stress.report",
        "ATTACKS": "nlgmetrics.stress.robustness",
        "make_attacks": "nlgmetrics.stress.robustness",
        "run_robustness": "nlgmetrics.stress.robustness",
        "stress_rows": "nlgmetrics.stress.rows",
        "ScoreStore": "nlgmetrics.stress.store",
    },
)

__all__ = [
    "ATTACKS",
    "DEFAULT_MIN_APPLIED",
    "DEFAULT_SEEDS",
    "DEFAULT_TESTS",
    "ERROR_CODES",
    "UNAVAILABLE_OFFLINE",
    "MetricFn",
    "NoisedTest",
    "ScoreStore",
    "curve_table",
    "judge",
    "make_adversarial",
    "make_attacks",
    "markdown_table",
    "noise_test",
    "plot_test",
    "run_blindspot",
    "run_robustness",
    "sample_rng",
    "score_noised",
    "strictly_decreasing",
    "stress_rows",
    "write_report",
]
