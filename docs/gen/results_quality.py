"""Quality on the dev mix: the default metrics against BERTScore-MiniLM on the report half, with intervals.

The dev mix (``nlgmetrics/configs/devmix/default.yaml``) is four judged sets split by item into a *select* half
(where recipes and defaults are chosen; the pages call it the tuning half) and a *report* half (where they are
reported, and nothing is chosen); BERTScore's encoder comparison (``devmix/encoders.yaml``) adds TED en-de. Every
comparison here is a paired item bootstrap of a metric minus one reference metric on the same rows; rows compare
with each other only through a shared reference, so a file whose reference differs is refused, not printed beside
the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from statistics import mean
from typing import Any, Callable, Mapping

from results_markdown import Lines, Page, cell, collapsible, generic, interval, signed, table
from results_plots import forest
from results_store import ResultFiles

REFERENCE = "bertscore|encoder:packaged:minilm@"  # BERTScore-MiniLM: the reference of every report-half row
DEVMIX_SETS = {
    "ted_zhen": "TED zh-en",
    "summeval_rel": "SummEval rel.",
    "summeval_con": "SummEval con.",
    "webnlg": "WebNLG",
}  # the default mix; a row over other sets names them as its file does
SET_NAMES = {"ted_zhen": "TED zh-en", "ted_ende": "TED en-de", **DEVMIX_SETS}  # every set a row may have
SESCORE_ABLATIONS = ["sescore_default_ablations_all_report", "sescore_default_ablations_report"]  # first found wins
# arms of the SEScore ablation file shown on the report half, and their labels
SESCORE_ARMS = [
    ("default (minilm-v2)", "SEScore `minilm-v2` (three MiniLM seeds' half-way points averaged)"),
    ("no_rank_seeds_own_w0.5", "`minilm-v2`'s recipe w/o ranking loss (`rank_weight 0`)"),
    ("no_rules_seeds_own_w0.5", "`minilm-v2`'s recipe w/o new error types (v1 synthesis)"),
    ("no_severity_seeds_own_w0.5", "`minilm-v2`'s recipe w/o severity (every edit -1)"),
    ("v1 (minilm-news)", "SEScore v1 (`minilm-news`)"),
]
# other report-half files against the same BERTScore-MiniLM: (stem, label); the first is the SEScore default's
REPORT_FILES = [
    ("sescore_default_report_vs_minilm", "SEScore default (`mpnet-v2`)"),
    ("encoders_devmix_me5_report", "BERTScore-me5-small (the default encoder)"),
    ("devmix_bertscore_mpnet_report", "BERTScore-mpnet (SEScore's encoder)"),
    ("devmix_chrf_report", "chrF"),
    ("devmix_bleu_report", "BLEU"),
]


@dataclass(frozen=True)
class Headline:
    """One row of the headline table: a metric's default setting on the report half, against BERTScore-MiniLM.

    Args:
        metric: the registry name.
        label: what the row says (the setting measured).
        stem: the result file.
        read: turns the file into (per-set tau-like, bootstrap of the mean difference, what it measured).
        default: what the file must have measured for the row to be the metric's default (checked).
    """

    metric: str
    label: str
    stem: str
    read: Callable[[Any], tuple[dict[str, float], dict[str, Any], str]]
    default: Callable[[], str] | None = None


def _devmix(doc: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, Any], str]:
    """An ``evaluate.py devmix`` result: tau-like per set, the mean difference's bootstrap, the metric signature."""
    if not doc["versus_signature"].startswith(REFERENCE):
        raise ValueError(f"its reference is {doc['versus_signature']}, not BERTScore-MiniLM")
    return {s["set"]: s["tau_like_a"] for s in doc["sets"]}, doc["mean"], doc["signature"]


def _menli_task_row(doc: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, Any], str]:
    """MENLI's pooling ablation: the report-half row of the default task's strategy (``e <->`` for MT)."""
    from menli.pooling import task_strategy

    strategy = " ".join(task_strategy("mt"))
    if not doc["bertscore"].startswith(REFERENCE):
        raise ValueError(f"its reference is {doc['bertscore']}, not BERTScore-MiniLM")
    row = next(r for r in doc["report"] if r["strategy"] == strategy)
    return dict(row["report_tau"]), row["vs_bertscore"], f"nli:{doc['nli_model']}|strategy:{strategy}"


def _default_sescore() -> str:
    from sescore.shipped import DEFAULT_NAME

    return f"ckpt:{DEFAULT_NAME}@"


def _default_option(metric: str, name: str, prefix: str) -> Callable[[], str]:
    def default() -> str:
        from nlgmetrics.registry import metric_spec

        return f"{prefix}{getattr(metric_spec(metric).make_options(), name)}"

    return default


HEADLINES = [
    Headline(
        "sescore",
        "SEScore (default checkpoint `mpnet-v2`)",
        "sescore_default_report_vs_minilm",
        _devmix,
        _default_sescore,
    ),
    Headline(
        "menli",
        "MENLI (`nli-mpnet`, MT pooling `e <->`)",
        "menli_pooling_nli-mpnet",
        _menli_task_row,
        _default_option("menli", "nli_model", "nli:"),
    ),
    Headline(
        "bertscore",
        "BERTScore (default encoder `me5-small`)",
        "encoders_devmix_me5_report",
        _devmix,
        _default_option("bertscore", "encoder", "encoder:"),
    ),
    Headline("chrf", "chrF", "devmix_chrf_report", _devmix),
    Headline("bleu", "BLEU", "devmix_bleu_report", _devmix),
]


def headline_rows(files: ResultFiles) -> list[dict[str, Any]]:
    """The headline rows whose files exist, each checked to be the metric's current default."""
    rows = []
    for row in HEADLINES:
        doc = files.load(row.stem)
        if doc is None:
            continue
        try:
            taus, boot, measured = row.read(doc)
        except (KeyError, StopIteration, ValueError) as error:
            raise ValueError(
                f"{files.display(row.stem)}: cannot read the headline row for {row.metric} ({error!r})"
            ) from error
        if row.default is not None and row.default() not in measured:
            raise ValueError(
                f"{files.display(row.stem)} measured {measured}, but {row.metric}'s default is now "
                f"{row.default()}: rerun it with the default before it heads the results"
            )
        rows.append({"metric": row.metric, "label": row.label, "stem": row.stem, "taus": taus, "boot": boot})
    return rows


def headline_table(files: ResultFiles, link: Callable[[str], str]) -> Lines:
    """The default metrics' report-half tau-like and their difference to BERTScore-MiniLM with a 95% interval.

    Args:
        files: the result files.
        link: metric name -> the link target of its results page (differs between README and site).
    """
    rows = headline_rows(files)
    if not rows:
        return []
    lines = [
        "| metric (default setting) | sets (report half) | mean tau-like | minus BERTScore-MiniLM [95% CI] "
        "| share of resamples not better |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        boot = row["boot"]
        sets = ", ".join(SET_NAMES.get(s, s) for s in row["taus"])
        lines.append(
            f"| [{row['label']}]({link(row['metric'])}) | {sets} | {mean(row['taus'].values()):.3f} | "
            f"{signed(boot['difference'])} {interval(boot['ci95'])} | {boot['share_a_not_better']:.1%} |"
        )
    return lines


def report_rows(files: ResultFiles, which: str = "all") -> list[tuple[str, dict[str, Any]]]:
    """(label, devmix result) of every report-half comparison against the same BERTScore-MiniLM: the SEScore
    default, the other metrics' files, then the SEScore recipe's ablations. Files against another BERTScore are an
    error, not a row: rows compare with each other only through their shared reference.

    Args:
        files: the result files.
        which: ``"defaults"`` (the defaults and the baselines), ``"history"`` (earlier SEScore checkpoints and
            the recipe's ablations) or ``"all"``; the reference check always covers every row.
    """
    current: list[tuple[str, dict[str, Any]]] = []
    for stem, label in REPORT_FILES:
        doc = files.load(stem)
        if doc is not None:
            current.append((label, doc))
    history: list[tuple[str, dict[str, Any]]] = []
    ablations = next((doc for doc in map(files.load, SESCORE_ABLATIONS) if doc is not None), None)
    if ablations is not None:
        history = [(label, ablations["details"][key]) for key, label in SESCORE_ARMS if key in ablations["details"]]
        if not history:
            raise ValueError(
                f"{SESCORE_ABLATIONS}: the ablation file has none of the arms {[k for k, _ in SESCORE_ARMS]}"
            )
    signatures = {doc["versus_signature"] for _, doc in current + history}
    if len(signatures) > 1:
        raise ValueError(f"report-half rows against different references: {sorted(signatures)}")
    return {"defaults": current, "history": history}.get(which, current + history)


def report_table(files: ResultFiles, which: str = "all", pearson: bool = True) -> Lines:
    """Per-set tau-like (and difference to the reference) of the report-half rows, the mean difference with its
    interval, and the reference's own row last: each row's mean difference is over the sets it has a cell for
    (TED en-de only where a file scored it), so the headline's mean tau-like is the mean of the row's cells.

    Args:
        files: the result files.
        which: the rows (``report_rows``).
        pearson: add TED zh-en's system-level Pearson (a ninth column: for a collapsed table).
    """
    rows = report_rows(files, which)
    if not rows:
        return []
    present = {s["set"] for _, doc in rows for s in doc["sets"]}
    names = {k: v for k, v in SET_NAMES.items() if k in DEVMIX_SETS or k in present}
    title = "earlier checkpoint or variant (report half)" if which == "history" else "metric (dev mix, report half)"
    lines = [
        f"| {title} | " + " | ".join(names.values()) + " | mean minus "
        "BERTScore-MiniLM [95% CI] | not better |" + (" TED zh-en system Pearson |" if pearson else ""),
        "|---|" + "---|" * (len(names) + 2 + pearson),
    ]
    reference: dict[str, Any] = {}
    for label, doc in rows:
        sets = {s["set"]: s for s in doc["sets"]}
        for key, found in sets.items():
            reference.setdefault(key, found)
        cells = [f"{sets[k]['tau_like_a']:.3f} ({sets[k]['difference']:+.3f})" if k in sets else "-" for k in names]
        boot = doc["mean"]
        line = (
            f"| {label} | " + " | ".join(cells) + f" | {signed(boot['difference'])} {interval(boot['ci95'])}"
            f" | {boot['share_a_not_better']:.1%} |"
        )
        if pearson:
            line += f" {cell(sets.get('ted_zhen', {}).get('system_pearson_a'))} |"
        lines.append(line)
    line = (
        "| BERTScore-MiniLM (the reference of every row) | "
        + " | ".join(f"{reference[k]['tau_like_b']:.3f}" if k in reference else "-" for k in names)
        + " | - | - |"
    )
    if pearson:
        line += f" {cell(reference.get('ted_zhen', {}).get('system_pearson_b'))} |"
    lines.append(line)
    return lines


def verdict(files: ResultFiles) -> str:
    """One line: which default metrics the report half shows ahead of BERTScore-MiniLM, level with it, behind it
    (ahead: not better in under 5% of resamples; behind: the whole interval below zero)."""
    groups: dict[str, list[str]] = {"ahead": [], "level": [], "behind": []}
    for row in headline_rows(files):
        boot, name = row["boot"], row["label"]
        if boot["share_a_not_better"] < 0.05:
            groups["ahead"].append(f"{name}, {signed(boot['difference'])} {interval(boot['ci95'])}")
        elif boot["ci95"][1] < 0:
            groups["behind"].append(name)
        else:
            groups["level"].append(name)
    if not any(groups.values()):
        return ""
    parts = [
        f"{title}: {', '.join(groups[key])}"
        for key, title in (
            ("ahead", "ahead of BERTScore-MiniLM"),
            ("level", "not told apart from it"),
            ("behind", "behind it"),
        )
        if groups[key]
    ]
    return "**Verdict:** " + "; ".join(parts) + "."


def devmix_stems(files: ResultFiles) -> list[str]:
    """Every result file in ``evaluate.py devmix``'s format (a ``versus_signature`` and per-set rows)."""
    stems = []
    for stem in files.stems("*"):
        head = files.path(stem).read_text(encoding="utf-8")[:2000]
        if '"versus_signature"' in head and '"label_a"' in head:  # checked before reading: only these are shown
            doc = json.loads(files.path(stem).read_text(encoding="utf-8"))  # not files.load: that marks it shown
            if isinstance(doc, dict) and {"versus_signature", "sets", "mean"} <= doc.keys():
                files.load(stem)
                stems.append(stem)
    return stems


def every_comparison(files: ResultFiles) -> Lines:
    """One row per dev-mix comparison file, whichever half and reference: the index of what was measured."""
    rows = []
    for stem in devmix_stems(files):
        doc = files.load(stem)
        boot = doc["mean"]
        rows.append(
            {
                "file": f"`{stem}.json`",
                "half": doc["half"],
                "metric": doc["label_a"],
                "against": doc["label_b"],
                "sets": len(doc["sets"]),
                "mean difference [95% CI]": f"{signed(boot['difference'])} {interval(boot['ci95'])}",
                "not better": f"{boot['share_a_not_better']:.1%}",
            }
        )
    return table(rows)


def _forest_rows(files: ResultFiles) -> list[tuple[str, float, list[float]]]:
    """The report-half rows for the figure, MENLI's (two sets only) second."""
    rows = [
        (label.replace("`", ""), doc["mean"]["difference"], doc["mean"]["ci95"])
        for label, doc in report_rows(files, "defaults")
    ]
    for row in headline_rows(files):
        if row["metric"] == "menli":
            boot = row["boot"]
            rows.insert(1, (row["label"].replace("`", "") + " (2 sets)", boot["difference"], boot["ci95"]))
    return rows


GEMMA_GRID = "embeddinggemma_bertscore_grid"  # layer x prompt on the tuning half (bench/sweep_bertscore.py)
GEMMA_REPORT = "embeddinggemma_bertscore_report"  # the grid's choice against BERTScore-mpnet, report half
GEMMA_FIRST_LOOK = "embeddinggemma_bertscore_select"  # last layer, no prompt, 150 items of two sets
GEMMA_SPEED = [  # speed and memory beside the MPNet counterpart, one run each: (stem, what)
    ("encoders_gemma", "BERTScore by encoder (bench/bench_encoders.py)"),
    ("nli_models_gemma", "NLI models, nli-mpnet and nli-gemma (bench/bench_nli.py --compare)"),
]


def _set_cells(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-set rows of an ``evaluate.py devmix`` result for a table."""
    return [
        {
            "set": SET_NAMES.get(s["set"], "THumB MSCOCO" if s["set"] == "thumb_mscoco" else s["set"]),
            "rows": s["rows"],
            f"tau-like {doc['label_a']}": s["tau_like_a"],
            f"tau-like {doc['label_b']}": s["tau_like_b"],
            "difference [95% CI]": f"{signed(s['difference'])} {interval(s['ci95'])}",
            "not better": f"{s['share_a_not_better']:.1%}",
        }
        for s in doc["sets"]
    ]


SESCORE_GEMMA = [  # SEScore on EmbeddingGemma (configs/sescore/gemma_v2_*.yaml): (stem, what), report half first
    ("sescore_gemma_report", "report half, against BERTScore on the same encoder"),
    ("sescore_gemma_report_mpnet", "report half, against the default SEScore (mpnet-v2)"),
    ("sescore_gemma_select_trained", "tuning half: the trained weights"),
    ("sescore_gemma_select_pack", "tuning half: half-way from the start (the default recipe's last step)"),
]


def _devmix_summary(doc: Mapping[str, Any], what: str) -> Lines:
    boot = doc["mean"]
    cost = doc.get("cost") or {}
    spent = f" Cost: {cost['wall_seconds']:.0f} s wall, {cost['cpu_seconds']:.0f} CPU-s." if cost else ""
    return [
        f"**{what}**: `{doc['label_a']}` against `{doc['label_b']}`, mean over {boot['sets']} sets "
        f"{signed(boot['difference'])} {interval(boot['ci95'])}, not better in {boot['share_a_not_better']:.1%} "
        f"of resamples.{spent}",
        "",
    ]


def sescore_gemma_section(files: ResultFiles) -> Lines:
    """SEScore trained on EmbeddingGemma-300M: both candidates on the tuning half, the chosen one on the report
    half against BERTScore on its own encoder and against the default SEScore."""
    found = [(files.load(stem), what) for stem, what in SESCORE_GEMMA]
    found = [(doc, what) for doc, what in found if doc is not None]
    if not found:
        return []
    lines: Lines = [
        "## SEScore on EmbeddingGemma-300M (opt-in)",
        "",
        "The default's recipe and training triples with EmbeddingGemma-300M as the encoder "
        "(`configs/sescore/gemma_v2_*.yaml`), on the dev mix with captions.",
        "",
    ]
    for number, (doc, what) in enumerate(found):
        summary = _devmix_summary(doc, what[:1].upper() + what[1:])
        lines += summary if number else [*summary, *table(_set_cells(doc)), ""]
    return lines


def gemma_section(files: ResultFiles) -> Lines:
    """BERTScore on the opt-in EmbeddingGemma-300M: the layer and prompt grid on the tuning half, the chosen
    setting against BERTScore-mpnet on the report half, and the first look that came before both."""
    grid, report, first = files.load(GEMMA_GRID), files.load(GEMMA_REPORT), files.load(GEMMA_FIRST_LOOK)
    if grid is None and report is None and first is None:
        return []
    lines: Lines = [
        "## BERTScore on EmbeddingGemma-300M (opt-in)",
        "",
        "EmbeddingGemma-300M (`packaged:embeddinggemma`, Gemma Terms of Use, fetched once) on the dev mix with "
        "captions: the four sets above plus THumB MSCOCO image captions (`configs/devmix/with_captions.yaml`).",
        "",
    ]
    if report is not None:
        boot = report["mean"]
        lines += [
            f"**Report half**: `{report['label_a']}` against `{report['label_b']}`, mean over "
            f"{boot['sets']} sets {signed(boot['difference'])} {interval(boot['ci95'])}, not better in "
            f"{boot['share_a_not_better']:.1%} of resamples.",
            "",
            *table(_set_cells(report)),
            "",
        ]
    if grid is not None:
        best = grid["best"]
        lines += [
            f"**Layer and prompt**, chosen on the tuning half (every item): the highest mean of sets is prompt "
            f"`{best['prompt']}`, layer `{best['layer']}` ({best['mean_of_sets']:.4f}); it is what "
            "`--encoder packaged:embeddinggemma` uses without `--layer` or `--prompt`.",
            "",
            *collapsible(
                "every layer and prompt (tuning half)",
                [
                    "Layer: the index into the model's hidden states, `last` its final output. Prompts: "
                    + "; ".join(f"`{k}` = `{v!r}`" for k, v in grid["prompts"].items())
                    + f". A prompt's tokens are context and never matched. Cost: {grid['cost']['wall_seconds']:.0f} s "
                    f"wall, {grid['cost']['cpu_seconds']:.0f} CPU-s (2 cores, partly shared with another job).",
                    "",
                    *table(grid["rows"]),
                ],
            ),
            "",
        ]
    for stem, what in GEMMA_SPEED:
        doc = files.load(stem)
        if doc is not None:
            lines += [*collapsible(f"speed and memory: {what}", generic(doc)), ""]
    if first is not None:
        lines += [
            *collapsible(
                "the first look: last layer, no prompt, 150 items of two sets (tuning half)",
                [
                    "Before the grid: the last layer, no prompt, the first 150 items of two sets of the tuning half, "
                    f"against BERTScore-mpnet ({first['cost']['wall_seconds']:.0f} s wall for both metrics).",
                    "",
                    *table(_set_cells(first["result"])),
                ],
            ),
            "",
        ]
    return lines


def render(files: ResultFiles, link: Callable[[str], str]) -> Page:
    """The quality page."""
    page = Page("results/quality.md")
    page.add(
        "# Quality on the dev mix",
        "",
        "How well each metric ranks outputs the way people do, on the **report half** of the dev mix. The dev "
        "mix is four judged sets (TED zh-en MQM, SummEval relevance and consistency, WebNLG adequacy); the "
        "comparison of BERTScore's encoders adds a fifth, TED en-de MQM (German targets, which `me5-small` "
        "reads), so BERTScore's default row is over five sets and every other row over four. Each set is split "
        "by item into a tuning half, where every recipe and default was chosen, and a report half, where "
        "nothing was. *tau-like* is WMT20's item-grouped Kendall-like statistic; each difference is a metric "
        "minus BERTScore-MiniLM on the same rows, with a 95% paired item-bootstrap interval; *not better* is the "
        "share of resamples in which the metric did not beat BERTScore-MiniLM.",
        "",
        "## The defaults against BERTScore-MiniLM",
        "",
    )
    headline = headline_table(files, link)
    if headline:
        from sescore.shipped import DEFAULT_NAME

        page.require_row(f"[SEScore (default checkpoint `{DEFAULT_NAME}`)", "metric (default setting)")
    page.add(
        headline,
        "",
        verdict(files),
        "",
        "MENLI's row comes from its pooling ablation, which scored the two sets where NLI applies (TED zh-en and "
        "WebNLG); its mean is over those two. MARS is not measured on the dev mix (its data is stories): see "
        "[MARS](mars.md).",
        "",
    )
    forest_rows = _forest_rows(files)
    if forest_rows:
        page.figure(
            "quality-forest",
            "mean tau-like difference to BERTScore-MiniLM with 95% intervals",
            lambda: forest(
                forest_rows, "Dev mix, report half: metric minus BERTScore-MiniLM (95% CI)", "mean tau-like difference"
            ),
        )
    current = report_table(files, "defaults", pearson=False)
    if current:
        from sescore.shipped import DEFAULT_NAME

        page.require_row(f"SEScore default (`{DEFAULT_NAME}`)", "metric (dev mix, report half)")
        page.add(
            "## Per set",
            "",
            "Each cell is the tau-like on one set, and in brackets its difference to BERTScore-MiniLM; a row's "
            "mean tau-like in the table above is the mean of its cells here, and its mean difference the mean of "
            "the bracketed ones.",
            "",
            current,
            "",
        )
    history = report_table(files, "history")
    if history:
        page.add(
            collapsible(
                "Earlier SEScore checkpoints and the recipe without each of its parts",
                [
                    "The same report half. The recipe's variants are each built like `minilm-v2`, the default "
                    "before `mpnet-v2` (three seeds' half-way points averaged), with one part of the recipe left "
                    "out; the last column is TED zh-en's system-level Pearson.",
                    "",
                    *history,
                ],
            ),
            "",
        )
    defaults = files.load("defaults")
    if defaults is not None:
        page.add(
            "## Choosing the default models",
            "",
            "The role benchmarks' numbers behind each default model, on the tuning half only.",
            "",
            collapsible("the candidates for each role: encoder, NLI model, causal LM", generic(defaults)),
            "",
        )
    page.add(gemma_section(files))
    page.add(sescore_gemma_section(files))
    page.appendix()
    page.add(
        "**Every dev-mix comparison.** Every `evaluate.py devmix` result file, select half included (choices "
        "were made there), each against its own reference; the pages of each metric show them in context.",
        "",
        collapsible("every dev-mix comparison file", every_comparison(files)),
    )
    full = report_table(files)
    if full:
        page.add(collapsible("the report-half table with every row", full))
    ties = files.load("tau_ties_webnlg_select")
    if ties is not None:
        page.add(
            "**Ties and tau-like.** Does tau-like move when numerically equal scores tie differently (MKL's strict "
            "mode against its default)? From `bench/tau_ties.py` (removed after its run; in git history at commit "
            "`6764470`) on WebNLG, select half.",
            "",
            collapsible("tau_ties_webnlg_select", generic(ties)),
        )
    return page
