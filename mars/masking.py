"""Human-reference masking (MARS section 2.1): priorities, costs, and the knapsack that picks the blanks.

Priority v_i = alpha(POS_i) / idf(x_i): frequent words and detail words (adjectives, adverbs) go first.
Cost w_i = lcs_cost for words on the longest common subsequence with the context (they carry the context and
should survive), default_cost otherwise. For each ratio lambda the mask maximises sum v_i under
sum w_i <= floor(lambda * N), N = number of (non-space) reference words (of the first ``window_words`` of them
when that cost bound is set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from mars.config import MaskingConfig
from mars.idf import IdfTable
from mars.knapsack import solve_knapsack
from mars.lcs import lcs_positions
from mars.template import Template, template_from_mask


@dataclass(frozen=True)
class AnalysedText:
    """spaCy tokens of a text: words, the whitespace after each, and coarse POS tags."""

    words: tuple[str, ...]
    spaces: tuple[str, ...]
    pos: tuple[str, ...]


def analyse(nlp: Any, texts: Sequence[str], tag: bool = True, batch_size: int = 64) -> list[AnalysedText]:
    """Tokenise (and POS-tag when ``tag``) with one spaCy pipeline, batched."""
    if not tag:
        docs = [nlp.tokenizer(t) for t in texts]
    else:
        disable = [p for p in ("parser", "ner", "lemmatizer") if p in nlp.pipe_names]
        docs = list(nlp.pipe(texts, disable=disable, batch_size=batch_size))
    return [
        AnalysedText(tuple(t.text for t in d), tuple(t.whitespace_ for t in d), tuple(t.pos_ if tag else "" for t in d))
        for d in docs
    ]


def mask_priorities(words: Sequence[str], pos: Sequence[str], idf: IdfTable, config: MaskingConfig) -> list[float]:
    """alpha(POS) / max(idf, min_idf) per word (eq. 1)."""
    if len(words) != len(pos):
        raise ValueError(f"words and POS tags differ in length: {len(words)} != {len(pos)}")
    alpha: Mapping[str, float] = config.alpha
    out = []
    for word, tag in zip(words, pos):
        key = word.lower() if config.lowercase else word
        value = idf.idf(key, config.idf_smoothing)
        value = max(value, config.min_idf) if math.isfinite(value) else math.inf
        weight = float(alpha.get(tag, config.alpha_default))
        out.append(0.0 if math.isinf(value) else weight / value)
    return out


def mask_costs(reference: Sequence[str], context: Sequence[str], config: MaskingConfig) -> list[int]:
    """lcs_cost for reference words on the LCS with the context, default_cost for the rest."""
    norm = (lambda w: w.lower()) if config.lowercase else (lambda w: w)
    on_lcs = set(lcs_positions([norm(w) for w in context], [norm(w) for w in reference]))
    return [config.lcs_cost if i in on_lcs else config.default_cost for i in range(len(reference))]


def choose_mask(
    priorities: Sequence[float], costs: Sequence[int], ratio: float, maskable: Sequence[bool] | None = None
) -> list[bool]:
    """The knapsack mask for one ratio; budget floor(ratio * number of maskable words)."""
    if len(priorities) != len(costs):
        raise ValueError(f"priorities and costs differ in length: {len(priorities)} != {len(costs)}")
    maskable = [True] * len(costs) if maskable is None else list(maskable)
    candidates = [i for i, ok in enumerate(maskable) if ok]
    capacity = int(math.floor(ratio * len(candidates) + 1e-9))
    chosen = solve_knapsack([priorities[i] for i in candidates], [int(costs[i]) for i in candidates], capacity)
    mask = [False] * len(costs)
    for k in chosen:
        mask[candidates[k]] = True
    return mask


def window(maskable: Sequence[bool], words: int) -> list[bool]:
    """Keep only the first ``words`` maskable positions maskable (``words`` = 0: all of them).

    Why the start of the reference: the cloze LM reads the reference left to right up to its last blank and
    never past it, so a window at the start is the only placement that bounds the LM's reading as well as its
    writing (a later window would still make it read everything before).
    """
    if words <= 0:
        return list(maskable)
    out, seen = [], 0
    for ok in maskable:
        out.append(bool(ok) and seen < words)
        seen += bool(ok)
    return out


def build_templates(
    reference: AnalysedText,
    context_words: Sequence[str],
    ratios: Sequence[float],
    idf: IdfTable,
    config: MaskingConfig,
) -> list[Template]:
    """One template per ratio (ratio 0 gives the unmasked reference as a single text block)."""
    priorities = mask_priorities(reference.words, reference.pos, idf, config)
    costs = mask_costs(reference.words, context_words, config)
    maskable = [bool(w.strip()) and tag not in config.unmaskable_pos for w, tag in zip(reference.words, reference.pos)]
    maskable = window(maskable, config.window_words)
    templates = []
    for ratio in ratios:
        mask = choose_mask(priorities, costs, ratio, maskable) if ratio > 0 else [False] * len(costs)
        templates.append(template_from_mask(reference.words, reference.spaces, mask, ratio))
    return templates
