"""Render the README's tables from the JSON lines evaluate.py printed (docs/results/*.json); no number is typed by hand."""
from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
TYPES = ["add", "drop", "neg", "num", "pron", "name", "word_NN", "word_VB", "word_JJ", "typo", "jumble", "subject_verb_dis"]


def load(name: str, folder: Path = RESULTS) -> dict | None:
    path = folder / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# Result-file stems of the other NLI models' runs (docs/reproduce_menli.sh with WITH_MPNET=1 / WITH_ME5=1) and their
# row labels; a stem without a result file gives no row.
MPNET_ROWS = {"menli-mpnet": "menli, nli-mpnet", "menli-mpnet+bertscore": "menli+bertscore, nli-mpnet",
              "menli-mpnet+bertscore-robust": "menli+bertscore@0.4 (robust, stored ranges), nli-mpnet"}
ME5_ROWS = {"menli-me5": "menli, nli-me5", "menli-me5+bertscore": "menli+bertscore, nli-me5"}


# the unsuffixed stems are nli-minilm's (reproduce_menli.sh passes it: the toolkit's default is now nli-mpnet);
# menli+chrf-dev: the combination bench/ablate_menli_combiner.py chose on the dev mix, with its saved ranges
MINILM_ROWS = {"menli": "menli, nli-minilm", "menli+bertscore": "menli+bertscore, nli-minilm",
               "menli+chrf-dev": "menli+chrf@0.3 (dev-mix choice, stored ranges), nli-minilm"}
LABELS = {**MINILM_ROWS, **MPNET_ROWS, **ME5_ROWS}


def label(stem: str) -> str:
    return LABELS.get(stem, stem)


def adversarial_table(metrics: list[str]) -> list[str]:
    lines = ["| metric | mean | " + " | ".join(TYPES) + " |", "|---|---|" + "---|" * len(TYPES)]
    for m in metrics:
        r = load(f"adv_{m}")
        if r:
            lines.append(f"| {label(m)} | {fmt(r['mean'])} | "
                         + " | ".join(fmt(r['per_type'].get(t)) for t in TYPES) + " |")
    return lines


def correlation_table(prefix: str, metrics: list[str]) -> list[str]:
    lines = ["| metric | tau-like | Kendall tau-b | Pearson | system Pearson | tau-like w/o human systems | n |",
             "|---|---|---|---|---|---|---|"]
    for m in metrics:
        r = load(f"{prefix}_{m}")
        if r:
            sub = r.get("without_human_systems", {})
            lines.append(f"| {label(m)} | {fmt(r['tau_like'])} | {fmt(r['kendall_b'])} | {fmt(r['pearson'])} | "
                         f"{fmt(r['system_pearson'])} | {fmt(sub.get('tau_like'))} | {r['n']} |")
    return lines


SESCORE_SETS = [  # (file prefix, column title)
    ("ted_zhen_heldout", "TED zh-en, items 201-529"),
    ("ted_zhen", "TED zh-en, all items"),
    ("summeval_relevance", "SummEval relevance"),
    ("webnlg_adequacy", "WebNLG-2020 adequacy"),
]
SESCORE_METRICS = [("sescore", "SEScore `minilm-v2` (three models averaged; the default until `mpnet-v2`)"),
                   ("sescore_v1", "SEScore v1 (`minilm-news`, the default before)"),
                   ("sescore_uniform", "SEScore v1 w/o severity"),
                   ("sescore_pooled", "SEScore v1 pooled-only head (no alignment)"),
                   ("sescore_init", "SEScore v1 before training (all-layer BERTScore-F1)"),
                   ("cosine", "MiniLM cosine (w/o synthetic errors)"), ("bertscore", "BERTScore-MiniLM"),
                   ("chrf", "chrF"), ("bleu", "BLEU")]


def sescore_table() -> list[str]:
    """tau-like / system Pearson per data set; the TED dev slice (items 1-200) chose the checkpoint."""
    lines = ["| metric | " + " | ".join(title for _, title in SESCORE_SETS) + " |", "|---|" + "---|" * len(SESCORE_SETS)]
    for metric, name in SESCORE_METRICS:
        cells = []
        for prefix, _ in SESCORE_SETS:
            r = load(f"{prefix}_{metric}")
            cells.append("-" if r is None else f"{fmt(r['tau_like'])} / {fmt(r['system_pearson'])}")
        if any(c != "-" for c in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def sescore_heldout_table() -> list[str]:
    """Every statistic on the TED zh-en items the checkpoint never saw (201-529)."""
    keys = ["tau_like", "kendall_b", "pearson", "system_pearson"]
    lines = ["| metric (TED zh-en, items 201-529) | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for metric, name in SESCORE_METRICS:
        r = load(f"ted_zhen_heldout_{metric}")
        if r is not None:
            lines.append(f"| {name} | " + " | ".join(fmt(r[k]) for k in keys) + " |")
    return lines


def sescore_versus_table() -> list[str]:
    """Paired item bootstrap of the tau-like difference on TED items 201-529, each shipped SEScore minus each
    baseline."""
    lines = ["| SEScore minus (TED zh-en, items 201-529) | tau-like difference | 95% interval | share of resamples "
             "not better |", "|---|---|---|---|"]
    shipped = {"sescore": "default", "sescore_v1": "v1"}
    for sescore, which in shipped.items():
        for metric, name in SESCORE_METRICS:
            r = load(f"ted_zhen_heldout_{sescore}_vs_{metric}")
            if r is not None:
                v = r["versus"]
                lines.append(f"| {which} minus {name} | {fmt(v['difference'])} | [{fmt(v['ci95'][0])}, "
                             f"{fmt(v['ci95'][1])}] | {v['share_a_not_better']:.3f} ({v['resamples']} resamples of "
                             f"{v['items']} items) |")
    return lines if len(lines) > 2 else []


BENCH = Path(__file__).resolve().parents[1] / "bench" / "results"
# The report half of the dev mix: files written by bench/ablate_sescore.py (SEScore rows, under their arm names) and
# by ``evaluate.py devmix`` (baselines); the first existing ablation file is read (the later one has more rows).
REPORT_ABLATIONS = ["sescore_default_ablations_all_report", "sescore_default_ablations_report"]
REPORT_SESCORE = [("default (minilm-v2)",
                   "SEScore `minilm-v2` (the default before: three MiniLM seeds' half-way points averaged)"),
                  ("no_rank_seeds_own_w0.5", "`minilm-v2`'s recipe w/o ranking loss (`rank_weight 0`)"),
                  ("no_rules_seeds_own_w0.5",
                   "`minilm-v2`'s recipe w/o new error types (v1 synthesis: LM fills, deletions)"),
                  ("no_severity_seeds_own_w0.5", "`minilm-v2`'s recipe w/o severity (every edit -1)"),
                  ("v1 (minilm-news)", "SEScore v1 (`minilm-news`, the default before `minilm-v2`)")]
# rows from ``evaluate.py devmix --versus bertscore --versus-encoder packaged:minilm`` files: SEScore models on
# another encoder, set against the same BERTScore-MiniLM as every other row (first in the table)
REPORT_OTHER_ENCODERS = [("sescore_default_report_vs_minilm",
                          "SEScore default (`mpnet-v2`: the v2 recipe on MPNet, one run half-way from its start)")]
REPORT_BASELINES = [("devmix_chrf_report", "chrF"), ("devmix_bleu_report", "BLEU"),
                    ("devmix_bertscore_mpnet_report", "BERTScore-mpnet (the default's encoder)")]
REPORT_SETS = ["ted_zhen", "summeval_rel", "summeval_con", "webnlg"]


def _report_row(name: str, result: dict) -> str:
    sets = {s["set"]: s for s in result["sets"]}
    mean = result["mean"]
    cells = [f"{fmt(sets[k]['tau_like_a'])} ({sets[k]['difference']:+.3f})" for k in REPORT_SETS]
    low, high = mean["ci95"]
    return (f"| {name} | " + " | ".join(cells) + f" | {mean['difference']:+.3f} [{low:+.3f}, {high:+.3f}] | "
            f"{mean['share_a_not_better']:.1%} | {fmt(sets['ted_zhen']['system_pearson_a'])} |")


def sescore_report_table() -> list[str]:
    """The dev mix's report half: SEScore, the ablations of its recipe (each built like the default: three seeds'
    half-way points averaged) and the baselines, each against BERTScore-MiniLM on the same rows with a paired item
    bootstrap. Every row is a metric minus the same BERTScore, so rows compare with each other through it."""
    ablations = next((r for r in (load(n, BENCH) for n in REPORT_ABLATIONS) if r is not None), None)
    if ablations is None:
        return []
    lines = ["| metric (dev mix, report half) | TED zh-en | SummEval rel. | SummEval con. | WebNLG "
             "| mix vs BERTScore-MiniLM [95% CI] | not better | TED zh-en system Pearson |", "|---|" + "---|" * 7]
    reference, rows = None, []
    for key, name in REPORT_SESCORE:
        result = ablations["details"].get(key)
        if result is not None:
            rows.append(_report_row(name, result))
            reference = reference or result
    if reference is None:  # checked before any other row is compared with it
        raise SystemExit(f"{REPORT_ABLATIONS}: the ablation file has none of the rows {[k for k, _ in REPORT_SESCORE]}")

    def checked(stem: str) -> dict | None:
        result = load(stem, BENCH)
        if result is not None and result["versus_signature"] != reference["versus_signature"]:
            raise SystemExit(f"{stem}: its BERTScore ({result['versus_signature']}) is not the SEScore rows' "
                             f"({reference['versus_signature']})")
        return result

    others = [(name, checked(stem)) for stem, name in REPORT_OTHER_ENCODERS]
    lines += [_report_row(name, result) for name, result in others if result is not None] + rows
    for stem, name in REPORT_BASELINES:
        result = checked(stem)
        if result is not None:
            lines.append(_report_row(name, result))
    sets = {s["set"]: s for s in reference["sets"]}
    lines.append("| BERTScore-MiniLM (the reference of every row) | " + " | ".join(
        fmt(sets[k]["tau_like_b"]) for k in REPORT_SETS) + f" | - | - | {fmt(sets['ted_zhen']['system_pearson_b'])} |")
    return lines


def _dotted(config: dict, key: str):
    """``config["a"]["b"]`` for key ``"a.b"`` (None when a level is missing)."""
    for part in key.split("."):
        config = config.get(part) if isinstance(config, dict) else None
    return config


def synthesis_tables(summary_path: str) -> list[str]:
    """Per-operation counts, severity shares and the settings next to the paper's, from a run's summary.json."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sescore.synthesis.config import load_config, to_dict

    summary = json.loads(Path(summary_path).read_text())
    edits, severity = summary["edits"], summary["severity"]
    lines = [f"{summary['rows']} rows from {summary['sentences']} sentences, config `{summary['config_name']}` "
             f"(hash `{summary['config_hash']}`), mean score {summary['mean_score']:.2f}; "
             f"edits planned {edits['planned']}, applied {edits['applied']} ({edits['applied_share']:.1%}), "
             f"no-op {edits['unchanged']}, rejected by the budget table {edits['rejected']}.", "",
             "| operation | planned | applied | no-op (duplicate text) | rejected |", "|---|---|---|---|---|"]
    for kind, c in sorted(summary["per_kind"].items()):
        lines.append(f"| {kind} | {c['planned']} | {c['applied']} | {c['unchanged']} | {c['rejected']} |")
    counts = severity["counts"]
    lines += ["", "| severity | labels | share |", "|---|---|---|",
              f"| minor (-1) | {counts.get('-1', 0)} | {severity['minor_share']:.3f} |",
              f"| major (-5) | {counts.get('-5', 0)} | {severity['major_share']:.3f} |"]
    repo = Path(__file__).resolve().parents[1] / "configs" / "sescore"
    paper, ours = to_dict(load_config(repo / "paper_en.yaml")), to_dict(load_config(repo / f"{summary['config_name']}.yaml"))
    keys = ["variants", "max_edits", "num_edits_lambda", "mix_single_edit", "mix_multi_edit", "seq2seq_max_step",
            "delete_span", "seq2seq_span", "mlm.role", "mlm.model", "mlm.top_k", "seq2seq.role", "seq2seq.model",
            "seq2seq.top_k", "severity.nli", "severity.threshold"]
    lines += ["", f"| setting | paper (`paper_en.yaml`) | this run (`{summary['config_name']}.yaml`) |", "|---|---|---|"]
    for key in keys:
        lines.append(f"| {key} | {_dotted(paper, key)} | {_dotted(ours, key)} |")
    return lines


def main() -> int:
    if sys.argv[1:] == ["sescore"]:
        print("\n".join(sescore_report_table() + [""] + sescore_table() + [""] + sescore_heldout_table() + [""]
                        + sescore_versus_table()))
        return 0
    if sys.argv[1:2] == ["synthesis"] and len(sys.argv) == 3:
        print("\n".join(synthesis_tables(sys.argv[2])))
        return 0
    out = ["### Adversarial preference accuracy (adv_menli_wmt20_de, reference-based; ties fail)", ""]
    out += adversarial_table([*MINILM_ROWS, *MPNET_ROWS, *ME5_ROWS, "bertscore", "cosine", "chrf", "bleu"])
    out += ["", "### Correlation with MQM, WMT21 TED zh-en (segment tau-like is WMT20 item-grouped)", ""]
    out += correlation_table("ted_zhen", [*MINILM_ROWS, *MPNET_ROWS, *ME5_ROWS, "bertscore", "chrf", "bleu"])
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
