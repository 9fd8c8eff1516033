"""Reading training pairs (a synthesis dataset) and dev judgments into plain records, with actionable errors.

Training rows need ``reference``, ``candidate`` and ``score`` in [-25, 0]; other columns (history, config hash)
are ignored. Dev judgments use the shared judged-data schema: ``hyp``, ``refs``, ``scores[<key>]``, ``lp`` and
``item_id``; each (hyp, ref) pair becomes one record that remembers its row, item and human score.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from nlgmetrics.metaeval import InputError, first_items, read_jsonl
from sescore.regressor.scale import MAX_SCORE, MIN_SCORE

REQUIRED_COLUMNS = ("reference", "candidate", "score")


LABELS = ("severity", "uniform")


def load_synthesis(path: str | Path, limit: int | None = None, labels: str = "severity") -> list[dict[str, Any]]:
    """Records {reference, candidate, score} from a ``datasets`` folder written with ``save_to_disk``.

    ``labels="uniform"`` is the paper's "w/o severity" ablation: every applied edit counts -1 whatever the NLI
    said, so the target is minus the number of applied edits (the dataset's ``num_applied`` column). Training
    on the same rows with both settings isolates what the severity labels contribute.
    """
    if labels not in LABELS:
        raise ValueError(f"labels must be one of {', '.join(LABELS)}, got {labels!r}")
    from datasets import Dataset, DatasetDict, load_from_disk

    path = Path(path)
    if not path.is_dir():
        raise InputError(f"synthesis dataset {path}: no such directory (run `train.py synthesize` first)")
    try:
        data = load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as error:
        raise InputError(f"synthesis dataset {path}: not a saved `datasets` dataset ({error})") from error
    if isinstance(data, DatasetDict):
        if len(data) != 1:
            raise InputError(f"synthesis dataset {path}: has splits {list(data)}; point at one split's folder")
        data = next(iter(data.values()))
    if not isinstance(data, Dataset):
        raise InputError(f"synthesis dataset {path}: expected a Dataset, found {type(data).__name__}")
    required = REQUIRED_COLUMNS + (("num_applied",) if labels == "uniform" else ())
    missing = [c for c in required if c not in data.column_names]
    if missing:
        raise InputError(f"synthesis dataset {path}: missing column(s) {missing}; has {data.column_names}")
    if limit is not None:
        data = data.select(range(min(int(limit), len(data))))
    columns = data.select_columns(list(required)).to_dict()
    scores = columns["score"] if labels == "severity" else [-int(n) for n in columns["num_applied"]]
    records = []
    for index, (reference, candidate, score) in enumerate(zip(columns["reference"], columns["candidate"], scores)):
        if not isinstance(reference, str) or not reference.strip() or not isinstance(candidate, str) or not candidate.strip():
            raise InputError(f"synthesis dataset {path}: row {index} has an empty reference or candidate")
        if score is None or not math.isfinite(float(score)) or not MIN_SCORE <= float(score) <= MAX_SCORE:
            raise InputError(f"synthesis dataset {path}: row {index} has score {score!r}, outside [-25, 0]")
        records.append({"reference": reference, "candidate": candidate, "score": float(score)})
    if not records:
        raise InputError(f"synthesis dataset {path}: no rows")
    return records


def load_dev_judgments(path: str | Path, score_key: str = "mqm", items: int | None = None) -> list[dict[str, Any]]:
    """One record per (hyp, ref) pair of the first ``items`` items: {candidate, reference, row, item, human}."""
    rows = first_items(read_jsonl(path, "dev judgments"), items)
    item_ids: dict[tuple, int] = {}
    records = []
    for row_index, row in enumerate(rows):
        where = f"dev judgments {path}: item {row.get('item_id')!r} system {row.get('system')!r}"
        scores = row.get("scores")
        if not isinstance(scores, dict) or score_key not in scores:
            raise InputError(f"{where}: no human score 'scores.{score_key}'")
        human = scores[score_key]
        if not isinstance(human, (int, float)) or not math.isfinite(float(human)):
            raise InputError(f"{where}: human score {human!r} is not a number")
        hyp, refs = row.get("hyp"), row.get("refs")
        refs = [refs] if isinstance(refs, str) else refs
        if not isinstance(hyp, str) or not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise InputError(f"{where}: needs a 'hyp' string and a non-empty 'refs' list")
        item = item_ids.setdefault((row.get("lp"), row.get("item_id")), len(item_ids))
        for reference in refs:
            records.append({"candidate": hyp, "reference": reference, "row": row_index, "item": item,
                            "human": float(human)})
    return records
