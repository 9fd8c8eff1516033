"""SEScore: the default checkpoint against the baselines on the dev mix's report half, the correlation runs of
``docs/reproduce_sescore.sh`` (made before the default; its row says so), the recipe ablations of
``bench/ablate_sescore.py`` (removed after its runs; in git history at commit ba587ce) under plain names (their
variant codes and verdicts in the raw-data appendix) and the offline synthesis runs the training data came from."""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist
from typing import Any, Mapping

import results_quality
from results_markdown import Lines, Page, bullets, collapsible, generic, interval, machine, signed, table
from results_menli import EVALUATE, fmt3
from results_plots import forest, histogram
from results_store import ResultFiles

REPORT_NOT_BETTER = 0.05  # step 3 of the SEScore rule (docs/guides/experiments.md)

SETS = [
    ("ted_zhen_heldout", "TED zh-en, items 201-529"),
    ("ted_zhen", "TED zh-en, all items"),
    ("summeval_relevance", "SummEval relevance"),
    ("webnlg_adequacy", "WebNLG-2020 adequacy"),
]
METRICS = [
    ("sescore", "SEScore `minilm-v2` (three models averaged; the default until `mpnet-v2`)"),
    ("sescore_v1", "SEScore v1 (`minilm-news`, the default before)"),
    ("sescore_uniform", "SEScore v1 w/o severity"),
    ("sescore_pooled", "SEScore v1 pooled-only head (no alignment)"),
    ("sescore_init", "SEScore v1 before training (all-layer BERTScore-F1)"),
    ("cosine", "MiniLM cosine (w/o synthetic errors)"),
    ("bertscore", "BERTScore-MiniLM"),
    ("chrf", "chrF"),
    ("bleu", "BLEU"),
]
EARLIER = {"sescore", "sescore_v1", "sescore_uniform", "sescore_pooled", "sescore_init"}  # not the default
SHIPPED = {"sescore": "`minilm-v2`", "sescore_v1": "v1"}  # the runs reproduce_sescore.sh pairs with baselines
# the result files of docs/reproduce_sescore.sh that hold the current default (``<set>_<key>``); it has none yet
DEFAULT_RUN = "sescore_default"
NOT_MEASURED = "not measured"
# plain names of the recipe experiments (result files of the removed bench/ablate_sescore.py); an unnamed file gets
# one from its stem
EXPERIMENTS = {
    "sescore_ablation_select": "The v2 recipe and its parts, on MiniLM",
    "sescore_ablation_me5_select": "The v2 recipe on the me5-small encoder",
    "sescore_ablation_mpnet_select": "The v2 recipe on the MPNet encoder (where `mpnet-v2` comes from)",
    "sescore_ablation_thumb_select": "Training on news summaries (THumB CNN/DM references)",
    "sescore_seeds_select": "Three training seeds of the v2 recipe",
    "sescore_interpolation_seeds_select": "Half-way weights between the untrained start and the fit",
    "sescore_interpolation_me5_select": "Half-way weights on me5-small",
    "sescore_ensemble_seeds_select": "Averaging three seeds' scores",
    "sescore_ensemble_report": "Averaging three seeds' scores, reported",
    "sescore_no_severity_select": "Without severity (every edit -1)",
    "sescore_default_ablations_no_rank_select": "`minilm-v2`'s recipe without the ranking loss",
    "sescore_default_ablations_no_rules_select": "`minilm-v2`'s recipe without the new error types",
    "sescore_default_ablations_no_severity_select": "`minilm-v2`'s recipe without severity",
    "sescore_default_ablations_report": "`minilm-v2`'s recipe without each part, reported",
    "sescore_default_ablations_all_report": "`minilm-v2`'s recipe without each of its three parts, reported",
    "sescore_default_report": "The default and the earlier checkpoints, each against BERTScore on its own encoder",
    "sescore_mpnet_report": "The MPNet half-way checkpoint (now `mpnet-v2`), reported",
    "sescore_lever_bf16_data2x_select": "Twice the data and the steps, in bfloat16",
    "sescore_lever_chrf_select": "chrF as an extra input of the head",
    "sescore_lever_neighbours_select": "Edits borrowed from neighbouring sentences (SEScore2-style)",
    "sescore_lever_news_select": "News sentences only",
    "sescore_lever_nli_inputs_select": "NLI probabilities as extra inputs of the head",
    "sescore_lever_nli_inputs_fresh_select": "NLI probabilities as extra inputs, two fresh seeds",
    "sescore_lever_nli_inputs_mpnet_select": "NLI probabilities as extra inputs, on MPNet",
    "sescore_lever_nli_inputs_mpnet_report": "NLI probabilities as extra inputs, on MPNet, reported",
    "sescore_lever_nli_mpnet_select": "Severity graded by nli-mpnet",
    "sescore_lever_steps2x_select": "Twice the training steps",
}
HALVES = {"select": "tuning half", "report": "report half"}
HELDOUT_KEYS = ["tau_like", "kendall_b", "pearson", "system_pearson"]
SYNTHESIS = "synthesis_offline_en_summary"
SYNTHESIS_DEFAULT = "synthesis_mpnet_v2_summary"  # steps 1-2 of the default's recipe, rebuilt from a clean checkout
SYNTHESIS_LEVERS = [  # the data of screened recipe changes (docs/guides/experiments.md), beside the default's
    ("synthesis_v2_neighbours_summary", "Training data with edits borrowed from neighbouring sentences"),
    ("synthesis_v2_nli_mpnet_summary", "Training data with severity graded by nli-mpnet"),
    ("synthesis_v2_news_summary", "Training data from news sentences only"),
]
GERMAN = ("sescore_de_select", "sescore_de_report")  # bench/bench_sescore_german.py
GERMAN_SYNTHESIS = "synthesis_de_me5_summary"
GERMAN_COLUMNS = [
    "candidate",
    "items",
    "tau-like SEScore",
    "tau-like BERTScore-me5",
    "difference [95% CI]",
    "not better",
]
GERMAN_CANDIDATES = {"packed": "half-way from the run's start (0.5)", "trained": "the trained weights (`me5-de`)"}
LABELLERS = "severity_labellers"  # bench/labeller_agreement.py, removed after its run (git history: 6f5fd22)
SYNTHESIS_KEYS = [
    "variants",
    "max_edits",
    "num_edits_lambda",
    "mix_single_edit",
    "mix_multi_edit",
    "seq2seq_max_step",
    "delete_span",
    "seq2seq_span",
    "mlm.role",
    "mlm.model",
    "mlm.top_k",
    "seq2seq.role",
    "seq2seq.model",
    "seq2seq.top_k",
    "severity.nli",
    "severity.threshold",
]


def _default_label() -> str:
    from sescore.shipped import DEFAULT_NAME

    return f"SEScore `{DEFAULT_NAME}` (the default)"


def sets_table(files: ResultFiles, earlier: bool = True) -> Lines:
    """tau-like / system Pearson of every run per data set (the TED dev slice, items 1-200, chose v1's
    checkpoint), the current default's row first: *not measured* where no run of it exists.

    Args:
        files: the result files.
        earlier: include the earlier checkpoints and their ablations (else the default and the baselines).
    """
    lines = [
        "| metric (tau-like / system Pearson) | " + " | ".join(title for _, title in SETS) + " |",
        "|---|" + "---|" * len(SETS),
    ]
    for metric, name in [(DEFAULT_RUN, _default_label()), *METRICS]:
        if not earlier and metric in EARLIER:
            continue
        cells = []
        for prefix, _ in SETS:
            doc = files.load(f"{EVALUATE}/{prefix}_{metric}")
            cells.append("-" if doc is None else f"{fmt3(doc['tau_like'])} / {fmt3(doc['system_pearson'])}")
        if metric == DEFAULT_RUN:
            cells = [NOT_MEASURED if c == "-" else c for c in cells]
        if any(c != "-" for c in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines if len(lines) > 3 else []


def heldout_table(files: ResultFiles) -> Lines:
    """Every statistic on the TED zh-en items no checkpoint was chosen on (201-529), the default's row first."""
    lines = [
        "| metric (TED zh-en, items 201-529) | " + " | ".join(HELDOUT_KEYS) + " |",
        "|---|" + "---|" * len(HELDOUT_KEYS),
    ]
    for metric, name in [(DEFAULT_RUN, _default_label()), *METRICS]:
        doc = files.load(f"{EVALUATE}/ted_zhen_heldout_{metric}")
        if doc is not None:
            lines.append(f"| {name} | " + " | ".join(fmt3(doc[k]) for k in HELDOUT_KEYS) + " |")
        elif metric == DEFAULT_RUN:
            lines.append(f"| {name} | " + " | ".join([NOT_MEASURED] * len(HELDOUT_KEYS)) + " |")
    return lines if len(lines) > 3 else []


def versus_table(files: ResultFiles) -> Lines:
    """Paired item bootstrap of the tau-like difference on TED items 201-529: each shipped SEScore minus each
    baseline, the default's row first (*not measured* when it has no such run)."""
    lines = [
        "| SEScore minus (TED zh-en, items 201-529) | tau-like difference | 95% interval | share of resamples "
        "not better |",
        "|---|---|---|---|",
    ]
    from sescore.shipped import DEFAULT_NAME

    for sescore, which in {DEFAULT_RUN: f"`{DEFAULT_NAME}` (the default)", **SHIPPED}.items():
        found = 0
        for metric, name in METRICS:
            doc = files.load(f"{EVALUATE}/ted_zhen_heldout_{sescore}_vs_{metric}")
            if doc is not None:
                found += 1
                v = doc["versus"]
                lines.append(
                    f"| {which} minus {name} | {fmt3(v['difference'])} | {interval(v['ci95'])} | "
                    f"{v['share_a_not_better']:.3f} ({v['resamples']} resamples of {v['items']} items) |"
                )
        if sescore == DEFAULT_RUN and not found:
            lines.append(f"| {which} minus each baseline | {NOT_MEASURED} | {NOT_MEASURED} | {NOT_MEASURED} |")
    return lines if len(lines) > 3 else []


def _dotted(config: Mapping[str, Any], key: str) -> Any:
    """``config["a"]["b"]`` for key ``"a.b"`` (None when a level is missing)."""
    value: Any = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def synthesis_tables(summary: Mapping[str, Any]) -> Lines:
    """Per-operation counts, severity shares and the run's settings beside the paper's, from a synthesis run's
    summary.json."""
    from nlgmetrics.resources import config_path
    from sescore.synthesis.config import load_config, to_dict

    edits, severity = summary["edits"], summary["severity"]
    lines = [
        f"{summary['rows']} rows from {summary['sentences']} sentences, config `{summary['config_name']}` "
        f"(hash `{summary['config_hash']}`), mean score {summary['mean_score']:.2f}; "
        f"edits planned {edits['planned']}, applied {edits['applied']} ({edits['applied_share']:.1%}), "
        f"no-op {edits['unchanged']}, rejected by the budget table {edits['rejected']}.",
        "",
        "| operation | planned | applied | no-op (duplicate text) | rejected |",
        "|---|---|---|---|---|",
    ]
    for kind, c in sorted(summary["per_kind"].items()):
        lines.append(f"| {kind} | {c['planned']} | {c['applied']} | {c['unchanged']} | {c['rejected']} |")
    counts = severity["counts"]
    lines += [
        "",
        "| severity | labels | share |",
        "|---|---|---|",
        f"| minor (-1) | {counts.get('-1', 0)} | {severity['minor_share']:.3f} |",
        f"| major (-5) | {counts.get('-5', 0)} | {severity['major_share']:.3f} |",
    ]
    paper = to_dict(load_config(config_path("sescore/paper_en.yaml")))
    ours = to_dict(load_config(config_path(f"sescore/{summary['config_name']}.yaml")))
    lines += [
        "",
        f"| setting | paper (`paper_en.yaml`) | this run (`{summary['config_name']}.yaml`) |",
        "|---|---|---|",
    ]
    lines += [f"| {key} | {_dotted(paper, key)} | {_dotted(ours, key)} |" for key in SYNTHESIS_KEYS]
    return lines


def set_deltas(lever: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, float]:
    """Per dev-mix set, the lever row's tau-like minus the base row's: where a lever helps or hurts (e.g. MT or
    only the other sets). BERTScore's rows are the same for both, so this is also the change of the set's
    difference against BERTScore."""
    base_tau = {entry["set"]: entry["tau_like_a"] for entry in base.get("sets", [])}
    return {
        entry["set"]: entry["tau_like_a"] - base_tau[entry["set"]]
        for entry in lever.get("sets", [])
        if entry["set"] in base_tau
    }


def mean_set_deltas(pairs: list[dict[str, float]]) -> dict[str, float]:
    """The mean over screened pairs of their ``set_deltas``, for the sets every pair has."""
    names = [name for name in pairs[0] if all(name in pair for pair in pairs)] if pairs else []
    return {name: sum(pair[name] for pair in pairs) / len(pairs) for name in names}


def _screen_sets(files: ResultFiles, doc: Mapping[str, Any]) -> dict[str, float]:
    """Per dev-mix set, the screened pairs' mean of lever minus base tau-like: where a lever helps (MT, or only
    the other sets). Files written before the screen recorded it are computed from their rows; base rows a run
    borrowed (``--screen-base``) are read from the file it names."""
    verdict = doc["screen"]
    if "mean_sets" in verdict:
        return verdict["mean_sets"]
    rows = dict(doc.get("details", {}))
    source = verdict.get("bases_from", {}).get("file")
    if source:
        rows = {**(files.load(Path(source).stem) or {}).get("details", {}), **rows}
    pairs = [
        set_deltas(rows[p["lever"]], rows[p["base"]])
        for p in verdict["pairs"]
        if p["lever"] in rows and p["base"] in rows
    ]
    return mean_set_deltas(pairs) if len(pairs) == len(verdict["pairs"]) else {}


def _reported_candidates(files: ResultFiles, doc: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The arms of a report-half file that a select-half file's confirmation made the candidate, with their mix
    means: the rows step 3 of the rule decides on."""
    if doc.get("half") != "report":
        return []
    details = doc.get("details", {})
    confirmed = [(files.load(s) or {}).get("confirm") for s in files.stems("sescore_*")]
    levers = sorted({c["lever"] for c in confirmed if c and c.get("passes")})
    return [(lever, details[lever]["mean"]) for lever in levers if "mean" in details.get(lever, {})]


def experiment_title(stem: str) -> str:
    """An ablation file's plain name (``EXPERIMENTS``), or one made from its stem."""
    if stem in EXPERIMENTS:
        return EXPERIMENTS[stem]
    words = stem.removeprefix("sescore_").replace("lever_", "").split("_")
    half = HALVES.get(words[-1])
    return "Recipe change: " + " ".join(words[:-1] if half else words) + (f" ({half})" if half else "")


def _arms(doc: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [(arm, result) for arm, result in doc.get("details", {}).items() if "mean" in result]


def _outcome(files: ResultFiles, doc: Mapping[str, Any]) -> str:
    """What the file decided, in words: the screening, confirmation or report verdict it records (or ``-``)."""
    found = []
    if doc.get("screen"):
        found.append("passes screening" if doc["screen"]["passes"] else "fails screening")
    if doc.get("confirm"):
        found.append("confirmed: the candidate" if doc["confirm"]["passes"] else "not confirmed")
    for _, mean in _reported_candidates(files, doc):
        found.append(
            "replaces the default" if mean["share_a_not_better"] < REPORT_NOT_BETTER else "does not replace the default"
        )
    return "; ".join(found) or "-"


def experiments_table(files: ResultFiles, stems: list[str]) -> Lines:
    """One plain row per ablation file: what was tried, where, how many variants, the spread of their mean
    differences to BERTScore (each with the variant's own encoder) and what it decided."""
    rows = []
    for stem in stems:
        doc = files.load(stem)
        means = [result["mean"]["difference"] for _, result in _arms(doc)]
        rows.append(
            {
                "experiment": experiment_title(stem),
                "measured on": HALVES.get(doc.get("half"), doc.get("half", "?")),
                "variants": len(means),
                "mean difference to BERTScore, lowest to highest": (
                    "-"
                    if not means
                    else f"{means[0]:+.4f}"
                    if len(means) == 1
                    else f"{min(means):+.4f} to {max(means):+.4f}"
                ),
                "outcome": _outcome(files, doc),
            }
        )
    return table(rows)


def _experiment_figure(page: Page, stem: str, doc: Mapping[str, Any]) -> Lines:
    """The forest of one ablation file's variants (a marker inside the collapsed figures section)."""
    arms = _arms(doc)
    if len(arms) < 2:
        return []
    rows = [(arm, result["mean"]["difference"], result["mean"].get("ci95")) for arm, result in arms]
    title = experiment_title(stem)
    marker = page.marker(
        f"sescore-{title.replace('`', '')}",
        f"{title.replace('`', '')}: each variant minus BERTScore with 95% intervals",
        lambda rows=rows, title=title, doc=doc: forest(
            rows,
            f"{title.replace('`', '')}: minus BERTScore, dev mix {HALVES.get(doc.get('half'), '')}",
            "mean tau-like difference",
        ),
    )
    return [f"**{title}** ({HALVES.get(doc.get('half'), doc.get('half', '?'))})", "", marker, ""]


def _ablation(page: Page, files: ResultFiles, stem: str) -> None:
    """One ablation file in the raw-data appendix: its verdicts with the variants' codes, and every variant."""
    doc = files.load(stem)
    body: Lines = []
    verdict = doc.get("screen")
    if verdict:
        deltas = ", ".join(f"`{r['lever']}` minus `{r['base']}` {signed(r['delta'], 4)}" for r in verdict["pairs"])
        rule = verdict["rule"].replace("docs/guides/experiments.md", "[the rule](../guides/experiments.md)")
        body += [
            f"Screening ({rule}): {deltas}; mean {signed(verdict['mean_delta'], 4)}: the lever "
            + ("**passes**." if verdict["passes"] else "**does not pass**."),
            "",
        ]
        per_set = _screen_sets(files, doc)
        if per_set:
            body += [
                "Per set, mean over the seeds (lever minus base tau-like): "
                + ", ".join(f"{name} {signed(delta, 4)}" for name, delta in per_set.items())
                + ".",
                "",
            ]
    confirmed = doc.get("confirm")
    if confirmed:  # step 2 of the rule: the lever on MPNet against the committed mpnet-v2 row
        rule = confirmed["rule"].replace("docs/guides/experiments.md", "[the rule](../guides/experiments.md)")
        bar = confirmed["bar"]
        body += [
            f"Confirmation ({rule}): `{confirmed['lever']}` {signed(confirmed['difference'], 4)}, not better in "
            f"{confirmed['not_better']:.1%} of resamples, against `{bar['row']}` {signed(bar['difference'], 4)} "
            f"(`{bar['file']}`): " + ("**becomes the candidate**." if confirmed["passes"] else "**does not pass**."),
            "",
        ]
    for lever, mean in _reported_candidates(files, doc):  # step 3: a candidate scored once on the report half
        verdict = (
            "**replaces the default**" if mean["share_a_not_better"] < REPORT_NOT_BETTER else "**does not replace it**"
        )
        body += [
            f"Report ([the rule](../guides/experiments.md), step 3: the candidate replaces the default when not better "
            f"in under {REPORT_NOT_BETTER:.0%} of resamples): `{lever}` {signed(mean['difference'], 4)} "
            f"{interval(mean.get('ci95'), 4)}, not better in {mean['share_a_not_better']:.1%} of resamples: {verdict}."
            + _resolvable(mean.get("ci95"), mean["difference"]),
            "",
        ]
    body += generic({k: v for k, v in doc.items() if k not in ("details", "screen", "confirm")})
    # the anchor the file's section had when it was a heading, so links to it keep working
    anchor = f"{stem}-{doc.get('half', '')}-half"
    body = [f"Result file `{files.display(stem)}`.", f"{{: #{anchor} }}", "", *body]
    page.add(collapsible(f"{stem} ({doc.get('half', '?')} half): {experiment_title(stem)}", body))


def _resolvable(ci95: list[float] | None, difference: float) -> str:
    """What lead the report half can show at all: with the bootstrap's spread read off the interval (a normal
    approximation, width / 3.92), a lead is not better in under ``REPORT_NOT_BETTER`` of resamples from about that
    share's normal quantile (1.645 for 5%) of spreads on. A positive lead below that would need more items: the
    spread of a mean over items shrinks as one over the square root of their number, so the factor is the square of
    the resolvable lead over the lead."""
    if not ci95:
        return ""
    normal = NormalDist()
    spread = (ci95[1] - ci95[0]) / (2 * normal.inv_cdf(0.975))
    lead = normal.inv_cdf(1 - REPORT_NOT_BETTER) * spread
    text = (
        f" With this interval's spread (about {spread:.4f}), a lead shows as not better in under "
        f"{REPORT_NOT_BETTER:.0%} of resamples from about {signed(lead, 3)} on (normal approximation)."
    )
    if 0 < difference < lead:
        factor = (lead / difference) ** 2
        text += (
            f" If this lead ({signed(difference, 4)}) held, it would show with about {factor:.1f} times the report "
            "half's judged items."
        )
    return text


def _default_section(page: Page, files: ResultFiles) -> None:
    """The default against the baselines on the report half, a verdict and a figure."""
    from sescore.shipped import DEFAULT_NAME

    current = results_quality.report_table(files, "defaults", pearson=False)
    if not current:
        return
    page.require_row(f"SEScore default (`{DEFAULT_NAME}`)", "metric (dev mix, report half)")
    page.add(
        "## The default against the baselines",
        "",
        "The dev mix's report half, where nothing was chosen: each cell is the tau-like on one set and, in "
        "brackets, its difference to BERTScore-MiniLM on the same rows; the mean difference has a 95% paired "
        "item-bootstrap interval and *not better* is the share of resamples where the metric did not beat "
        "BERTScore-MiniLM. The [quality page](quality.md) explains the dev mix.",
        "",
        current,
        "",
    )
    rows = dict(results_quality.report_rows(files, "defaults"))
    own = (files.load("sescore_default_report") or {}).get("details", {}).get(f"default ({DEFAULT_NAME})")
    label = f"SEScore default (`{DEFAULT_NAME}`)"
    if label in rows:
        lead = rows[label]["mean"]
        text = (
            f"**Verdict:** `{DEFAULT_NAME}` ranks outputs "
            + ("more like people than" if lead["share_a_not_better"] < 0.05 else "not measurably better than")
            + f" BERTScore-MiniLM ({signed(lead['difference'])} {interval(lead['ci95'])}, not better in "
            f"{lead['share_a_not_better']:.1%} of resamples)"
        )
        if own:
            boot = own["mean"]
            text += (
                "; against BERTScore on its own encoder, MPNet, "
                + ("it leads" if boot["share_a_not_better"] < 0.05 else "a lead is not shown")
                + f" ({signed(boot['difference'])} {interval(boot['ci95'])}, not better in "
                f"{boot['share_a_not_better']:.1%})"
            )
        page.add(text + ".", "")
    forest_rows = [
        (name.replace("`", ""), doc["mean"]["difference"], doc["mean"]["ci95"]) for name, doc in rows.items()
    ]
    page.figure(
        "sescore-default-forest",
        "the default and the baselines minus BERTScore-MiniLM with 95% intervals",
        lambda: forest(
            forest_rows, "Dev mix, report half: minus BERTScore-MiniLM (95% CI)", "mean tau-like difference"
        ),
    )


def _german_section(page: Page, files: ResultFiles) -> None:
    """The German checkpoint on TED en-de: the candidates on the tuning half, the chosen one on the report half,
    a verdict, and how its training data was made."""
    from sescore.shipped import LANGUAGE_DEFAULTS

    docs = [(stem, files.load(stem)) for stem in GERMAN]
    docs = [(stem, doc) for stem, doc in docs if doc is not None]
    if not docs:
        return
    name = LANGUAGE_DEFAULTS["de"]
    page.add(
        f"## German (`{name}`)",
        "",
        f"German references are scored with `{name}` (the v2 recipe over the multilingual `me5-small` encoder, "
        "trained on German synthetic errors; recipe `configs/sescore/de_me5_*.yaml`), against BERTScore with "
        "the same encoder, the toolkit's default for German, on TED en-de MQM (WMT21, 13 systems). Candidates were "
        "compared on the tuning half and the chosen one was scored once on the report half, by "
        "[a rule written down before the runs](../guides/experiments.md).",
        "",
    )
    for stem, doc in docs:
        rows = [{**row, "candidate": GERMAN_CANDIDATES.get(row["candidate"], row["candidate"])} for row in doc["rows"]]
        page.add(f"**{HALVES[doc['half']].capitalize()}**", "", table(rows, GERMAN_COLUMNS), "")
    report = dict(docs).get("sescore_de_report")
    if report:
        row = report["rows"][0]
        ted = report["runs"][row["candidate"]]["sets"][0]
        lead = ted["share_a_not_better"] < REPORT_NOT_BETTER
        page.add(
            f"**Verdict:** on German, `{name}` "
            + ("ranks outputs more like people than" if lead else "is not shown better than")
            + f" BERTScore-me5-small ({signed(ted['difference'])} {interval(ted['ci95'])}, not better in "
            f"{ted['share_a_not_better']:.1%} of resamples; the bar is under 5%).",
            "",
        )
    if files.load(GERMAN_SYNTHESIS) is not None:
        body: Lines = []
        _synthesis(page, files, GERMAN_SYNTHESIS, "The German checkpoint's training data", body)
        page.add(collapsible("The German checkpoint's training data", body))


def _published_sets(page: Page, files: ResultFiles) -> None:
    """The correlation runs of reproduce_sescore.sh: the default's row, the baselines, the earlier checkpoints
    collapsed."""
    from sescore.shipped import DEFAULT_NAME

    sets = sets_table(files, earlier=False)
    if not sets:
        return
    page.require_row(_default_label(), "metric (tau-like / system Pearson)")
    page.add(
        "## Correlation per data set",
        "",
        "tau-like (WMT20, item-grouped) / system-level Pearson, from `bash docs/reproduce_sescore.sh`. The first "
        f"column leaves out the TED items v1's checkpoint was chosen on. These runs were made before `{DEFAULT_NAME}` "
        "became the default and have not been repeated with it, so its row reads *not measured*: its numbers "
        "are the dev-mix table above.",
        "",
        sets,
        "",
    )
    earlier: Lines = []
    full = sets_table(files)
    if full:
        earlier += ["**Correlation per data set**", "", *full, ""]
    heldout = heldout_table(files)
    if heldout:
        page.require_row(_default_label(), "metric (TED zh-en, items 201-529)")
        earlier += ["**TED zh-en, held-out items**", "", *heldout, ""]
    versus = versus_table(files)
    if versus:
        page.require_row(f"`{DEFAULT_NAME}` (the default) minus", "SEScore minus (TED zh-en, items 201-529)")
        earlier += ["**Against the baselines, paired**", "", *versus, ""]
    if earlier:
        page.add(collapsible("Earlier checkpoints on these sets: minilm-v2, v1 and v1 without each part", earlier))


def _synthesis(page: Page, files: ResultFiles, stem: str, title: str, body: Lines) -> None:
    """One synthesis run's tables and histogram, appended to ``body``."""
    summary = files.load(stem)
    body += [
        f"`nlgmetrics-train synthesize --config {summary['config_name']}` (offline models), summarised from its "
        f"`summary.json`.",
        "",
        *synthesis_tables(summary),
        "",
    ]
    counts = summary.get("score_histogram")
    if counts:
        body += [
            page.marker(
                "sescore-synthesis-histogram" if stem == SYNTHESIS else f"sescore-{stem.replace('_', '-')}-histogram",
                f"histogram of the synthetic scores ({title.lower()})",
                lambda counts=counts: histogram(counts, "Synthetic scores (sum of edit severities)", "score"),
            ),
            "",
        ]


def render(files: ResultFiles) -> Page:
    """The SEScore page."""
    from sescore.shipped import DEFAULT_NAME

    page = Page("results/sescore.md")
    page.add(
        "# SEScore",
        "",
        "SEScore is a regressor trained on synthetic errors whose severity an NLI model grades. This page has the "
        f"default checkpoint, `{DEFAULT_NAME}`, against the baselines; the published test sets; how the training "
        "recipe was chosen; and how its training data was made.",
        "",
    )
    _default_section(page, files)
    _german_section(page, files)
    _published_sets(page, files)
    ablations = [s for s in files.stems("sescore_*") if "details" in (files.load(s) or {})]
    order = list(EXPERIMENTS)
    ablations.sort(key=lambda s: order.index(s) if s in order else len(order))
    if ablations:
        page.add(
            "## How the recipe was chosen",
            "",
            "Each experiment trained variants of the recipe and scored each on the dev mix against BERTScore with "
            "the variant's own encoder. Recipes were chosen on the tuning half and reported once on the report "
            "half, by [a rule written down before the runs](../guides/experiments.md). The raw-data appendix "
            "below has every variant's numbers.",
            "{: #the-recipes-ablations }",  # the section's earlier name: links to it keep working
            "",
            experiments_table(files, ablations),
            "",
        )
        figures: Lines = []
        for stem in ablations:
            figures += _experiment_figure(page, stem, files.load(stem))
        if figures:
            page.add(collapsible("Each experiment's variants against BERTScore, as figures", figures), "")
    if files.load(SYNTHESIS_DEFAULT) is not None:
        page.add("## How the default's training data was made", "")
        body: Lines = []
        _synthesis(page, files, SYNTHESIS_DEFAULT, "the default's data", body)
        page.add(body)
    earlier = [(stem, title) for stem, title in ((SYNTHESIS, "Training data of v1"), *SYNTHESIS_LEVERS)]
    earlier = [(stem, title) for stem, title in earlier if files.load(stem) is not None]
    if earlier:
        if files.load(SYNTHESIS_DEFAULT) is None:
            page.add("## How the training data was made", "")
        for stem, title in earlier:
            body = []
            _synthesis(page, files, stem, title, body)
            page.add(collapsible(title, body))
    labellers = files.load(LABELLERS)
    if labellers is not None:
        page.add(
            "## Severity labellers",
            "",
            "The NLI models that grade synthetic edits minor or major, on seeded pairs of the shared NLI test sets "
            "and on the edits both synthesis runs applied to the same text (`bench/labeller_agreement.py`, removed "
            "after its run; in git history at commit `6f5fd22`).",
            "",
            *table(labellers["rows"], labellers.get("columns")),
            "",
            *bullets(labellers.get("notes")),
            "",
            machine(labellers),
            "",
        )
    page.appendix()
    for stem in ablations:
        _ablation(page, files, stem)
    notes = [
        f"`{files.display(stem)}`: {files.load(stem)['note']}."
        for stem in (SYNTHESIS, SYNTHESIS_DEFAULT, *(s for s, _ in SYNTHESIS_LEVERS))
        if (files.load(stem) or {}).get("note")
    ]
    if notes:
        page.add("**The synthesis runs' notes**", "", bullets(notes), "")
    others = [s for s in ("sescore_darr_select", "sescore_v2_full_select") if files.path(s).is_file()]
    if others:
        page.add("**Other dev-mix checks**", "")
        for stem in others:
            doc = files.load(stem)
            boot = doc["mean"]
            page.add(
                f"- `{stem}`: {doc['label_a']} minus {doc['label_b']} on the {doc['half']} half: "
                f"{signed(boot['difference'])} {interval(boot['ci95'])}, not better in "
                f"{boot['share_a_not_better']:.1%} of resamples (`{doc['signature']}`)."
            )
        page.add("")
    return page
