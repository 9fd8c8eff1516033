"""MENLI: the default against the baselines (adversarial accuracy and MQM correlation, ``docs/reproduce_menli.sh``'s
JSON lines) and the ablations that chose its pooling, its combiner partner and the partner's weight
(``bench/ablate_menli_*.py``; the pooling, combiner and fluency ablations were removed after their runs and are in
git history at commit 6764470).

The page opens with the default beside the baselines and a plain table of what each ablation chose; the ablations'
own tables are in the raw-data appendix: the weight ablation's rendered by its ``markdown`` function from its JSON,
the removed ablations' as the ``.md`` they wrote beside their JSON, so the site and those files read the same.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Sequence

from results_markdown import Lines, Page, collapsible, generic, local_path, plain, table
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
BASELINE_LABELS = {"bertscore": "BERTScore-MiniLM", "cosine": "MiniLM cosine", "chrf": "chrF", "bleu": "BLEU"}
# reproduce_menli.sh's stems per NLI model (the default's runs are the ones shown first)
NLI_STEMS = {"packaged:nli-minilm": "menli", "packaged:nli-mpnet": "menli-mpnet", "packaged:nli-me5": "menli-me5"}
MIX = "menli+sescore+lm-ratio"  # the packaged mix
FLUENCY = "menli_fluency_nli-mpnet"  # the ablation the packaged mix was chosen by
TED_PROTOCOL = "ted_protocol_menli_fluency_nli-mpnet"  # the packaged mix on all TED zh-en items
NLI_FILES = {
    "nli_adversarial": "Adversarial accuracy of each NLI model",
    "nli_adversarial_by_type": "Adversarial accuracy of each NLI model, by error type",
    "nli_adversarial_me5_distill": "Adversarial accuracy of the multilingual models (nli-me5 and its distillation)",
    "nli_adversarial_me5_distill_by_type": "The multilingual models, by error type",
}


def fmt3(value: float | None) -> str:
    """Three decimals, ``n/a`` for a statistic the run could not compute."""
    return "n/a" if value is None else f"{value:.3f}"


def unheaded(text: str) -> Lines:
    """A benchmark's Markdown document with its headings as bold lines, to sit inside a collapsed section (a
    heading there would still reach the sidebar)."""
    return [re.sub(r"^#{1,6} (.*)$", r"**\1**", line) for line in local_path(text).splitlines()]


def demoted(text: str, levels: int = 2) -> Lines:
    """A benchmark's Markdown document with its headings pushed down, to sit under this page's headings."""
    return [
        re.sub(r"^(#{1,6}) ", lambda m: "#" * min(6, len(m.group(1)) + levels) + " ", line)
        for line in text.splitlines()
    ]


def adversarial_table(files: ResultFiles, stems: Sequence[str]) -> Lines:
    """Preference accuracy per error type on adv_menli_wmt20_de, one row per run that has a file."""
    rows = []
    for stem in stems:
        doc = files.load(f"{EVALUATE}/adv_{stem}")
        if doc:
            per_type = {t: fmt3(doc["per_type"].get(t)) for t in ERROR_TYPES}
            rows.append({"metric": MENLI_ROWS.get(stem, stem), "mean": fmt3(doc["mean"]), **per_type})
    return table(rows, ["metric", "mean", *ERROR_TYPES], headers={t: t for t in ERROR_TYPES})


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


def _default_stem() -> tuple[str, str]:
    """The default NLI model and its reproduce_menli.sh stem."""
    from nlgmetrics.registry import metric_spec

    model = metric_spec("menli").make_options().nli_model
    return model, NLI_STEMS.get(model, "menli")


def default_table(files: ResultFiles) -> tuple[Lines, dict[str, tuple[float, float]]]:
    """The default MENLI, its robust mix, the packaged mix and the baselines: adversarial accuracy and TED zh-en
    correlation, one row each; and (adversarial, tau-like) per row for the figure."""
    model, stem = _default_stem()
    name = model.removeprefix("packaged:")
    runs = [
        (f"MENLI `{name}` (the default)", stem),
        (f"MENLI `{name}` + BERTScore @0.4 (robust mix)", f"{stem}+bertscore-robust"),
        *((BASELINE_LABELS[b], b) for b in BASELINES),
    ]
    lines = [
        "| metric (default and baselines) | adversarial accuracy | TED zh-en tau-like | TED zh-en system Pearson |",
        "|---|---|---|---|",
    ]
    points: dict[str, tuple[float, float]] = {}
    for label, key in runs:
        adv = files.load(f"{EVALUATE}/adv_{key}")
        ted = files.load(f"{EVALUATE}/ted_zhen_{key}")
        if adv is None and ted is None:
            continue
        lines.append(
            f"| {label} | {fmt3(adv['mean']) if adv else '-'} | {fmt3(ted['tau_like']) if ted else '-'} | "
            f"{fmt3(ted['system_pearson']) if ted else '-'} |"
        )
        if adv and ted:
            points[label] = (ted["tau_like"], adv["mean"])
    fluency, protocol = files.load(FLUENCY), files.load(TED_PROTOCOL)
    if fluency and protocol and fluency.get("chosen"):
        adv = fluency["chosen"]["adversarial"]
        tau = protocol["tau"].get(protocol["combination"])
        if tau is not None:
            label = f"`{MIX}` (the packaged mix: {protocol['combination']})"
            lines.append(f"| {label} | {fmt3(adv)} | {fmt3(tau)} | - |")
            points[f"{MIX} (packaged mix)"] = (tau, adv)
    return (lines if len(lines) > 2 else []), points


def _verdict(files: ResultFiles) -> str:
    model, stem = _default_stem()
    adv, ted = files.load(f"{EVALUATE}/adv_{stem}"), files.load(f"{EVALUATE}/ted_zhen_{stem}")
    base_adv, base_ted = files.load(f"{EVALUATE}/adv_bertscore"), files.load(f"{EVALUATE}/ted_zhen_bertscore")
    if not (adv and ted and base_adv and base_ted):
        return ""
    order = "below" if ted["tau_like"] < base_ted["tau_like"] else "above"
    return (
        f"**Verdict:** MENLI (`{model.removeprefix('packaged:')}`) prefers the correct hypothesis in "
        f"{adv['mean']:.1%} of the adversarial pairs, BERTScore-MiniLM in {base_adv['mean']:.1%}, but it orders TED "
        f"zh-en translations {order} BERTScore-MiniLM (tau-like {ted['tau_like']:.3f} against "
        f"{base_ted['tau_like']:.3f}): use it with a similarity partner, as the mixes do."
    )


def _choices(page: Page, files: ResultFiles) -> tuple[Lines, Lines]:
    """What each ablation chose, one plain row each, and the figures (markers for a collapsed section)."""
    from menli.pooling import task_strategy

    rows, figures = [], []
    for stem in files.stems("menli_pooling_*"):
        doc = files.load(stem)
        points = [
            (
                r["strategy"],
                sum(r["report_tau"].values()) / len(r["report_tau"]),
                doc["adversarial"]["accuracy"][r["strategy"]],
            )
            for r in doc["report"]
        ]
        marked = [doc["chosen"], doc["paper"]]
        rows.append(
            {
                "setting": "pooling (NLI formula and direction)",
                "NLI model": doc["nli_model"],
                "choice": f"`{doc['chosen']}` ranks best on the tuning half; the paper's is `{doc['paper']}`; "
                f"`--task mt` uses `{' '.join(task_strategy('mt'))}`, `--task summarization` "
                f"`{' '.join(task_strategy('summarization'))}`",
            }
        )
        figures += [
            f"**Pooling, {doc['nli_model']}**",
            "",
            page.marker(
                f"menli-pooling-{stem.split('_')[-1]}",
                "report-half tau-like against adversarial accuracy of each pooling",
                lambda points=points, marked=marked, doc=doc: scatter(
                    points,
                    marked,
                    f"MENLI pooling ({doc['nli_model']}): chosen {doc['chosen']}, paper {doc['paper']}",
                    "report-half mean tau-like",
                    "adversarial preference accuracy",
                ),
            ),
            "",
        ]
    for stem in files.stems("menli_combiner*"):
        doc = files.load(stem)
        chosen = doc.get("chosen") or {}
        partners = sorted({key.split("@")[0] for key in doc.get("select_grid", {})}) if doc.get("select_grid") else []
        rows.append(
            {
                "setting": "similarity partner and weight"
                + (f" (partners tried: {', '.join(partners)})" if 1 < len(partners) <= 6 else ""),
                "NLI model": doc["nli_model"],
                "choice": f"{chosen.get('partner', '-')} at MENLI weight {chosen.get('weight', '-')}",
            }
        )
    for stem in files.stems("menli_bertscore_weight_*"):
        doc = files.load(stem)
        rows.append(
            {
                "setting": "BERTScore's weight",
                "NLI model": doc["nli_model"],
                "choice": f"MENLI weight {doc['chosen_weight']} ranks best; {doc['robust_weight']} is the best with "
                "adversarial accuracy of 0.70 or more (the robust mix)",
            }
        )
        weights = [float(w) for w in doc["select_grid"]]
        series = {"tuning-half mean tau-like": (weights, list(doc["select_grid"].values()))}
        grid = doc.get("adversarial", {}).get("grid")
        if grid:
            series["adversarial accuracy"] = ([float(w) for w in grid], list(grid.values()))
        marks = {
            f"chosen {doc['chosen_weight']}": doc["chosen_weight"],
            f"robust {doc['robust_weight']}": doc["robust_weight"],
        }
        figures += [
            f"**BERTScore's weight, {doc['nli_model']}**",
            "",
            page.marker(
                f"menli-weight-{stem.split('_')[-1]}",
                "tuning-half tau-like and adversarial accuracy by weight",
                lambda series=series, marks=marks, doc=doc: lines(
                    series,
                    f"MENLI ({doc['nli_model']}) + BERTScore by MENLI weight w",
                    "MENLI weight w",
                    "value",
                    marks,
                ),
            ),
            "",
        ]
    for stem in files.stems("menli_fluency*") + files.stems("menli_veto*"):
        doc = files.load(stem)
        fluency = stem.startswith("menli_fluency")
        chosen = doc.get("chosen")
        if chosen and fluency:
            parts = ["menli", chosen["partner"], "lm-ratio"]
            choice = " + ".join(f"{w} {p}" for w, p in zip(chosen["weights"], parts))
        elif chosen:
            choice = plain(_veto_label(chosen))
        else:
            choice = "none"
        rows.append(
            {
                "setting": "a fluency partner (MENLI + similarity + lm-ratio)" if fluency else "MENLI as a veto",
                "NLI model": doc["nli_model"],
                "choice": f"{choice}: {plain(doc['verdict'])}",
            }
        )
        points = [(p.get("partner", ""), p["select_tau"], p["adversarial"]) for p in doc.get("points", [])]
        if points:
            what = "Fluency partner" if fluency else "Veto"
            figures += [
                f"**{what}, {doc['nli_model']}**",
                "",
                page.marker(
                    f"{stem.replace('_', '-')}",
                    "every grid point: tuning-half tau-like against adversarial accuracy",
                    lambda points=points, doc=doc: scatter(
                        [("", x, y) for _, x, y in points],
                        [],
                        f"{doc['nli_model']}: every grid point "
                        f"(dashed: the goal, adversarial >= {doc['adversarial_goal']})",
                        "tuning-half mean tau-like",
                        "adversarial preference accuracy",
                        doc["adversarial_goal"],
                    ),
                ),
                "",
            ]
    return table(rows), figures


def _veto_label(point: Mapping[str, Any]) -> str:
    return (
        f"{point['weight']:.1f} menli + {point['partner']}, veto below {point['threshold']} "
        f"(penalty {point['penalty']})"
    )


def _as_written(files: ResultFiles, stem: str) -> str | None:
    """The Markdown a removed ablation wrote beside its JSON (``<stem>.md``, the script's ``markdown`` of that JSON),
    or None when there is none; the JSON is read too, so the index counts it as shown."""
    path = files.root / f"{stem}.md"
    return path.read_text(encoding="utf-8") if files.load(stem) is not None and path.is_file() else None


def rule_tables(
    result: Mapping[str, Any],
    png: str,
    shown: Sequence[tuple[str, Mapping[str, Any] | None]],
    label: Callable[[Mapping[str, Any]], str],
    frontier_column: str,
) -> Lines:
    """The Markdown after a rule-based ablation's header (the veto ablation's, as the removed fluency ablation
    wrote it): the shown points and BERTScore alone (rows of a table whose header the caller wrote), the frontier,
    the report half when a point was carried, then the metrics, ranges and run notes."""
    lines = [
        f"| {name} | {label(point)} | {point['select_tau']:.4f} | {point['adversarial']:.3f} |"
        for name, point in shown
        if point is not None
    ]
    lines.append(f"| BERTScore alone | - | {result['bertscore_select_tau']:.4f} | - |")
    lines += [
        "",
        f"Frontier (no grid point is better on both; `{png}` plots every point):",
        "",
        f"| {frontier_column} | select mean tau | adversarial acc. |",
        "|---|---|---|",
    ]
    lines += [f"| {label(p)} | {p['select_tau']:.4f} | {p['adversarial']:.3f} |" for p in result["frontier"]]
    if result["report"]:
        boot = result["report"]["vs_bertscore"]
        lines += [
            "",
            "Report half: "
            + ", ".join(f"{s} {t:.4f}" for s, t in result["report"]["tau"].items())
            + f"; mean vs BERTScore {boot['difference']:+.4f} [{boot['ci95'][0]:+.4f}, {boot['ci95'][1]:+.4f}]"
            f", not better in {boot['share_a_not_better']:.1%} of resamples.",
        ]
        whole = result["report"].get("all_items_vs_bertscore")
        if whole:
            lines.append(
                f"All items of the all-items set (includes the select half): vs BERTScore "
                f"{whole['difference']:+.4f} [{whole['ci95'][0]:+.4f}, {whole['ci95'][1]:+.4f}], not better "
                f"in {whole['share_a_not_better']:.1%}."
            )
    lines.append("")
    lines += [
        "- Metrics: " + "; ".join(f"`{s}`" for s in result["signatures"].values()),
        "- Ranges (min-max, pooled select half, then fixed): "
        + ", ".join(f"{n} [{r['low']:.4g}, {r['high']:.4g}]" for n, r in result["ranges"].items()),
        "- Adversarial: mean preference accuracy over error types, reference-based, with the same ranges.",
        f"- {result['seconds']:.0f} s; machine {result['machine']}",
    ]
    return lines


def _raw_ablations(page: Page, files: ResultFiles) -> None:
    """The ablations' own tables, as their benchmarks write them, in the raw-data appendix."""
    figure = "the figure under 'How the settings were chosen'"
    for stem in files.stems("menli_pooling_*") + files.stems("menli_combiner*"):
        written = _as_written(files, stem)
        if written is not None:
            page.add(collapsible(stem, unheaded(written)))
    for stem in files.stems("menli_bertscore_weight_*"):
        written = _as_written(files, stem)
        if written is not None:
            page.add(collapsible(stem, unheaded(written)))
    for stem in files.stems("menli_fluency*"):
        written = _as_written(files, stem)
        if written is not None:
            page.add(collapsible(stem, unheaded(written.replace(f"`{stem}.png`", figure))))
    for stem in files.stems("menli_veto*"):
        doc = files.load(stem)
        shown = [
            ("chosen by the rule", doc["chosen"]),
            ("best on the select half", doc["best_overall"]),
            ("most robust", doc.get("most_robust")),
        ]
        body = [
            f"Rule: the best select-half mean tau-like among grid points with adversarial accuracy >= "
            f"{doc['adversarial_goal']}. **Verdict: {doc['verdict']}.**",
            "",
            "| point | setting | select mean tau | adversarial acc. |",
            "|---|---|---|---|",
            *(line.replace("`FIGURE`", figure) for line in rule_tables(doc, "FIGURE", shown, _veto_label, "setting")),
        ]
        page.add(collapsible(stem, body))
    protocol = files.load(TED_PROTOCOL)
    if protocol is not None:
        page.add(collapsible(f"{TED_PROTOCOL}: the fluency mix on all TED zh-en items", generic(protocol)))


def render(files: ResultFiles) -> Page:
    """The MENLI page."""
    model, stem = _default_stem()
    page = Page("results/menli.md")
    page.add(
        "# MENLI",
        "",
        "MENLI scores a hypothesis by NLI probabilities between it and the reference. Its strong side is "
        "adversarial robustness (it notices a changed number, name or negation), its weak side correlation with "
        "people (entailment says little about fluency), so it is best combined with a similarity metric.",
        "",
    )
    main, points = default_table(files)
    if main:
        page.require_row(f"MENLI `{model.removeprefix('packaged:')}` (the default)", "metric (default and baselines)")
        page.add(
            "## The default against the baselines",
            "",
            "*Adversarial accuracy*: on adv_menli_wmt20_de (reference-based), the share of (good, bad) hypothesis "
            "pairs where the metric scores the good one higher (ties fail). *TED zh-en*: segment-level tau-like "
            "(WMT20's item-grouped statistic) and system-level Pearson with MQM on all 7,406 rows of WMT21 TED "
            "zh-en. From `bash docs/reproduce_menli.sh` (`WITH_MPNET=1`, `WITH_ME5=1` for the other NLI models), "
            "BERTScore on MiniLM; the packaged mix's row is from the ablation that chose it and its run on the "
            "same TED rows.",
            "",
            main,
            "",
            _verdict(files),
            "",
        )
        if len(points) > 1:
            labels = list(points)
            page.figure(
                "menli-default-scatter",
                "TED zh-en tau-like against adversarial accuracy of the default, its mixes and the baselines",
                lambda: scatter(
                    [(label.replace("`", ""), x, y) for label, (x, y) in points.items()],
                    [labels[0].replace("`", "")],
                    "MENLI and the baselines: ranking (x) against robustness (y)",
                    "TED zh-en tau-like",
                    "adversarial preference accuracy",
                ),
            )
    stems = [*MENLI_ROWS, *BASELINES]
    adversarial = adversarial_table(files, stems)
    ted = correlation_table(files, "ted_zhen", [s for s in stems if s != "cosine"])
    versus = files.stems(f"{EVALUATE}/ted_zhen_menli*_vs_*")
    if adversarial or ted or versus:
        page.add("## Every NLI model and mix", "")
    if adversarial:
        page.add(collapsible("Adversarial accuracy per error type, every run", adversarial), "")
    if ted:
        page.add(
            collapsible(
                "Correlation with MQM on WMT21 TED zh-en, every run",
                ["Segment-level tau-like is WMT20's item-grouped statistic; the same runs as above.", "", *ted],
            ),
            "",
        )
    if versus:
        rows = [
            {
                "run": MENLI_ROWS.get(s.split("/")[-1].removeprefix("ted_zhen_").split("_vs_")[0], s),
                **files.load(s)["versus"],
            }
            for s in versus
        ]
        page.add(
            collapsible(
                "The mixes minus BERTScore-MiniLM on TED zh-en, paired",
                [
                    "Paired item bootstrap of the tau-like difference to BERTScore-MiniLM on the same rows:",
                    "",
                    *table(
                        rows,
                        ["run", "tau_like_a", "tau_like_b", "difference", "ci95", "share_a_not_better", "items"],
                        {"tau_like_a": "tau-like", "tau_like_b": "BERTScore's", "share_a_not_better": "not better"},
                    ),
                ],
            ),
            "",
        )
    choices, figures = _choices(page, files)
    if choices:
        page.add(
            "## How the settings were chosen",
            "",
            "Each setting was chosen on the dev mix's tuning half and reported on its report half (the "
            "[quality page](quality.md) explains the halves); the raw-data appendix has every grid and its numbers.",
            "",
            choices,
            "",
        )
        if figures:
            page.add(collapsible("The choices as figures", figures), "")
    nli = [stem for stem in NLI_FILES if files.load(stem) is not None]
    if nli:
        page.add(
            "## The NLI models",
            "",
            "Adversarial accuracy of each packaged NLI model (`bench/compare_nli.py`); their speed is on the "
            "[speed page](speed.md#nli-models).",
            "",
        )
        for stem in nli:
            page.add(collapsible(NLI_FILES[stem], generic(files.load(stem))))
    ranges = files.load("menli_ranges")
    if ranges is not None:
        page.add(
            "## Normalisation ranges",
            "",
            "What fitting the packaged mix's ranges cost (`bench/fit_menli_ranges.py`).",
            "",
            collapsible("the cost of fitting each range", generic(ranges)),
        )
    page.appendix()
    _raw_ablations(page, files)
    for stem in files.stems("nli_adversarial*"):
        if stem not in NLI_FILES:
            page.add(collapsible(stem, generic(files.load(stem))))
    return page
