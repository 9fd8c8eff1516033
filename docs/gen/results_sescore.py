"""SEScore: the correlation runs of ``docs/reproduce_sescore.sh``, the recipe ablations of ``bench/ablate_sescore.py``
and the offline synthesis run its training data came from."""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist
from typing import Any, Mapping

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
SHIPPED = {"sescore": "`minilm-v2`", "sescore_v1": "v1"}  # the runs reproduce_sescore.sh pairs with baselines
HELDOUT_KEYS = ["tau_like", "kendall_b", "pearson", "system_pearson"]
SYNTHESIS = "synthesis_offline_en_summary"
SYNTHESIS_DEFAULT = "synthesis_mpnet_v2_summary"  # steps 1-2 of the default's recipe, rebuilt from a clean checkout
SYNTHESIS_LEVERS = [  # the data of screened recipe levers (docs/guides/experiments.md), beside the default's
    ("synthesis_v2_neighbours_summary", "The synthesis run of the retrieval-edit lever (SEScore2-style neighbours)"),
    ("synthesis_v2_nli_mpnet_summary", "The synthesis run of the severity lever (labels from nli-mpnet)"),
    ("synthesis_v2_news_summary", "The synthesis run of the domain lever (news sentences only)"),
]
LABELLERS = "severity_labellers"  # bench/labeller_agreement.py
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


def sets_table(files: ResultFiles) -> Lines:
    """tau-like / system Pearson of every run per data set (the TED dev slice, items 1-200, chose v1's
    checkpoint)."""
    lines = ["| metric | " + " | ".join(title for _, title in SETS) + " |", "|---|" + "---|" * len(SETS)]
    for metric, name in METRICS:
        cells = []
        for prefix, _ in SETS:
            doc = files.load(f"{EVALUATE}/{prefix}_{metric}")
            cells.append("-" if doc is None else f"{fmt3(doc['tau_like'])} / {fmt3(doc['system_pearson'])}")
        if any(c != "-" for c in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines if len(lines) > 2 else []


def heldout_table(files: ResultFiles) -> Lines:
    """Every statistic on the TED zh-en items no checkpoint was chosen on (201-529)."""
    lines = [
        "| metric (TED zh-en, items 201-529) | " + " | ".join(HELDOUT_KEYS) + " |",
        "|---|" + "---|" * len(HELDOUT_KEYS),
    ]
    for metric, name in METRICS:
        doc = files.load(f"{EVALUATE}/ted_zhen_heldout_{metric}")
        if doc is not None:
            lines.append(f"| {name} | " + " | ".join(fmt3(doc[k]) for k in HELDOUT_KEYS) + " |")
    return lines if len(lines) > 2 else []


def versus_table(files: ResultFiles) -> Lines:
    """Paired item bootstrap of the tau-like difference on TED items 201-529: each shipped SEScore minus each
    baseline."""
    lines = [
        "| SEScore minus (TED zh-en, items 201-529) | tau-like difference | 95% interval | share of resamples "
        "not better |",
        "|---|---|---|---|",
    ]
    for sescore, which in SHIPPED.items():
        for metric, name in METRICS:
            doc = files.load(f"{EVALUATE}/ted_zhen_heldout_{sescore}_vs_{metric}")
            if doc is not None:
                v = doc["versus"]
                lines.append(
                    f"| {which} minus {name} | {fmt3(v['difference'])} | {interval(v['ci95'])} | "
                    f"{v['share_a_not_better']:.3f} ({v['resamples']} resamples of {v['items']} items) |"
                )
    return lines if len(lines) > 2 else []


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


def _screen_sets(files: ResultFiles, doc: Mapping[str, Any]) -> dict[str, float]:
    """Per dev-mix set, the screened pairs' mean of lever minus base tau-like: where a lever helps (MT, or only
    the other sets). Files written before the screen recorded it are computed from their rows; base rows a run
    borrowed (``--screen-base``) are read from the file it names."""
    from bench.ablate_sescore import mean_set_deltas, set_deltas

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


def _ablation(page: Page, files: ResultFiles, stem: str) -> None:
    doc = files.load(stem)
    arms = [(arm, result) for arm, result in doc.get("details", {}).items() if "mean" in result]
    page.add(f"### `{stem}` ({doc.get('half', '?')} half)", "")
    if len(arms) > 1:
        rows = [(arm, result["mean"]["difference"], result["mean"].get("ci95")) for arm, result in arms]
        page.figure(
            f"sescore-{stem.replace('_', '-')}",
            f"each arm of {stem} minus BERTScore with 95% intervals",
            lambda rows=rows, doc=doc: forest(
                rows, f"{stem}: arm minus BERTScore, dev mix {doc['half']} half", "mean tau-like difference"
            ),
        )
    verdict = doc.get("screen")
    if verdict:
        deltas = ", ".join(f"`{r['lever']}` minus `{r['base']}` {signed(r['delta'], 4)}" for r in verdict["pairs"])
        rule = verdict["rule"].replace("docs/guides/experiments.md", "[the rule](../guides/experiments.md)")
        page.add(
            f"Screening ({rule}): {deltas}; mean {signed(verdict['mean_delta'], 4)}: the lever "
            + ("**passes**." if verdict["passes"] else "**does not pass**."),
            "",
        )
        per_set = _screen_sets(files, doc)
        if per_set:
            page.add(
                "Per set, mean over the seeds (lever minus base tau-like): "
                + ", ".join(f"{name} {signed(delta, 4)}" for name, delta in per_set.items())
                + ".",
                "",
            )
    confirmed = doc.get("confirm")
    if confirmed:  # step 2 of the rule: the lever on MPNet against the committed mpnet-v2 row
        rule = confirmed["rule"].replace("docs/guides/experiments.md", "[the rule](../guides/experiments.md)")
        bar = confirmed["bar"]
        page.add(
            f"Confirmation ({rule}): `{confirmed['lever']}` {signed(confirmed['difference'], 4)}, not better in "
            f"{confirmed['not_better']:.1%} of resamples, against `{bar['row']}` {signed(bar['difference'], 4)} "
            f"(`{bar['file']}`): " + ("**becomes the candidate**." if confirmed["passes"] else "**does not pass**."),
            "",
        )
    for lever, mean in _reported_candidates(files, doc):  # step 3: a candidate scored once on the report half
        verdict = (
            "**replaces the default**" if mean["share_a_not_better"] < REPORT_NOT_BETTER else "**does not replace it**"
        )
        page.add(
            f"Report ([the rule](../guides/experiments.md), step 3: the candidate replaces the default when not better "
            f"in under {REPORT_NOT_BETTER:.0%} of resamples): `{lever}` {signed(mean['difference'], 4)} "
            f"{interval(mean.get('ci95'), 4)}, not better in {mean['share_a_not_better']:.1%} of resamples: {verdict}."
            + _resolvable(mean.get("ci95"), mean["difference"]),
            "",
        )
    page.add(
        collapsible(
            f"{stem}: every arm",
            generic({k: v for k, v in doc.items() if k not in ("details", "screen", "confirm")}),
        )
    )


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


def render(files: ResultFiles) -> Page:
    """The SEScore page."""
    page = Page("results/sescore.md")
    page.add(
        "# SEScore",
        "",
        "SEScore is a regressor trained on synthetic errors whose severity an NLI model grades. The default "
        "checkpoint's report-half numbers against BERTScore-MiniLM, and those of the recipe's ablations, are "
        "on the [quality page](quality.md#per-set); this page has the correlation runs per data set, every "
        "ablation of the recipe, and the synthesis run behind the training data.",
        "",
    )
    sets = sets_table(files)
    if sets:
        page.add(
            "## Correlation per data set",
            "",
            "tau-like (WMT20, item-grouped) / system-level Pearson, one run of `bash docs/reproduce_sescore.sh`. "
            "The first column leaves out the TED items v1's checkpoint was chosen on.",
            "",
            sets,
            "",
        )
    heldout = heldout_table(files)
    if heldout:
        page.add("### TED zh-en, held-out items", "", heldout, "")
    versus = versus_table(files)
    if versus:
        page.add("### Against the baselines, paired", "", versus, "")
    page.add(
        "## The recipe's ablations",
        "",
        "Each file is one `bench/ablate_sescore.py` run: arms of the training recipe, each scored on the dev "
        "mix against BERTScore with the arm's own encoder. *select* files chose the recipe; *report* files "
        "report it. The figure is each arm's mean difference with its 95% interval; the table holds every "
        "per-set number.",
        "",
    )
    for stem in [s for s in files.stems("sescore_*") if "details" in (files.load(s) or {})]:
        _ablation(page, files, stem)
    for stem, title in (
        (SYNTHESIS, "The synthesis run behind v1's training data"),
        (SYNTHESIS_DEFAULT, "The synthesis run behind the default's training data, rebuilt"),
        *SYNTHESIS_LEVERS,
    ):
        summary = files.load(stem)
        if summary is None:
            continue
        page.add(
            f"## {title}",
            "",
            f"`nlgmetrics-train synthesize --config {summary['config_name']}` (offline models), summarised from "
            f"its `summary.json` (`{files.display(stem)}`)." + (f" {summary['note']}." if summary.get("note") else ""),
            "",
            synthesis_tables(summary),
            "",
        )
        counts = summary.get("score_histogram")
        if counts:
            page.figure(
                "sescore-synthesis-histogram" if stem == SYNTHESIS else f"sescore-{stem.replace('_', '-')}-histogram",
                "histogram of the synthetic scores" + ("" if stem == SYNTHESIS else f" ({stem})"),
                lambda counts=counts: histogram(counts, "Synthetic scores (sum of edit severities)", "score"),
            )
    labellers = files.load(LABELLERS)
    if labellers is not None:
        page.add(
            "## Severity labellers",
            "",
            "The NLI models that grade synthetic edits minor or major, on seeded pairs of the shared NLI test sets "
            "and on the edits both synthesis runs applied to the same text (`python bench/labeller_agreement.py`, "
            f"`{files.display(LABELLERS)}`).",
            "",
            *table(labellers["rows"], labellers.get("columns")),
            "",
            *bullets(labellers.get("notes")),
            "",
            machine(labellers),
            "",
        )
    others = [s for s in ("sescore_darr_select", "sescore_v2_full_select") if files.path(s).is_file()]
    if others:
        page.add("## Other dev-mix checks", "")
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
