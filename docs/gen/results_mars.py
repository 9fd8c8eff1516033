"""MARS on ROC stories: correlation with the UNION judgments, robustness to the paper's attacks (the runs of
``bench/notes/mars_roc.md``) and the augmentation ablation of ``bench/ablate_mars_roc.py`` (removed after its run;
in git history at commit 6764470; the shipped weighting's rows on the page, every variant in the raw-data
appendix)."""

from __future__ import annotations

import re
from typing import Any

from results_markdown import Lines, Page, collapsible, generic, interval, signed, table
from results_plots import forest
from results_store import ResultFiles

ROC = "mars_roc"  # the correlation and robustness runs' folder under the results root
CORRELATION_KEYS = ["kendall_b", "pearson", "tau_like", "system_pearson", "n", "n_systems"]
LABELS = {"mars": "MARS (default settings)", "bertscore": "BERTScore-MiniLM", "bleu": "BLEU", "chrf": "chrF"}
ABLATIONS = {  # plain names of the augmentation ablation files
    "mars_roc_ablation": "Every filler, reference split and encoder",
    "mars_roc_ablation_smollm2": "SmolLM2 on every reference split, run again",
    "mars_roc_ablation_window": "With the masking window",
    "mars_roc_smoke": "A smoke run on 8 stories",
}


def _interval(text: Any) -> list[float] | None:
    """``[-0.040, +0.031]`` as the ablation table stores it, back to numbers (None when absent)."""
    found = re.findall(r"[-+]?\d*\.\d+", text) if isinstance(text, str) else []
    return [float(found[0]), float(found[1])] if len(found) == 2 else None


def correlation_rows(files: ResultFiles) -> list[dict[str, Any]]:
    """One row per ``roc_correlation_<metric>.json`` (``evaluate.py correlate`` on UNION ROC)."""
    rows = []
    for stem in files.stems(f"{ROC}/roc_correlation_*"):
        doc = files.load(stem)
        rows.append({"metric": doc["metric"], **{k: doc.get(k) for k in CORRELATION_KEYS}})
    order = {"mars": 0}
    return sorted(rows, key=lambda r: (order.get(r["metric"], 1), r["metric"]))


def _title(stem: str) -> str:
    return ABLATIONS.get(stem, "Augmentation run: " + stem.removeprefix("mars_roc_").replace("_", " "))


def shipped_table(doc: dict[str, Any]) -> Lines:
    """The shipped weighting's rows of an ablation file: reference split, filler and encoder, and MARS minus
    BERTScore with the same encoder on the report half."""
    rows = [
        {
            "reference built from": r["split"],
            "filler": r["filler"],
            "encoder": r["encoder"],
            "MARS Kendall": r["report_kendall"],
            "minus BERTScore [95% CI]": f"{signed(r['kendall_diff'])} {interval(_interval(r.get('kendall_ci95')))}",
            "not better": r.get("kendall_not_better"),
        }
        for r in doc["rows"]
        if r["variant"].startswith("default: cosine")
    ]
    return table(rows)


def _figure(page: Page, stem: str, doc: dict[str, Any]) -> str | None:
    shipped = [r for r in doc["rows"] if r["variant"].startswith("default: cosine")]
    if len(shipped) < 2:
        return None
    rows = [
        (f"{r['split']}, {r['filler']}, {r['encoder']}", r["kendall_diff"], _interval(r.get("kendall_ci95")))
        for r in shipped
    ]
    return page.marker(
        f"mars-{stem.replace('_', '-')}",
        f"the shipped weighting's Kendall difference to BERTScore: {_title(stem).lower()}",
        lambda rows=rows: forest(
            rows, "MARS (shipped weighting) minus BERTScore, same encoder: ROC report half", "Kendall tau-b difference"
        ),
    )


def render(files: ResultFiles) -> Page:
    """The MARS page."""
    page = Page("results/mars.md")
    page.add(
        "# MARS",
        "",
        "MARS scores a candidate by its similarity to the human reference and to references a language model "
        "rewrote (cloze-filled) from it. It is measured on UNION's ROC stories, not on the dev mix; how each "
        "run was made, and what the data can and cannot show, is in the notes on these runs "
        "(`bench/notes/mars_roc.md` in the repository).",
        "",
    )
    correlation = correlation_rows(files)
    if correlation:
        keys = [k for k in CORRELATION_KEYS if any(r.get(k) is not None for r in correlation)]
        rows = [{"metric": LABELS.get(r["metric"], r["metric"]), **{k: r[k] for k in keys}} for r in correlation]
        page.require_row(LABELS["mars"], "metric (ROC stories)")
        page.add(
            "## Correlation with human judgments",
            "",
            "Segment level over every story (one candidate per item: the item-grouped tau-like and the "
            "system-level Pearson cannot be computed, so they are left out).",
            "",
            table(rows, ["metric", *keys], {"metric": "metric (ROC stories)", "n": "stories"}),
            "",
        )
        by_metric = {r["metric"]: r for r in correlation}
        if "mars" in by_metric and "bertscore" in by_metric:
            mars, bert = by_metric["mars"], by_metric["bertscore"]
            order = "below" if mars["kendall_b"] < bert["kendall_b"] else "above"
            page.add(
                f"**Verdict:** MARS ranks the stories {order} BERTScore-MiniLM (Kendall tau-b {mars['kendall_b']:.3f} "
                f"against {bert['kendall_b']:.3f})"
                + (
                    "; its augmentation, the costly part (see [speed](speed.md#mars)), shows no gain over BERTScore "
                    "on these stories."
                    if order == "below"
                    else "."
                ),
                "",
            )
    robustness = files.load(f"{ROC}/robustness")
    if robustness is not None:
        from nlgmetrics.stress.robustness import markdown_table

        page.add(
            "## Robustness to the paper's attacks",
            "",
            "Each candidate reordered (half its tokens) or replaced by a context sentence; a robust metric "
            "scores the attacked candidate lower.",
            "",
            markdown_table(robustness).splitlines(),
            "",
        )
    stems = files.stems("mars_roc_*")
    if stems:
        page.add(
            "## What the augmentation adds",
            "",
            "The ablation chose the weighting on one half of the stories (the tuning half) and reports it on the "
            "other, against BERTScore with the same encoder; *paper*, *generated* and *whole* are the three ways "
            "of building the reference from a story. The rows here are the shipped weighting's; the raw-data "
            "appendix has every variant.",
            "",
        )
    for index, stem in enumerate(stems):
        doc = files.load(stem)
        marker = _figure(page, stem, doc)
        body = [*shipped_table(doc), "", *([marker, ""] if marker else [])]
        if index == 0:
            page.add(f"**{_title(stem)}**", "", body)
        else:
            page.add(collapsible(_title(stem), body))
    page.add(
        "## What it costs",
        "",
        "MARS's cost is the augmentation: see [speed](speed.md#mars) and the reference-length runs below it.",
        "",
    )
    page.appendix()
    for stem in stems:
        doc = files.load(stem)
        body = generic({k: v for k, v in doc.items() if k not in ("details", "every_variant")})
        page.add(collapsible(f"{stem}: every variant", body))
    return page
