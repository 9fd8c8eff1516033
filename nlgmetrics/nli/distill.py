"""Knowledge distillation for the NLI trainer: a stronger teacher's probabilities as soft labels.

The English NLI data here is 40k gold pairs, too few for a small multilingual encoder to reach the targets on its
own (the two-epoch me5 adapter: SNLI 0.759), while ``packaged:nli-mpnet`` reaches 0.856 but is English only and 7x
slower. Distillation lets the small model learn the teacher's full distribution over (e, n, c) on the gold pairs
(which carries more than the hard label) and on extra pairs that have no gold label at all, such as the STS-B
sentence pairs in ``../shared/data/pairs/``. One such epoch (``configs/nli/me5_distill.yaml``) gave today's
``packaged:nli-me5``: SNLI 0.776, SICK 0.863, Breaking-NLI 0.952, and a better MENLI on the adversarial suite.

Teacher probabilities are computed once, in length-sorted batches, and kept in an append-only cache named by the
teacher's weight hash: an interrupted labelling run resumes, and a second training run with the same teacher
costs nothing. No pair containing a sentence of a test file is used, so extra pairs cannot leak test sentences.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from nlgmetrics.nli.cache import pair_key, pair_record, read_pair_record

NO_LABEL = -100  # cross-entropy's ignore_index: the pair is learned from the teacher only


def read_pair_file(path: str | Path, splits: Sequence[str] | None = None) -> list[dict]:
    """Pairs for distillation from a JSONL file in either schema of ``../shared/data``.

    ``premise``/``hypothesis`` rows keep a gold ``label`` (0, 1, 2) when they have one; sentence-pair rows
    (``s1``/``s2``, e.g. STS-B) give both directions, unlabelled. ``splits`` keeps only rows whose ``split`` is
    listed (e.g. train and dev of STS-B), so a benchmark's test half never enters training.
    """
    rows: list[dict] = []
    source = Path(path).stem
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if splits is not None and row.get("split") not in splits:
                continue
            if "premise" in row and "hypothesis" in row:
                label = row.get("label")
                rows.append({"premise": row["premise"], "hypothesis": row["hypothesis"],
                             "label": label if label in (0, 1, 2) else NO_LABEL, "source": row.get("source", source)})
            elif "s1" in row and "s2" in row:
                for a, b in ((row["s1"], row["s2"]), (row["s2"], row["s1"])):
                    rows.append({"premise": a, "hypothesis": b, "label": NO_LABEL, "source": source})
            else:
                raise ValueError(f"{path}:{number}: a pair needs premise/hypothesis or s1/s2, got keys {sorted(row)}")
    return rows


def without_sentences(rows: Iterable[dict], banned: set[str]) -> list[dict]:
    """Rows none of whose texts is in ``banned`` (whitespace and case folded)."""
    def norm(text: str) -> str:
        return " ".join(str(text).lower().split())

    banned = {norm(t) for t in banned}
    return [r for r in rows if norm(r["premise"]) not in banned and norm(r["hypothesis"]) not in banned]


def _read_cache(path: Path) -> dict[str, list[float]]:
    known: dict[str, list[float]] = {}
    if not path.is_file():
        return known
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                key, probs = read_pair_record(line)
            except ValueError:
                break  # a line cut by a kill: everything before it is good, the rest is recomputed
            known[key] = probs
    return known


def teacher_probabilities(teacher: Any, rows: Sequence[dict], cache_dir: str | Path, chunk: int = 2048,
                          progress: bool = True, desc: str = "teacher") -> np.ndarray:
    """[N, 3] canonical (e, n, c) probabilities of ``teacher`` (an ``NLIModel``) for ``rows``, cached on disk.

    The cache file is ``<cache_dir>/<teacher hash>.jsonl``; pairs already in it are not scored again. Any NLI model
    can be the "teacher": bench scripts use this as their resumable on-disk pair cache (``desc`` labels the bar).
    """
    from tqdm.auto import tqdm

    path = Path(cache_dir) / f"{teacher.hash[:16]}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    known = _read_cache(path)
    keys = [pair_key(r["premise"], r["hypothesis"]) for r in rows]
    todo: dict[str, tuple[str, str]] = {}
    for key, row in zip(keys, rows):
        if key not in known and key not in todo:
            todo[key] = (row["premise"], row["hypothesis"])
    pending = list(todo.items())
    if pending:
        # rewrite the good part first, so a line cut by an earlier kill does not hide what comes after it
        with open(path, "w", encoding="utf-8") as handle:
            for key, probs in known.items():
                handle.write(pair_record(key, probs))
        bar = tqdm(total=len(pending), desc=f"{desc} {teacher.spec}", unit="pair", disable=not progress)
        with open(path, "a", encoding="utf-8") as handle:
            for start in range(0, len(pending), chunk):
                part = pending[start : start + chunk]
                probs = teacher.predict_proba([p for _, (p, _) in part], [h for _, (_, h) in part])
                for (key, _), row_probs in zip(part, probs):
                    known[key] = [float(x) for x in row_probs]
                    handle.write(pair_record(key, known[key]))
                handle.flush()
                bar.update(len(part))
        bar.close()
    return np.asarray([known[k] for k in keys], dtype=np.float32).reshape(len(rows), 3)
