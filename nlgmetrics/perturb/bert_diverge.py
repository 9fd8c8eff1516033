"""BERT-diverge: replace a share of words one by one with samples from a masked LM's top-k predictions.

At every step one not-yet-replaced word is masked and the MLM (role ``masked_lm``) proposes a whole word;
without access to the source the meaning drifts. Steps are batched across texts: step ``s`` of every text
that still has a step ``s`` goes through the model in one sorted, padded batch, and each text draws from its
own generator, so the result does not depend on the batch size or on the other texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.levels import at_least_one, check_share
from nlgmetrics.perturb.words import WordLayout, match_case

_EDGE_PUNCTUATION = "\"'“”‘’([{)]}.,;:!?-–—…"


@dataclass(frozen=True)
class _WordVocabulary:
    """Which vocabulary ids are whole alphabetic words, and their surface strings."""

    valid: np.ndarray  # bool [vocab]
    surface: tuple[str, ...]

    @classmethod
    def of(cls, tokenizer: Any, vocab_size: int) -> "_WordVocabulary":
        known = min(len(tokenizer), vocab_size)
        tokens = list(tokenizer.convert_ids_to_tokens(list(range(known)))) + [""] * (vocab_size - known)
        tokens = [t if isinstance(t, str) else "" for t in tokens]
        if any(t.startswith("Ġ") for t in tokens):
            marker = "Ġ"
        elif any(t.startswith("▁") for t in tokens):
            marker = "▁"
        else:
            marker = None  # WordPiece: continuations start with "##"
        special = set(getattr(tokenizer, "all_special_tokens", []))
        surface, valid = [], np.zeros(vocab_size, dtype=bool)
        for i, tok in enumerate(tokens):
            if marker is not None:
                word = tok[len(marker) :] if tok.startswith(marker) else ""
            else:
                word = "" if tok.startswith("##") else tok
            ok = bool(word) and word.isalpha() and tok not in special
            valid[i] = ok
            surface.append(word if ok else "")
        return cls(valid, tuple(surface))


def _split_edges(word: str) -> tuple[str, str, str]:
    core = word.strip(_EDGE_PUNCTUATION)
    if not core:
        return word, "", ""
    start = word.index(core)
    return word[:start], core, word[start + len(core) :]


def _max_length(loaded: Any) -> int:
    limits = [512, getattr(loaded.tokenizer, "model_max_length", 512) or 512]
    positions = getattr(loaded.model.config, "max_position_embeddings", None)
    if positions:
        limits.append(int(positions) - 2)
    return int(min(limits))


def bert_diverge_batch(
    texts: Sequence[str],
    rngs: Sequence[np.random.Generator],
    level: float,
    *,
    mlm: Any,
    top_k: int = 10,
    batch_size: int = 32,
    **context: Any,
) -> list[str | NotApplicable]:
    """Noised texts (or the ``NotApplicable`` refusal, per text) for a ``level`` share of words replaced."""
    import torch

    share = check_share(level)
    if mlm is None:
        raise ValueError("bert_diverge needs context 'mlm' (a masked_lm LoadedModel from modelroles)")
    if len(texts) != len(rngs):
        raise ValueError("bert_diverge_batch needs one generator per text")
    tokenizer, model = mlm.tokenizer, mlm.model
    if tokenizer.mask_token is None:
        raise ValueError(f"masked LM {mlm.spec!r} has no mask token")
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    vocabulary = _WordVocabulary.of(tokenizer, vocab_size)
    max_length = _max_length(mlm)
    half_window = max(4, max_length // 6)

    layouts = [WordLayout.of(t) for t in texts]
    words = [list(layout.words) for layout in layouts]
    plans: list[list[int]] = []
    for layout, rng in zip(layouts, rngs):
        candidates = [i for i, w in enumerate(layout.words) if _split_edges(w)[1].isalpha()]
        if not candidates or share == 0:
            plans.append([])
            continue
        n_steps = min(at_least_one(len(layout), share), len(candidates))
        plans.append([int(i) for i in rng.choice(candidates, size=n_steps, replace=False)])

    invalid = torch.tensor(~vocabulary.valid, device=mlm.device)
    for step in range(max((len(p) for p in plans), default=0)):
        active = [t for t, plan in enumerate(plans) if step < len(plan)]
        queries = {}
        for t in active:
            i = plans[t][step]
            lead, core, trail = _split_edges(words[t][i])
            window = (
                words[t][max(0, i - half_window) : i]
                + [lead + tokenizer.mask_token + trail]
                + words[t][i + 1 : i + 1 + half_window]
            )
            queries[t] = " ".join(window)
        active.sort(key=lambda t: len(queries[t]))
        for start in range(0, len(active), batch_size):
            chunk = active[start : start + batch_size]
            encoded = tokenizer(
                [queries[t] for t in chunk], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            ).to(mlm.device)
            with torch.inference_mode():
                logits = model(**encoded).logits
            for row, t in enumerate(chunk):
                where = (encoded["input_ids"][row] == tokenizer.mask_token_id).nonzero()
                if len(where) == 0:
                    continue  # the mask fell outside the model's window: leave this word
                scores = logits[row, int(where[0])].float().masked_fill(invalid, float("-inf"))
                i = plans[t][step]
                lead, core, trail = _split_edges(words[t][i])
                top = torch.topk(scores, k=min(top_k + 1, vocab_size))
                options = [
                    (float(s), vocabulary.surface[int(j)])
                    for s, j in zip(top.values, top.indices)
                    if np.isfinite(float(s)) and vocabulary.surface[int(j)].lower() != core.lower()
                ][:top_k]
                if not options:
                    continue
                logit = np.array([s for s, _ in options], dtype=np.float64)
                probs = np.exp(logit - logit.max())
                choice = int(rngs[t].choice(len(options), p=probs / probs.sum()))
                words[t][i] = lead + match_case(options[choice][1], core) + trail

    results: list[str | NotApplicable] = []
    for text, layout, new_words, plan in zip(texts, layouts, words, plans):
        new = layout.replaced(new_words).render() if plan else text
        if not plan:
            results.append(NotApplicable("no alphabetic word to replace"))
        elif new == text:
            results.append(NotApplicable("the masked LM proposed no different word"))
        else:
            results.append(new)
    return results


def bert_diverge(text: str, rng: np.random.Generator, level: float, *, mlm: Any = None, **context: Any) -> str:
    """Single-text form of :func:`bert_diverge_batch` (same output as the batch for the same generator)."""
    result = bert_diverge_batch([text], [rng], level, mlm=mlm, batch_size=1)[0]
    if isinstance(result, NotApplicable):
        raise result
    return result
