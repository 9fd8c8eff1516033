"""Pick the severity threshold for an NLI model from hand-made minor and major edits.

The paper's 0.9 was tuned for roberta-large-mnli; a smaller or differently trained NLI model puts the same
edits elsewhere on the probability scale. Calibration scores pairs whose severity is known (a comma, an article,
an adjacent swap or a synonym is minor; a negation, a changed number or entity, a deleted noun phrase is major),
takes the weaker direction of the bidirectional entailment (as labelling does), and chooses the threshold that
best separates the two groups (balanced accuracy, then the widest margin). The result is written into the
config's ``severity`` block, with a record of which NLI model (and weight hash) it holds for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from sescore.synthesis.severity import agreement, entailment_both_ways

MINOR_KINDS = ("comma", "article", "adjacent_swap", "synonym")
MAJOR_KINDS = ("negation", "number", "entity", "deleted_np")


@dataclass(frozen=True)
class CalibrationPair:
    original: str
    edited: str
    kind: str
    severity: str  # minor | major


def load_pairs(path: str | Path) -> list[CalibrationPair]:
    """Pairs from YAML/JSON: a list of {original, edited, kind}; the severity follows from the kind."""
    import yaml

    path = Path(path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    items = raw.get("pairs") if isinstance(raw, dict) else raw
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path}: expected a non-empty list under 'pairs'")
    pairs = []
    for number, item in enumerate(items, 1):
        try:
            kind = item["kind"]
            original, edited = item["original"], item["edited"]
        except (KeyError, TypeError):
            raise ValueError(f"{path}: pair {number} needs original, edited and kind") from None
        if kind not in MINOR_KINDS + MAJOR_KINDS:
            raise ValueError(f"{path}: pair {number} has unknown kind '{kind}'; kinds: {MINOR_KINDS + MAJOR_KINDS}")
        if original.strip() == edited.strip():
            raise ValueError(f"{path}: pair {number} does not change the sentence")
        pairs.append(CalibrationPair(original, edited, kind, "minor" if kind in MINOR_KINDS else "major"))
    if not any(p.severity == "minor" for p in pairs) or not any(p.severity == "major" for p in pairs):
        raise ValueError(f"{path}: calibration needs both minor and major pairs")
    return pairs


def choose_threshold(scores: Sequence[float], is_minor: Sequence[bool]) -> tuple[float, float]:
    """(threshold, balanced accuracy): minor should score above the threshold, major at or below it.

    Candidates are midpoints between consecutive distinct scores (plus one below/above all); ties in balanced
    accuracy go to the threshold with the widest gap to the nearest score, so it is not balanced on one pair.
    """
    scores = np.asarray(scores, dtype=np.float64)
    is_minor = np.asarray(is_minor, dtype=bool)
    distinct = np.unique(scores)
    candidates = np.concatenate([[distinct[0] - 1e-3], (distinct[1:] + distinct[:-1]) / 2, [distinct[-1] + 1e-3]])
    best_key: tuple[float, float, float] | None = None
    best = (float(candidates[0]), 0.0)
    for t in candidates:
        minor_hit = float(np.mean(scores[is_minor] > t))
        major_hit = float(np.mean(scores[~is_minor] <= t))
        balanced = (minor_hit + major_hit) / 2
        key = (round(balanced, 9), float(np.min(np.abs(scores - t))), -abs(float(t) - 0.9))
        if best_key is None or key > best_key:
            best_key, best = key, (float(t), balanced)
    return best


def calibrate(nli: Any, pairs: Sequence[CalibrationPair], mode: str = "absolute", batch_size: int = 64) -> dict:
    """Score the pairs with ``nli`` and report the chosen threshold with hit rates per kind."""
    originals = [p.original for p in pairs]
    edited = [p.edited for p in pairs]
    forward, backward = entailment_both_ways(nli, originals, edited, batch_size)
    selves = None
    if mode == "ratio":
        selves, _ = entailment_both_ways(nli, originals, originals, batch_size)
    scores = agreement(forward, backward, selves, mode)
    is_minor = np.array([p.severity == "minor" for p in pairs])
    threshold, balanced = choose_threshold(scores, is_minor)
    threshold = max(threshold, 1e-4)  # a config threshold must be positive
    per_kind = {}
    for kind in MINOR_KINDS + MAJOR_KINDS:
        chosen = [i for i, p in enumerate(pairs) if p.kind == kind]
        if not chosen:
            continue
        minor_kind = kind in MINOR_KINDS
        hits = [(scores[i] > threshold) == minor_kind for i in chosen]
        per_kind[kind] = {
            "pairs": len(chosen),
            "hit_rate": round(float(np.mean(hits)), 4),
            "mean_score": round(float(np.mean(scores[chosen])), 4),
        }
    paper = 0.9 if mode == "absolute" else None
    report = {
        "nli": getattr(nli, "spec", "?"),
        "nli_hash": getattr(nli, "hash", "?"),
        "mode": mode,
        "threshold": round(threshold, 4),
        "balanced_accuracy": round(balanced, 4),
        "minor_hit_rate": round(float(np.mean(scores[is_minor] > threshold)), 4),
        "major_hit_rate": round(float(np.mean(scores[~is_minor] <= threshold)), 4),
        "per_kind": per_kind,
        "pairs": len(pairs),
    }
    if paper is not None:
        report["paper_threshold_balanced_accuracy"] = round(
            (float(np.mean(scores[is_minor] > paper)) + float(np.mean(scores[~is_minor] <= paper))) / 2, 4
        )
    return report


def write_threshold(config_path: str | Path, report: dict) -> None:
    """Store the chosen threshold, mode and a calibration record in the config's ``severity`` block, editing
    only those lines so the file's comments survive; the result is re-validated."""
    from sescore.synthesis.config import load_config

    path = Path(config_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if re.match(r"^severity:\s*(#.*)?$", line))
    except StopIteration:
        raise ValueError(f"{path}: no top-level 'severity:' block to write the threshold into") from None
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("#")
        ),
        len(lines),
    )
    indent = "  "
    record = {
        k: report[k]
        for k in ("nli", "nli_hash", "mode", "balanced_accuracy", "minor_hit_rate", "major_hit_rate", "pairs")
    }
    values = {
        "threshold": str(report["threshold"]),
        "mode": report["mode"],
        "calibration": json.dumps(record, sort_keys=True),
    }
    for key, value in values.items():
        pattern = re.compile(rf"^(\s+){key}:[^#]*?(\s+#.*)?$")
        found = next((i for i in range(start + 1, end) if pattern.match(lines[i])), None)
        if found is not None:
            match = pattern.match(lines[found])
            indent, comment = match.group(1), match.group(2) or ""
            lines[found] = f"{indent}{key}: {value}{comment}"
        else:
            lines.insert(end, f"{indent}{key}: {value}")
            end += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load_config(path)


__all__ = ["CalibrationPair", "calibrate", "choose_threshold", "load_pairs", "write_threshold"]
