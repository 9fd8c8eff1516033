"""A plain Python metric for the evaluate.py callable tests: Jaccard overlap of word sets (order-blind)."""


def jaccard(hyps, refs, srcs):
    return [
        len(set(h.split()) & set(r.split())) / max(1, len(set(h.split()) | set(r.split()))) for h, r in zip(hyps, refs)
    ]
