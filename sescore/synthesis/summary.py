"""What a synthesis run produced and how fast: counts from the rows, rates from the session records."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from sescore.synthesis.config import EDIT_KINDS


def summarize_rows(rows: Iterable[dict], minor: int = -1) -> dict[str, Any]:
    """Counts per edit kind (planned = drawn at the step, applied / unchanged / rejected), minor vs major share
    among applied edits, and the histogram of variant scores (every integer score present)."""
    planned, applied, unchanged, rejected = Counter(), Counter(), Counter(), Counter()
    severity = Counter()
    scores = Counter()
    num_rows = 0
    sentences = set()
    planned_total = applied_total = 0
    for row in rows:
        num_rows += 1
        sentences.add(row["sentence_index"])
        scores[int(row["score"])] += 1
        planned_total += int(row["num_planned"])
        applied_total += int(row["num_applied"])
        for step in row["history"]:
            planned[step["kind"]] += 1
            {"applied": applied, "unchanged": unchanged, "rejected": rejected}[step["status"]][step["kind"]] += 1
            if step["status"] == "applied":
                severity[int(step["severity"])] += 1
    kinds = sorted(set(EDIT_KINDS) | set(planned))
    minor_count = severity.get(minor, 0)
    applied_sum = sum(severity.values())
    low = min(scores) if scores else 0
    return {
        "rows": num_rows,
        "sentences": len(sentences),
        "edits": {
            "planned": planned_total,
            "applied": applied_total,
            "unchanged": sum(unchanged.values()),
            "rejected": sum(rejected.values()),
            "applied_share": round(applied_total / planned_total, 4) if planned_total else 0.0,
        },
        "per_kind": {
            k: {"planned": planned[k], "applied": applied[k], "unchanged": unchanged[k], "rejected": rejected[k]}
            for k in kinds
        },
        "severity": {
            "counts": {str(s): n for s, n in sorted(severity.items())},
            "minor_share": round(minor_count / applied_sum, 4) if applied_sum else 0.0,
            "major_share": round(1 - minor_count / applied_sum, 4) if applied_sum else 0.0,
        },
        "score_histogram": {str(s): scores.get(s, 0) for s in range(min(low, 0), 1)},
        "mean_score": round(sum(s * n for s, n in scores.items()) / num_rows, 4) if num_rows else 0.0,
    }


def summarize_sessions(sessions: list[dict]) -> dict[str, Any]:
    """Throughput over every process that wrote blocks: sentences/s and the share of time in model calls."""
    wall = sum(s["wall_seconds"] for s in sessions)
    sentences = sum(s["sentences"] for s in sessions)
    rows = sum(s["rows"] for s in sessions)
    forward: Counter = Counter()
    for s in sessions:
        for label, entry in s["model_seconds"].items():
            forward[label] += entry["seconds"]
    model_total = sum(forward.values())
    return {
        "sessions": len(sessions),
        "wall_seconds": round(wall, 3),
        # process CPU time: on a shared machine wall time also counts waiting for other jobs
        "cpu_seconds": round(sum(s.get("cpu_seconds", 0.0) for s in sessions), 3),
        "load_seconds": round(sum(s.get("load_seconds", 0.0) for s in sessions), 3),
        "sentences": sentences,
        "rows": rows,
        "sentences_per_second": round(sentences / wall, 4) if wall else None,
        "rows_per_second": round(rows / wall, 4) if wall else None,
        "model_seconds": {k: round(v, 3) for k, v in sorted(forward.items())},
        "model_share": round(model_total / wall, 4) if wall else None,
    }


def plot_histogram(histogram: dict[str, int], path: str | Path, title: str) -> Path:
    """Bar chart of variant scores, written beside the summary (Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = sorted(int(s) for s in histogram)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(scores, [histogram[str(s)] for s in scores], color="#4c72b0")
    ax.set_xlabel("score (sum of step severities)")
    ax.set_ylabel("variants")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


__all__ = ["plot_histogram", "summarize_rows", "summarize_sessions"]
