"""Render the README's tables from the JSON lines evaluate.py printed (docs/results/*.json); no number is typed by hand."""
from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
TYPES = ["add", "drop", "neg", "num", "pron", "name", "word_NN", "word_VB", "word_JJ", "typo", "jumble", "subject_verb_dis"]


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def adversarial_table(metrics: list[str]) -> list[str]:
    lines = ["| metric | mean | " + " | ".join(TYPES) + " |", "|---|---|" + "---|" * len(TYPES)]
    for m in metrics:
        r = load(f"adv_{m}")
        if r:
            lines.append(f"| {m} | {fmt(r['mean'])} | " + " | ".join(fmt(r['per_type'].get(t)) for t in TYPES) + " |")
    return lines


def correlation_table(prefix: str, metrics: list[str]) -> list[str]:
    lines = ["| metric | tau-like | Kendall tau-b | Pearson | system Pearson | tau-like w/o human systems | n |",
             "|---|---|---|---|---|---|---|"]
    for m in metrics:
        r = load(f"{prefix}_{m}")
        if r:
            sub = r.get("without_human_systems", {})
            lines.append(f"| {m} | {fmt(r['tau_like'])} | {fmt(r['kendall_b'])} | {fmt(r['pearson'])} | "
                         f"{fmt(r['system_pearson'])} | {fmt(sub.get('tau_like'))} | {r['n']} |")
    return lines


def main() -> int:
    out = ["### Adversarial preference accuracy (adv_menli_wmt20_de, reference-based; ties fail)", ""]
    out += adversarial_table(["menli", "menli+bertscore", "bertscore", "cosine", "chrf", "bleu"])
    out += ["", "### Correlation with MQM, WMT21 TED zh-en (segment tau-like is WMT20 item-grouped)", ""]
    out += correlation_table("ted_zhen", ["menli", "menli+bertscore", "bertscore", "chrf", "bleu"])
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
