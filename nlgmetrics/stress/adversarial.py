"""Build a MENLI-style adversarial preference suite from any data set with two references per item.

For every item and error type: the anchor is reference A, the good candidate (``hyp_para``) is reference B (a
human paraphrase of the anchor), the bad candidate (``hyp_adv_based``) is the anchor with one error. A metric
should prefer the paraphrase: m(anchor, hyp_para) > m(anchor, hyp_adv_based). When the item has a source, the
reference-free variant is added: ``r`` (reference B) and ``hyp_adv_free`` (reference B with the error), to be
compared as m(src, r) > m(src, hyp_adv_free). For number errors the paraphrase writes its numbers in words
(num2words), so that copying digits cannot win. Output rows have the fields of MENLI's released data.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from nlgmetrics.perturb import MENLI_CODES, NotApplicable, default_lexicon, get_perturbation, spell_out_numbers

ERROR_CODES = (
    "add",
    "drop",
    "neg",
    "num",
    "pron",
    "word_NN",
    "word_JJ",
    "word_VB",
    "name",
    "typo",
    "jumble",
    "subject_verb_dis",
)
OMISSION_SHARE = (0.01, 0.2)  # MENLI drops a contiguous 1-20% of the words


def _check_rows(rows: Sequence[Mapping[str, Any]], anchor_ref: int, para_ref: int) -> None:
    if anchor_ref == para_ref:
        raise ValueError("anchor and paraphrase must be different references")
    for row in rows:
        refs = row.get("refs")
        if not isinstance(refs, (list, tuple)) or len(refs) <= max(anchor_ref, para_ref):
            raise ValueError(
                f"item {row.get('item_id')!r}: needs references {anchor_ref} and {para_ref} "
                f"(anchor and paraphrase), has {len(refs) if isinstance(refs, (list, tuple)) else 'no'} refs"
            )


def make_adversarial(
    rows: Sequence[Mapping[str, Any]],
    rng: np.random.Generator,
    types: Sequence[str] = ERROR_CODES,
    *,
    nlp: Any = None,
    anchor_ref: int = 0,
    para_ref: int = 1,
    dataset: str | None = None,
    batch_size: int = 64,
    stats: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """MENLI-format adversarial rows (grouped by error type) for every item an error type applies to.

    ``rows`` need ``refs`` (two or more), and may have ``src``, ``item_id``, ``dataset``. ``nlp`` is a spaCy
    Language or spec (default ``packaged:en_core_web_sm``). Items an error cannot apply to are left out for
    that error; pass a dict as ``stats`` to receive per-error counts of made and skipped rows.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    unknown = [t for t in types if t not in MENLI_CODES]
    if unknown:
        raise ValueError(f"unknown error type(s) {unknown}; known: {', '.join(ERROR_CODES)}")
    _check_rows(rows, anchor_ref, para_ref)
    if nlp is None or isinstance(nlp, str):
        from nlgmetrics.modelroles import load_spacy

        nlp = load_spacy(nlp or "packaged:en_core_web_sm")
    anchors = [str(row["refs"][anchor_ref]) for row in rows]
    paras = [str(row["refs"][para_ref]) for row in rows]
    anchor_docs = list(nlp.pipe(anchors, batch_size=batch_size))
    para_docs = list(nlp.pipe(paras, batch_size=batch_size))
    lexicon = default_lexicon()
    base = int(rng.integers(0, 2**63 - 1))
    made: Counter[str] = Counter()
    skipped: dict[str, Counter[str]] = {code: Counter() for code in types}
    out: list[dict[str, Any]] = []
    for t, code in enumerate(types):
        perturbation = get_perturbation(MENLI_CODES[code])
        for i, row in enumerate(rows):
            if anchors[i].strip() == paras[i].strip():
                skipped[code]["paraphrase identical to anchor"] += 1
                continue
            item_rng = np.random.default_rng([base, t, i])
            level = float(item_rng.uniform(*OMISSION_SHARE)) if code == "drop" else perturbation.default_levels[0]
            try:
                adv_based = perturbation(anchors[i], item_rng, level, doc=anchor_docs[i], lexicon=lexicon)
            except NotApplicable as refusal:
                skipped[code][refusal.reason] += 1
                continue
            src = str(row.get("src") or "")
            record: dict[str, Any] = {
                "dataset": dataset or f"{row.get('dataset', 'data')}-adv",
                "item_id": str(row.get("item_id", i)),
                "error": code,
                "src": src,
                "refs": [anchors[i]],
                "hyp_para": spell_out_numbers(paras[i], para_docs[i]) if code == "num" else paras[i],
                "hyp_adv_based": adv_based,
            }
            if src.strip():
                try:
                    record["hyp_adv_free"] = perturbation(paras[i], item_rng, level, doc=para_docs[i], lexicon=lexicon)
                    record["r"] = paras[i]
                except NotApplicable:
                    pass  # reference-based comparison only for this item
            out.append(record)
            made[code] += 1
    if stats is not None:
        stats.update({code: {"made": made[code], "skipped": dict(skipped[code])} for code in types})
    return out
