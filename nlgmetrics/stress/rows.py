"""Which texts a blind-spot run perturbs and scores against: gold hypotheses, references, the recorded set-up."""

from __future__ import annotations

from pathlib import Path

from nlgmetrics.metaeval.rows import multi_reference_rows, one_row_per_item
from nlgmetrics.metaeval.textio import InputError, read_jsonl


def stress_rows(
    data: str | Path,
    *,
    gold_ref: int = 0,
    gold_system: str | None = None,
    ref_index: str = "1",
    limit: int | None = None,
    aggregation: str = "max",
    keep_last_sentence: bool = False,
    sample: int | None = None,
    sample_seed: int = 0,
) -> tuple[list[str], list, list[dict], dict]:
    """Gold hypotheses, references (a string, or every reference of the item), rows and the recorded set-up.

    Default: reference ``gold_ref`` is the gold hypothesis, reference ``ref_index`` the reference. With
    ``gold_system`` the gold hypothesis is that system's ``hyp`` (the paper's CNN/DM set-up: the original
    highlights, THumB's system ``Human-H``); ``ref_index="all"`` scores against every other reference at once.

    Args:
        data: a JSONL file of judged or multi-reference rows.
        gold_ref: which reference is the gold hypothesis (without ``gold_system``).
        gold_system: take the gold hypothesis from this system's rows instead.
        ref_index: which reference is scored against (a number as text), or ``"all"``.
        limit: the first N items.
        aggregation: the multi-reference aggregation, recorded in the set-up.
        keep_last_sentence: recorded in the set-up (open-ended text).
        sample: keep this many items, drawn without replacement by ``numpy.random.default_rng(sample_seed)``
            from the usable items (after ``limit``), in file order. Why: a run on every item can cost hours on a
            CPU; a seeded sample gives every metric the same items, and unlike the first N items it does not
            lean on the start of a file (one talk, one document).
        sample_seed: the seed of that draw.

    Returns:
        ``(gold, refs, rows, setup)``.
    """
    every = ref_index == "all"
    if not every and not str(ref_index).isdigit():
        raise InputError(f"--ref-index must be a reference number or 'all', got {ref_index!r}")
    index = None if every else int(ref_index)
    if gold_system is not None:
        rows = [r for r in read_jsonl(data) if r.get("system") == gold_system]
        if not rows:
            raise InputError(f"{data}: no row of system {gold_system!r} (field 'system')")
        rows = [
            r
            for r in one_row_per_item(rows, limit)
            if isinstance(r.get("hyp"), str)
            and r["hyp"].strip()
            and isinstance(r.get("refs"), list)
            and len(r["refs"]) > (0 if every else index)
        ]
        if not rows:
            raise InputError(f"{data}: no {gold_system!r} row has a hypothesis and the references asked for")
        gold = [r["hyp"] for r in rows]
        refs = [list(r["refs"]) if every else r["refs"][index] for r in rows]
        setup = {"gold": f"hyp of system {gold_system!r}", "references": "all refs" if every else f"refs[{index}]"}
    else:
        if index == gold_ref:
            raise InputError("--gold-ref and --ref-index must name different references")
        rows = multi_reference_rows(read_jsonl(data), max(gold_ref, 1 if every else index), limit, str(data))
        gold = [r["refs"][gold_ref] for r in rows]
        refs = [[x for k, x in enumerate(r["refs"]) if k != gold_ref] if every else r["refs"][index] for r in rows]
        setup = {
            "gold": f"refs[{gold_ref}]",
            "references": f"all refs but refs[{gold_ref}]" if every else f"refs[{index}]",
        }
    if every:
        counts = sorted({len(r) for r in refs})
        setup["references"] += (
            f" ({counts[0]}-{counts[-1]} per item)" if len(counts) > 1 else f" ({counts[0]} per item)"
        )
        setup["multi-reference aggregation"] = (
            f"{aggregation} (menli, bertscore-p/-r/-f); bertscore: best F1; "
            "sescore: best score; bleu, chrf: their own multi-reference rule"
        )
    if sample is not None:
        if sample < 1 or sample > len(rows):
            raise InputError(f"{data}: --sample {sample} asks for 1 to {len(rows)} items (the usable items there)")
        import numpy as np

        keep = np.sort(np.random.default_rng(sample_seed).choice(len(rows), size=sample, replace=False)).tolist()
        usable = len(rows)
        gold, refs, rows = [gold[i] for i in keep], [refs[i] for i in keep], [rows[i] for i in keep]
        setup["sample"] = {
            "items": sample,
            "seed": sample_seed,
            "of": usable,
            "item_ids": [r.get("item_id") for r in rows],
        }
    setup.update({"items": len(rows), "limit": limit, "keep_last_sentence": keep_last_sentence})
    return gold, refs, rows, setup
