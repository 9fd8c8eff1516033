"""MENLI: adversarial accuracy and MQM correlation (``docs/reproduce_menli.sh``'s JSON lines) and the ablations
that chose its pooling, its combiner partner and the partner's weight (``bench/ablate_menli_*.py``).

The ablations' tables are rendered by the benchmarks' own ``markdown`` functions from their JSON, so the site and
the ``.md`` a benchmark writes beside its JSON read the same; this module only orders them and adds the figures.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from results_markdown import Lines, Page, collapsible, generic, table
from results_plots import lines, scatter
from results_store import ResultFiles

EVALUATE = "evaluate"  # docs/reproduce_*.sh's folder under the results root
ERROR_TYPES = [
    "add",
    "drop",
    "neg",
    "num",
    "pron",
    "name",
    "word_NN",
    "word_VB",
    "word_JJ",
    "typo",
    "jumble",
    "subject_verb_dis",
]
# result-file stems of reproduce_menli.sh's runs and their row labels; the unsuffixed stems are nli-minilm's (the
# script passes it; the default is nli-mpnet, whose rows are WITH_MPNET=1's)
MENLI_ROWS = {
    "menli": "menli, nli-minilm",
    "menli+bertscore": "menli+bertscore, nli-minilm",
    "menli+chrf-dev": "menli+chrf@0.3 (dev-mix choice, stored ranges), nli-minilm",
    "menli-mpnet": "menli, nli-mpnet",
    "menli-mpnet+bertscore": "menli+bertscore, nli-mpnet",
    "menli-mpnet+bertscore-robust": "menli+bertscore@0.4 (robust, stored ranges), nli-mpnet",
    "menli-me5": "menli, nli-me5",
    "menli-me5+bertscore": "menli+bertscore, nli-me5",
}
BASELINES = ["bertscore", "cosine", "chrf", "bleu"]


def fmt3(value: float | None) -> str:
    """Three decimals, ``n/a`` for a statistic the run could not compute."""
    return "n/a" if value is None else f"{value:.3f}"


def demoted(text: str, levels: int = 2) -> Lines:
    """A benchmark's Markdown document with its headings pushed down, to sit under this page's headings."""
    return [
        re.sub(r"^(#{1,6}) ", lambda m: "#" * min(6, len(m.group(1)) + levels) + " ", line)
        for line in text.splitlines()
    ]


def adversarial_table(files: ResultFiles, stems: Sequence[str]) -> Lines:
    """Preference accuracy per error type on adv_menli_wmt20_de, one row per run that has a file."""
    rows = ["| metric | mean | " + " | ".join(ERROR_TYPES) + " |", "|---|---|" + "---|" * len(ERROR_TYPES)]
    for stem in stems:
        doc = files.load(f"{EVALUATE}/adv_{stem}")
        if doc:
            rows.append(
                f"| {MENLI_ROWS.get(stem, stem)} | {fmt3(doc['mean'])} | "
                + " | ".join(fmt3(doc["per_type"].get(t)) for t in ERROR_TYPES)
                + " |"
            )
    return rows if len(rows) > 2 else []


def correlation_table(files: ResultFiles, prefix: str, stems: Sequence[str]) -> Lines:
    """Correlation statistics of each run on one data set (``evaluate.py correlate`` lines)."""
    rows = [
        "| metric | tau-like | Kendall tau-b | Pearson | system Pearson | tau-like w/o human systems | n |",
        "|---|---|---|---|---|---|---|",
    ]
    for stem in stems:
        doc = files.load(f"{EVALUATE}/{prefix}_{stem}")
        if doc:
            sub = doc.get("without_human_systems", {})
            rows.append(
                f"| {MENLI_ROWS.get(stem, stem)} | {fmt3(doc['tau_like'])} | {fmt3(doc['kendall_b'])} | "
                f"{fmt3(doc['pearson'])} | {fmt3(doc['system_pearson'])} | {fmt3(sub.get('tau_like'))} | "
                f"{doc['n']} |"
            )
    return rows if len(rows) > 2 else []


def _pooling(page: Page, files: ResultFiles) -> None:
    from bench.ablate_menli_pooling import markdown

    for stem in files.stems("menli_pooling_*"):
        doc = files.load(stem)
        page.add(f"### `{stem}`", "")
        points = [
            (
                r["strategy"],
                sum(r["report_tau"].values()) / len(r["report_tau"]),
                doc["adversarial"]["accuracy"][r["strategy"]],
            )
            for r in doc["report"]
        ]
        marked = [doc["chosen"], doc["paper"]]
        page.figure(
            f"menli-pooling-{stem.split('_')[-1]}",
            "report-half tau-like against adversarial accuracy",
            lambda points=points, marked=marked, doc=doc: scatter(
                points,
                marked,
                f"MENLI pooling ({doc['nli_model']}): chosen {doc['chosen']}, paper {doc['paper']}",
                "report-half mean tau-like",
                "adversarial preference accuracy",
            ),
        )
        page.add(demoted(markdown(doc), 3), "")


def _weight(page: Page, files: ResultFiles) -> None:
    from bench.ablate_menli_bertscore_weight import markdown

    for stem in files.stems("menli_bertscore_weight_*"):
        doc = files.load(stem)
        weights = [float(w) for w in doc["select_grid"]]
        series = {"select-half mean tau-like": (weights, list(doc["select_grid"].values()))}
        grid = doc.get("adversarial", {}).get("grid")
        if grid:
            series["adversarial accuracy"] = ([float(w) for w in grid], list(grid.values()))
        marks = {
            f"chosen {doc['chosen_weight']}": doc["chosen_weight"],
            f"robust {doc['robust_weight']}": doc["robust_weight"],
        }
        page.add(f"### `{stem}`", "")
        page.figure(
            f"menli-weight-{stem.split('_')[-1]}",
            "select-half tau-like and adversarial accuracy by weight",
            lambda series=series, marks=marks, doc=doc: lines(
                series, f"MENLI ({doc['nli_model']}) + BERTScore by MENLI weight w", "MENLI weight w", "value", marks
            ),
        )
        page.add(demoted(markdown(doc), 3), "")


def _veto_label(point: Mapping[str, Any]) -> str:
    return (
        f"{point['weight']:.1f} menli + {point['partner']}, veto below {point['threshold']} "
        f"(penalty {point['penalty']})"
    )


def _rules(page: Page, files: ResultFiles) -> None:
    """The fluency-partner and veto ablations: a grid chosen under an adversarial-accuracy floor."""
    from bench.ablate_menli_fluency import markdown, rule_tables

    for stem in files.stems("menli_fluency*") + files.stems("menli_veto*"):
        doc = files.load(stem)
        page.add(f"### `{stem}`", "")
        points = [(p.get("partner", ""), p["select_tau"], p["adversarial"]) for p in doc.get("points", [])]
        if points:
            page.figure(
                f"{stem.replace('_', '-')}",
                "every grid point: select tau-like against adversarial accuracy",
                lambda points=points, doc=doc: scatter(
                    [("", x, y) for _, x, y in points],
                    [],
                    f"{doc['nli_model']}: every grid point "
                    f"(dashed: the goal, adversarial >= {doc['adversarial_goal']})",
                    "select-half mean tau-like",
                    "adversarial preference accuracy",
                    doc["adversarial_goal"],
                ),
            )
        if stem.startswith("menli_fluency"):
            page.add(demoted(markdown(doc, "FIGURE").replace("`FIGURE`", "the figure above"), 3), "")
        else:
            shown = [
                ("chosen by the rule", doc["chosen"]),
                ("best on the select half", doc["best_overall"]),
                ("most robust", doc.get("most_robust")),
            ]
            page.add(
                f"Rule: the best select-half mean tau-like among grid points with adversarial accuracy >= "
                f"{doc['adversarial_goal']}. **Verdict: {doc['verdict']}.**",
                "",
                "| point | setting | select mean tau | adversarial acc. |",
                "|---|---|---|---|",
                [
                    line.replace("`FIGURE`", "the figure above")
                    for line in rule_tables(doc, "FIGURE", shown, _veto_label, "setting")
                ],
                "",
            )


def render(files: ResultFiles) -> Page:
    """The MENLI page."""
    page = Page("results/menli.md")
    page.add(
        "# MENLI",
        "",
        "MENLI scores a hypothesis by NLI probabilities between it and the reference. Its weak side is "
        "correlation with people (entailment says little about fluency), its strong side adversarial "
        "robustness; the ablations below choose its pooling, the metric it is combined with and that "
        "metric's weight on the dev mix's select half, and report them on the report half.",
        "",
    )
    stems = [*MENLI_ROWS, *BASELINES]
    adversarial = adversarial_table(files, stems)
    if adversarial:
        page.add(
            "## Adversarial preference accuracy",
            "",
            "adv_menli_wmt20_de, reference-based: the share of (good, bad) hypothesis pairs where the metric "
            "scores the good one higher (ties fail). From `bash docs/reproduce_menli.sh` (`WITH_MPNET=1`, "
            "`WITH_ME5=1` for the other NLI models), BERTScore on MiniLM.",
            "",
            adversarial,
            "",
        )
    ted = correlation_table(files, "ted_zhen", [s for s in stems if s != "cosine"])
    if ted:
        page.add(
            "## Correlation with MQM, WMT21 TED zh-en",
            "",
            "Segment-level tau-like is WMT20's item-grouped statistic; the same runs as above.",
            "",
            ted,
            "",
        )
    versus = files.stems(f"{EVALUATE}/ted_zhen_menli*_vs_*")
    if versus:
        rows = [
            {
                "run": MENLI_ROWS.get(s.split("/")[-1].removeprefix("ted_zhen_").split("_vs_")[0], s),
                **files.load(s)["versus"],
            }
            for s in versus
        ]
        page.add(
            "Paired item bootstrap of the tau-like difference to BERTScore-MiniLM on the same rows:",
            "",
            table(
                rows,
                ["run", "tau_like_a", "tau_like_b", "difference", "ci95", "share_a_not_better", "resamples", "items"],
                {"tau_like_a": "tau-like", "tau_like_b": "BERTScore's", "share_a_not_better": "not better"},
            ),
            "",
        )
    page.add("## Which pooling", "", "The 15 formula x direction strategies, chosen on the select half.", "")
    _pooling(page, files)
    page.add(
        "## Which partner",
        "",
        "MENLI combined with one other metric (w x MENLI + (1 - w) x metric), each pair's ranges fixed on the "
        "select half.",
        "",
    )
    from bench.ablate_menli_combiner import markdown as combiner

    for stem in files.stems("menli_combiner*"):
        page.add(f"### `{stem}`", "", demoted(combiner(files.load(stem)), 3), "")
    page.add("## BERTScore's weight", "")
    _weight(page, files)
    page.add(
        "## A fluency partner, and NLI as a veto",
        "",
        "Grids of three-way mixes (MENLI, a similarity metric, lm-ratio) and of MENLI as a hinge penalty, each "
        "chosen under a floor on adversarial accuracy.",
        "",
    )
    _rules(page, files)
    ted_protocol = files.load("ted_protocol_menli_fluency_nli-mpnet")
    if ted_protocol is not None:
        page.add("### The fluency mix on all TED zh-en items", "", generic(ted_protocol))
    page.add(
        "## The NLI models",
        "",
        "Adversarial accuracy of each packaged NLI model (`bench/compare_nli.py`); their speed is on the "
        "[speed page](speed.md#nli-models).",
        "",
    )
    for stem in files.stems("nli_adversarial*"):
        page.add(f"### `{stem}`", "", generic(files.load(stem)))
    ranges = files.load("menli_ranges")
    if ranges is not None:
        page.add(
            "## Normalisation ranges",
            "",
            "What fitting the packaged mix ranges cost (`bench/fit_menli_ranges.py`).",
            "",
            collapsible("menli_ranges", generic(ranges)),
        )
    return page
