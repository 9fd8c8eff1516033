"""Reading training pairs (a synthesis dataset) and dev judgments into plain records, with actionable errors.

Training rows need ``reference``, ``candidate`` and ``score`` in [-25, 0]; other columns (history, config hash)
are ignored. Dev judgments use the shared judged-data schema: ``hyp``, ``refs``, ``scores[<key>]``, ``lp`` and
``item_id``; each (hyp, ref) pair becomes one record that remembers its row, item and human score. Judged files are
JSON Lines (``.jsonl``, ``.jsonl.gz``) or one JSON list of rows (``.json``, the form a small hand-written dev set
such as the packaged ``configs/sescore/sample_dev.json`` takes); a packaged file's name works from any folder.
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
        if (
            not isinstance(reference, str)
            or not reference.strip()
            or not isinstance(candidate, str)
            or not candidate.strip()
        ):
            raise InputError(f"synthesis dataset {path}: row {index} has an empty reference or candidate")
        if score is None or not math.isfinite(float(score)) or not MIN_SCORE <= float(score) <= MAX_SCORE:
            raise InputError(f"synthesis dataset {path}: row {index} has score {score!r}, outside [-25, 0]")
        records.append({"reference": reference, "candidate": candidate, "score": float(score)})
    if not records:
        raise InputError(f"synthesis dataset {path}: no rows")
    return records


def read_judged_rows(path: str | Path, what: str) -> list[dict]:
    """The rows of a judged file: JSON Lines (``.jsonl``, ``.jsonl.gz``) or a JSON list of row objects (``.json``).

    Why both: the shared data is JSON Lines, but a dev set shipped inside the package cannot be (tracked ``.jsonl``
    files are refused), and a hand-written set of a few dozen rows reads better as one indented list. A name that
    is not a file is looked up among the packaged configs (``configs/sescore/sample_dev.json``), like ``--config``.
    """
    from nlgmetrics.resources import config_path, expand_data

    path = expand_data(str(path))
    try:
        path = config_path(path)
    except FileNotFoundError:
        path = Path(path)  # the reader below reports the missing file in its own words
    return read_jsonl(path, what)  # JSON Lines, or a .json list of rows


def load_dev_judgments(path: str | Path, score_key: str = "mqm", items: int | None = None) -> list[dict[str, Any]]:
    """One record per (hyp, ref) pair of the first ``items`` items: {candidate, reference, row, item, human}."""
    return dev_records(first_items(read_judged_rows(path, "dev judgments"), items), score_key, f"dev judgments {path}")


def dev_records(rows: list[dict], score_key: str, what: str, max_refs: int | None = None) -> list[dict[str, Any]]:
    """Judged rows -> one record per (hyp, ref) pair: {candidate, reference, row, item, human, set=0}; at most
    ``max_refs`` references per row (SummEval has 11: selection does not need all of them every few steps)."""
    item_ids: dict[tuple, int] = {}
    records = []
    for row_index, row in enumerate(rows):
        where = f"{what}: item {row.get('item_id')!r} system {row.get('system')!r}"
        scores = row.get("scores")
        if not isinstance(scores, dict) or score_key not in scores:
            raise InputError(f"{where}: no human score 'scores.{score_key}'")
        human = scores[score_key]
        if not isinstance(human, (int, float)) or not math.isfinite(float(human)):
            raise InputError(f"{where}: human score {human!r} is not a number")
        hyp, refs = row.get("hyp"), row.get("refs")
        refs = [refs] if isinstance(refs, str) else refs
        if (
            not isinstance(hyp, str)
            or not isinstance(refs, list)
            or not refs
            or not all(isinstance(r, str) for r in refs)
        ):
            raise InputError(f"{where}: needs a 'hyp' string and a non-empty 'refs' list")
        item = item_ids.setdefault((row.get("lp"), row.get("item_id")), len(item_ids))
        for reference in refs[:max_refs]:
            records.append(
                {
                    "candidate": hyp,
                    "reference": reference,
                    "row": row_index,
                    "item": item,
                    "human": float(human),
                    "set": 0,
                }
            )
    return records


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def load_judged_pairs(
    path: str | Path, score_key: str | None = None, limit: int | None = None, seed: int = 13, min_gap: float = 0.0
) -> list[dict[str, Any]]:
    """Records {reference, better, worse} from human judgments, for fine-tuning on them (what COMET does).

    Two layouts (in any form ``read_judged_rows`` reads): WMT DARR relative-ranking pairs (``better{hyp}``,
    ``worse{hyp}``, ``refs``) and scored rows in the shared schema (``hyp``, ``refs``, ``scores[score_key]``), which
    become every pair of systems of one item whose human scores differ by more than ``min_gap``. ``limit`` keeps a
    seeded random subset of pairs (the DARR file is ordered by language pair, so a prefix would be one language).
    """
    import random
    from collections import defaultdict

    rows = read_judged_rows(path, "judged data")
    records: list[dict[str, Any]] = []
    if "better" in rows[0]:
        for number, row in enumerate(rows, 1):
            better, worse, refs = row.get("better") or {}, row.get("worse") or {}, row.get("refs")
            refs = [refs] if isinstance(refs, str) else refs
            if not (
                isinstance(better, dict)
                and isinstance(worse, dict)
                and _text(better.get("hyp"))
                and _text(worse.get("hyp"))
                and isinstance(refs, list)
                and refs
                and _text(refs[0])
            ):
                raise InputError(f"judged data {path}: row {number} needs better.hyp, worse.hyp and refs")
            records.append({"reference": refs[0], "better": better["hyp"], "worse": worse["hyp"]})
    else:
        if not score_key:
            raise InputError(f"judged data {path}: scored rows need the human score key (judged_score)")
        groups: dict[tuple, list[dict]] = defaultdict(list)
        for number, row in enumerate(rows, 1):
            score = (row.get("scores") or {}).get(score_key)
            if score is None:
                continue
            refs = row.get("refs")
            refs = [refs] if isinstance(refs, str) else refs
            if not _text(row.get("hyp")) or not isinstance(refs, list) or not refs or not _text(refs[0]):
                raise InputError(f"judged data {path}: row {number} needs a 'hyp' and 'refs'")
            groups[(row.get("lp"), row.get("item_id"))].append({"hyp": row["hyp"], "ref": refs[0], "s": float(score)})
        for group in groups.values():
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    if abs(a["s"] - b["s"]) > min_gap and a["hyp"] != b["hyp"]:
                        hi, lo = (a, b) if a["s"] > b["s"] else (b, a)
                        records.append({"reference": hi["ref"], "better": hi["hyp"], "worse": lo["hyp"]})
    if not records:
        raise InputError(f"judged data {path}: no usable pairs")
    if limit is not None and limit < len(records):
        picked = sorted(random.Random(seed).sample(range(len(records)), int(limit)))
        records = [records[i] for i in picked]
    return records


def load_dev_mix(
    mix: str | Path,
    half: str = "select",
    items_per_set: int | None = 40,
    data_root: str | Path | None = None,
    max_refs: int | None = 2,
) -> list[dict[str, Any]]:
    """Dev records of every set of a dev mix (``nlgmetrics.metaeval.devmix``), each tagged with its set, so
    selection takes the mean tau-like over sets instead of trusting one domain's slice."""
    from nlgmetrics.metaeval.devmix import mix_sets

    records: list[dict[str, Any]] = []
    rows_before = items_before = 0
    for set_index, (entry, rows) in enumerate(mix_sets(mix, half, data_root, items_per_set)):
        part = dev_records(rows, entry["human"], f"dev mix set {entry['name']}", max_refs)
        for record in part:
            record.update(row=record["row"] + rows_before, item=record["item"] + items_before, set=set_index)
        rows_before += len(rows)
        items_before += len({r["item"] for r in part}) if part else 0
        records.extend(part)
    return records
