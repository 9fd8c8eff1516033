"""Knowledge distillation for the NLI trainer: a stronger teacher's probabilities as soft labels.

The English NLI data here is 40k gold pairs, too few for a small multilingual encoder to reach the targets on its
own (the two-epoch me5 adapter: SNLI 0.759), while ``packaged:nli-mpnet`` reaches 0.856 but is English only and 7x
slower. Distillation lets the small model learn the teacher's full distribution over (e, n, c) on the gold pairs
(which carries more than the hard label) and on extra pairs that have no gold label at all, such as the STS-B
sentence pairs in ``../shared/data/pairs/``. One such epoch (``configs/nli/me5_distill.yaml``) gave today's
``packaged:nli-me5``: SNLI 0.776, SICK 0.863, Breaking-NLI 0.952, and a better MENLI on the adversarial suite.

Teacher probabilities are computed once, in length-sorted batches, and kept in an append-only pair file
(``nli.cache.PairCache``) named by the teacher's weight hash: an interrupted labelling run resumes, and a second
training run with the same teacher costs nothing. No pair containing a sentence of a test file is used, so extra
pairs cannot leak test sentences.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from nlgmetrics.nli.cache import PairCache, pair_file

NO_LABEL = -100  # cross-entropy's ignore_index: the pair is learned from the teacher only


def read_pair_file(path: str | Path, splits: Sequence[str] | None = None) -> list[dict]:
    """Pairs for distillation from a JSONL file in either schema of ``../shared/data``.

    ``premise``/``hypothesis`` rows keep a gold ``label`` (0, 1, 2) when they have one; sentence-pair rows
    (``s1``/``s2``, e.g. STS-B) give both directions, unlabelled. ``splits`` keeps only rows whose ``split`` is
    listed (e.g. train and dev of STS-B), so a benchmark's test half never enters training.
    """
    rows: list[dict] = []
    from nlgmetrics.resources import expand_data

    path = expand_data(str(path))
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
                rows.append(
                    {
                        "premise": row["premise"],
                        "hypothesis": row["hypothesis"],
                        "label": label if label in (0, 1, 2) else NO_LABEL,
                        "source": row.get("source", source),
                    }
                )
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


def teacher_probabilities(
    teacher: Any,
    rows: Sequence[dict],
    cache_dir: str | Path,
    chunk: int = 2048,
    progress: bool = True,
    desc: str = "teacher",
) -> np.ndarray:
    """[N, 3] canonical (e, n, c) probabilities of ``teacher`` (an ``NLIModel``) for ``rows``, cached on disk.

    The cache file is ``<cache_dir>/<teacher hash>.jsonl``, a ``PairCache`` pair file: pairs already in it are not
    scored again, each ``chunk`` of new pairs is appended as soon as it is scored (a kill loses at most one chunk),
    and a file of another model, a corrupt line or a file that is not a pair cache is refused by name rather than
    silently cut. Any NLI model can be the "teacher": bench scripts use this as their resumable on-disk pair cache
    (``desc`` labels the bar).
    """
    from tqdm.auto import tqdm

    cache = PairCache(teacher, max_pairs=max(1, chunk), path=pair_file(cache_dir, teacher.hash))
    premises = [r["premise"] for r in rows]
    hypotheses = [r["hypothesis"] for r in rows]
    pending = [k for k in dict.fromkeys(zip(premises, hypotheses)) if not cache.stored(*k)]
    with tqdm(total=len(pending), desc=f"{desc} {teacher.spec}", unit="pair", disable=not progress) as bar:
        for start in range(0, len(pending), chunk):
            part = pending[start : start + chunk]
            cache.predict_proba([p for p, _ in part], [h for _, h in part])
            bar.update(len(part))
    return cache.predict_proba(premises, hypotheses).astype(np.float32).reshape(len(rows), 3)
