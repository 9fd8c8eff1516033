"""Meta-evaluation: how well a metric agrees with people, and whether it prefers the right candidate."""

from nlgmetrics.metaeval.adversarial import adversarial_pairs, adversarial_scores, preference_accuracy, run_adversarial
from nlgmetrics.metaeval.compare import CorpusStatistic, bootstrap_p_value, paired_bootstrap_systems
from nlgmetrics.metaeval.correlation import (
    correlation_report,
    kendall_b,
    paired_bootstrap_correlation,
    paired_bootstrap_tau_like,
    paired_bootstrap_tau_like_mix,
    pearson,
    system_pearson,
    tau_like,
    tau_like_ties,
)
from nlgmetrics.metaeval.rows import multi_reference_rows, one_row_per_item, score_rows, source_text
from nlgmetrics.metaeval.scorer import FunctionScorer, Scorer, as_scorer
from nlgmetrics.metaeval.split import rows_in_half, split_items
from nlgmetrics.metaeval.textio import (
    InputError,
    atomic_write,
    check_same_length,
    first_items,
    read_jsonl,
    read_lines,
    usable_rows,
    validate_texts,
)

__all__ = [
    "CorpusStatistic",
    "FunctionScorer",
    "InputError",
    "Scorer",
    "adversarial_pairs",
    "adversarial_scores",
    "as_scorer",
    "atomic_write",
    "bootstrap_p_value",
    "check_same_length",
    "correlation_report",
    "first_items",
    "kendall_b",
    "paired_bootstrap_correlation",
    "paired_bootstrap_systems",
    "paired_bootstrap_tau_like",
    "paired_bootstrap_tau_like_mix",
    "pearson",
    "preference_accuracy",
    "read_jsonl",
    "read_lines",
    "multi_reference_rows",
    "one_row_per_item",
    "rows_in_half",
    "run_adversarial",
    "score_rows",
    "source_text",
    "split_items",
    "system_pearson",
    "tau_like",
    "tau_like_ties",
    "usable_rows",
    "validate_texts",
]
