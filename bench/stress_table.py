"""The blind-spot tables of the results pages, rendered from the committed stress reports
(``bench/results/stress/*/report.json``).

Why: the tables gather passed/judged counts from a dozen report folders written over many runs; typed by hand
they drift from the reports. Here every cell names the folder and the metric key it comes from, and a folder that
does not exist yet gives "not run". ``docs/gen/results_pages.py`` puts them on the stress results page.

    python -m bench.stress_table                 # print the tables
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.harness import REPO
from nlgmetrics.stress.report import passed_of_judged

STRESS = REPO / "bench" / "results" / "stress"
NOT_RUN = "not run"
PARTLY = "partly scored"

Cell = tuple[str, str]  # (report folder under STRESS, metric key in its summary)

# One table per results-page block: its columns, then one row per data set with a cell (or None: no such set-up)
# per column.
TABLES: dict[str, dict] = {
    "stress-main": {
        "columns": [
            "BLEU",
            "chrF",
            "BERTScore-MiniLM",
            "SEScore (default, `mpnet-v2`)",
            "SEScore `minilm-v2`",
            "SEScore v1",
            "MARS",
            "MENLI nli-minilm, text",
            "MENLI nli-minilm, sentences",
            "MENLI nli-mpnet (default), sentences, `--task mt`",
            "MENLI nli-mpnet, sentences, `--task summarization`",
            "MENLI nli-minilm + chrF @0.3",
            "MENLI nli-minilm + BERTScore @0.2",
            "MENLI nli-mpnet + BERTScore @0.4 (robust)",
        ],
        "rows": {
            "WMT21 de-en": [
                ("wmt21_deen", "bleu"),
                ("wmt21_deen", "chrf"),
                ("wmt21_deen", "bertscore"),
                ("wmt21_deen_sescore_mpnet", "sescore"),
                ("wmt21_deen_sescore_v2", "sescore"),
                ("wmt21_deen", "sescore"),
                ("wmt21_deen_mars", "mars"),
                ("wmt21_deen", "menli"),
                ("wmt21_deen_menli", "menli-s-mean"),
                ("wmt21_deen_menli_mpnet", "menli-s-mean@nli-mpnet"),
                None,
                ("wmt21_deen_menli", "menli-s-mean+chrf@0.3"),
                ("wmt21_deen_menli", "menli-s-mean+bertscore@0.2"),
                ("wmt21_deen_menli_mpnet", "menli-s-mean@nli-mpnet+bertscore@0.4"),
            ],
            "TED-MT zh-en": [
                ("tedmt_zhen", "bleu"),
                ("tedmt_zhen", "chrf"),
                ("tedmt_zhen", "bertscore"),
                ("tedmt_zhen_sescore_mpnet", "sescore"),
                ("tedmt_zhen_sescore_v2", "sescore"),
                ("tedmt_zhen", "sescore"),
                ("tedmt_zhen_mars", "mars"),
                ("tedmt_zhen", "menli"),
                ("tedmt_zhen_menli", "menli-s-mean"),
                ("tedmt_zhen_menli_mpnet", "menli-s-mean@nli-mpnet"),
                None,
                ("tedmt_zhen_menli", "menli-s-mean+chrf@0.3"),
                ("tedmt_zhen_menli", "menli-s-mean+bertscore@0.2"),
                ("tedmt_zhen_menli_mpnet", "menli-s-mean@nli-mpnet+bertscore@0.4"),
            ],
            "THumB CNN/DM, toolkit set-up": [
                ("thumb_cnndm", "bleu"),
                ("thumb_cnndm", "chrf"),
                ("thumb_cnndm", "bertscore"),
                ("thumb_cnndm_sescore_mpnet", "sescore"),
                ("thumb_cnndm_sescore_v2", "sescore"),
                ("thumb_cnndm_sescore", "sescore"),
                ("thumb_cnndm_mars", "mars"),
                ("thumb_cnndm", "menli"),
                ("thumb_cnndm_menli", "menli-s-mean"),
                ("thumb_cnndm_menli_mpnet", "menli-s-mean@nli-mpnet"),
                ("thumb_cnndm_menli_mpnet", "menli-sum-s-mean@nli-mpnet"),
                ("thumb_cnndm_menli", "menli-s-mean+chrf@0.3"),
                ("thumb_cnndm_menli", "menli-s-mean+bertscore@0.2"),
                ("thumb_cnndm_menli_mpnet", "menli-s-mean@nli-mpnet+bertscore@0.4"),
            ],
            "THumB CNN/DM, paper set-up": [
                ("thumb_cnndm_paper", "bleu"),
                ("thumb_cnndm_paper", "chrf"),
                ("thumb_cnndm_paper", "bertscore"),
                ("thumb_cnndm_paper_sescore_mpnet", "sescore"),
                ("thumb_cnndm_paper_sescore_v2", "sescore"),
                ("thumb_cnndm_paper_sescore", "sescore"),
                None,
                None,
                None,
                None,
                ("thumb_cnndm_paper_menli_mpnet", "menli-sum-s-mean@nli-mpnet"),
                None,
                None,
                None,
            ],
        },
    },
    # bench/stress_sample.py: the README results table's metrics with their defaults, and the packaged MENLI mix, on
    # the same 25 seeded items per set
    "stress-sample25": {
        "columns": [
            "BLEU",
            "chrF",
            "BERTScore (`me5-small`)",
            "SEScore (`mpnet-v2`)",
            "MENLI (`nli-mpnet`)",
            "`menli+sescore+lm-ratio`",
        ],
        "rows": {
            f"{label}, 25 items": [
                (f"sample25/{folder}/{metric}", metric)
                for metric in ("bleu", "chrf", "bertscore", "sescore", "menli", "menli+sescore+lm-ratio")
            ]
            for label, folder in (
                ("WMT21 de-en", "wmt21_deen"),
                ("TED-MT zh-en", "tedmt_zhen"),
                ("THumB CNN/DM", "thumb_cnndm"),
            )
        },
    },
    "stress-thumb-pooling": {
        "columns": ["`e <->` (MT choice, `--task mt`)", "`e-c <-` (summarisation choice, `--task summarization`)"],
        "rows": {
            "nli-minilm": [("thumb_cnndm_menli", "menli-s-mean"), ("thumb_cnndm_menli_sum", "menli-sum-s-mean")],
            "nli-mpnet (default)": [
                ("thumb_cnndm_menli_mpnet", "menli-s-mean@nli-mpnet"),
                ("thumb_cnndm_menli_mpnet", "menli-sum-s-mean@nli-mpnet"),
            ],
        },
        "corner": "THumB CNN/DM (toolkit set-up)",
    },
}


def cell_text(root: Path, cell: Cell | None) -> str:
    """``passed/judged`` from one report, "not run" when it has none, "partly scored" when a resumable run has
    stored scores but no report yet, "-" for no such set-up.

    A folder that exists without the metric is an error, not a blank: the table names a key the report lacks.
    """
    if cell is None:
        return "-"
    folder, metric = cell
    path = root / folder / "report.json"
    if not path.exists():
        return PARTLY if (root / folder / "scores.costs.json").exists() else NOT_RUN
    summary = json.loads(path.read_text(encoding="utf-8")).get("summary", {})
    if metric not in summary:
        raise KeyError(f"{path}: no metric '{metric}' in its summary (has {', '.join(summary)})")
    return passed_of_judged(summary[metric])


def render(name: str, root: Path = STRESS) -> str:
    """One table as Markdown: a header, then a row per data set."""
    table = TABLES[name]
    lines = [
        "| " + " | ".join([table.get("corner", "data"), *table["columns"]]) + " |",
        "|" + "---|" * (len(table["columns"]) + 1),
    ]
    for label, cells in table["rows"].items():
        if len(cells) != len(table["columns"]):
            raise ValueError(f"table {name}, row {label}: {len(cells)} cells for {len(table['columns'])} columns")
        lines.append("| " + " | ".join([label, *(cell_text(root, c) for c in cells)]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    for name in TABLES:
        print(f"{name}:\n{render(name)}\n")


if __name__ == "__main__":
    sys.exit(main())
