"""MARS on ROC stories: correlation with the UNION judgments, robustness to the paper's attacks (the runs of
``bench/notes/mars_roc.md``) and the augmentation ablation of ``bench/ablate_mars_roc.py``."""

from __future__ import annotations

import re
from typing import Any

from results_markdown import Page, collapsible, generic, table
from results_plots import forest
from results_store import ResultFiles

ROC = "mars_roc"  # the correlation and robustness runs' folder under the results root
CORRELATION_KEYS = ["kendall_b", "pearson", "tau_like", "system_pearson", "n", "n_systems"]


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


def _ablation(page: Page, files: ResultFiles, stem: str) -> None:
    doc = files.load(stem)
    shipped = [r for r in doc["rows"] if r["variant"].startswith("default: cosine")]
    page.add(f"### `{stem}`", "")
    if len(shipped) > 1:
        rows = [
            (f"{r['split']}, {r['filler']}, {r['encoder']}", r["kendall_diff"], _interval(r.get("kendall_ci95")))
            for r in shipped
        ]
        page.figure(
            f"mars-{stem.replace('_', '-')}",
            "the shipped weighting's Kendall difference to BERTScore",
            lambda rows=rows: forest(
                rows,
                "MARS (shipped weighting) minus BERTScore, same encoder: ROC report half",
                "Kendall tau-b difference",
            ),
        )
    body = generic({k: v for k, v in doc.items() if k not in ("details", "every_variant")})
    page.add(collapsible(f"{stem}: every variant", body, expanded=stem == "mars_roc_ablation"))


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
        page.add(
            "## Correlation with human judgments",
            "",
            "Segment level over every story (one candidate per item: the item-grouped tau-like and the "
            "system-level Pearson cannot be computed, hence empty).",
            "",
            table(correlation),
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
    page.add(
        "## What the augmentation adds",
        "",
        "The ablation chose the weighting on the select half of the stories and reports it on the report half, "
        "against BERTScore with the same encoder; *paper*, *generated* and *whole* are the three ways of "
        "building the reference from a story.",
        "",
    )
    for stem in files.stems("mars_roc_*"):
        _ablation(page, files, stem)
    page.add(
        "## What it costs",
        "",
        "MARS's cost is the augmentation: see [speed](speed.md#mars) and the reference-length runs below it.",
        "",
    )
    return page
