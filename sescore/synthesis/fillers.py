"""Models that write the new words of insert/replace edits, one class per model role behind one interface.

- ``MaskedLMFiller`` (XLM-R style, the paper's MLM edits): one mask at the slot, one token picked uniformly
  among the model's top 4.
- ``Seq2SeqFiller`` (mBART/BART style, the paper's span edits): one ``<mask>`` at the slot, the model
  regenerates the sentence; the new span is what it wrote between the untouched left and right context.
- ``CausalLMFiller`` (the offline stand-in for both): sampled from the left context only, among the top k:
  one token (``single_token``, standing in for the masked LM) or a span of the requested number of words.

Every filler receives all requests of a step at once (batched across sentences, sorted by length, order
restored) and draws its random picks from a generator seeded per request, so a fill never depends on which
other requests shared its batch. Inputs are padded by hand; shared tokenizers are never mutated.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from nlgmetrics.modelroles.kvcache import returned_cache, with_cache
from sescore.synthesis.config import FillerConfig
from sescore.synthesis.stopwatch import Stopwatch
from sescore.synthesis.tokens import join_tokens, normalize_whitespace, split_tokens


@dataclass(frozen=True)
class FillRequest:
    """Fill the slot between ``left`` and ``right`` (texts). ``words``: how many words to write (0 = the model
    decides, seq2seq; ignored by single-token fillers); ``seed``: this request's own random stream."""

    left: str
    right: str
    words: int
    seed: int
    context: str = ""  # the whole current text, if known: lets causal single-token fills share a forward pass


class Filler(Protocol):
    role: str
    spec: str
    hash: str
    max_tokens: int

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    def fill(self, requests: Sequence[FillRequest], clock: Stopwatch | None = None) -> list[str]: ...


# ---------------------------------------------------------------- pure helpers (tested without models)


def pick_token(candidate_ids: np.ndarray, candidate_logits: np.ndarray, u: float, pick: str) -> int:
    """Choose one of the top-k candidates with one uniform ``u``.

    Candidates are put in id order first, so the pick depends on which tokens are in the top k, not on how a
    batched kernel happened to order near-ties.
    """
    order = np.argsort(candidate_ids, kind="stable")
    ids, logits = candidate_ids[order], candidate_logits[order].astype(np.float64)
    if pick == "uniform":
        return int(ids[min(int(u * len(ids)), len(ids) - 1)])
    probs = np.exp(logits - logits.max())
    cdf = np.cumsum(probs / probs.sum())
    return int(ids[min(int(np.searchsorted(cdf, u, side="right")), len(ids) - 1)])


def _is_punctuation(text: str) -> bool:
    return bool(text) and all(unicodedata.category(ch).startswith(("P", "S")) for ch in text)


def allowed_token_mask(tokenizer: Any, whole_words: bool) -> tuple[np.ndarray, np.ndarray]:
    """(allowed anywhere, allowed to start a fill): never special tokens or tokens that decode to nothing;
    with ``whole_words`` the first token of a fill must begin a word (▁/Ġ prefix, or no ## in WordPiece) or
    be punctuation, so a fill never glues a word piece onto its left neighbour."""
    size = len(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(size)))
    special = set(tokenizer.all_special_ids)
    if any(p and p.startswith("▁") for p in pieces):
        starts = lambda p: p.startswith("▁")  # noqa: E731 - sentencepiece
    elif any(p and p.startswith("Ġ") for p in pieces):
        starts = lambda p: p.startswith("Ġ")  # noqa: E731 - byte-level BPE
    else:
        starts = lambda p: not p.startswith("##")  # noqa: E731 - WordPiece
    anywhere = np.zeros(size, dtype=bool)
    first = np.zeros(size, dtype=bool)
    # one batched decode (fast tokenizers do it in Rust): XLM-R has 250k pieces
    texts = tokenizer.batch_decode([[i] for i in range(size)], clean_up_tokenization_spaces=False)
    for index, (piece, text) in enumerate(zip(pieces, texts)):
        if piece is None or index in special:
            continue
        if (
            not text.strip()
            or "\ufffd" in text
            or any(unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs") for ch in text)
        ):
            continue  # empty, broken bytes, control characters (newlines, zero-width ...)
        anywhere[index] = True
        first[index] = (not whole_words) or starts(piece) or _is_punctuation(text.strip())
    if not first.any():
        raise ValueError("the tokenizer offers no token that can start a fill")
    return anywhere, first


def first_words(text: str, words: int) -> tuple[str, bool]:
    """The first ``words`` word tokens of ``text`` and whether the text already holds more than that."""
    tokens = split_tokens(normalize_whitespace(text))
    return join_tokens(tokens[:words]), len(tokens) > words


def extract_infill(output: str, left: str, right: str, max_tokens: int) -> str:
    """The span a seq2seq model wrote into the mask: its output minus the longest common prefix with the left
    context and the longest common suffix with the right context (word tokens), at most ``max_tokens`` tokens.

    mBART regenerates the whole sentence; keeping only the middle guarantees that earlier edits outside the
    slot are never rewritten (the original took the whole output, so a later step could undo an earlier one).
    """
    out = [t.text for t in split_tokens(normalize_whitespace(output))]
    lt = [t.text for t in split_tokens(left)]
    rt = [t.text for t in split_tokens(right)]
    prefix = 0
    while prefix < min(len(out), len(lt)) and out[prefix] == lt[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(out) - prefix, len(rt)) and out[len(out) - 1 - suffix] == rt[len(rt) - 1 - suffix]:
        suffix += 1
    middle = split_tokens(normalize_whitespace(output))[prefix : len(out) - suffix]
    return join_tokens(middle[:max_tokens])


def _length_order(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _pad(rows: list[list[int]], pad_id: int, left: bool) -> tuple[Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if left:
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
        else:
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
    return ids, mask


def _blocked(allowed: np.ndarray, width: int) -> Any:
    """Boolean tensor over the model's logits (which may be wider than the tokenizer): True = never pick."""
    import torch

    blocked = np.ones(width, dtype=bool)
    blocked[: min(width, len(allowed))] = ~allowed[:width]
    return torch.from_numpy(blocked)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


class _ModelFiller:
    """Shared plumbing: load through the model-role resolver, count tokens, cap inputs."""

    def __init__(self, role: str, config: FillerConfig, device: str | None):
        from nlgmetrics.modelroles import load_model

        self.config = config
        self.role = role
        self.loaded = load_model(role, config.model, device=device, dtype=config.dtype)
        self.tokenizer, self.model = self.loaded.tokenizer, self.loaded.model
        self.spec, self.hash, self.max_tokens = config.model, self.loaded.hash, config.max_tokens
        limit = getattr(self.tokenizer, "model_max_length", 512) or 512
        self.input_cap = int(min(limit, 1024))
        self._masks: tuple[np.ndarray, np.ndarray] | None = None
        self._blocked_cache: dict[tuple[int, bool], Any] = {}

    @property
    def masks(self) -> tuple[np.ndarray, np.ndarray]:
        if self._masks is None:
            self._masks = allowed_token_mask(self.tokenizer, self.config.whole_words)
        return self._masks

    def blocked(self, width: int, first: bool) -> Any:
        """Tokens never to pick, over logits of ``width`` columns (a model's vocabulary can exceed its tokenizer's)."""
        key = (width, first)
        if key not in self._blocked_cache:
            self._blocked_cache[key] = _blocked(self.masks[1] if first else self.masks[0], width)
        return self._blocked_cache[key]

    def top_k(self) -> int:
        allowed_any, allowed_first = self.masks
        return max(1, min(self.config.top_k, int(allowed_first.sum()), int(allowed_any.sum())))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in encoded]

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=True, truncation=True, max_length=self.input_cap)["input_ids"]


class MaskedLMFiller(_ModelFiller):
    """One token at a mask, picked among the top k (paper: uniformly among the top 4)."""

    def __init__(self, config: FillerConfig, device: str | None = None):
        super().__init__("masked_lm", config, device)
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"masked_lm '{config.model}': the tokenizer has no mask token")

    def fill(self, requests: Sequence[FillRequest], clock: Stopwatch | None = None) -> list[str]:
        import torch

        clock = clock or Stopwatch()
        out = [""] * len(requests)
        if not requests:
            return out
        mask_token, mask_id = self.tokenizer.mask_token, self.tokenizer.mask_token_id
        encoded = [self._encode(_join(r.left, mask_token, r.right)) for r in requests]
        k = self.top_k()
        for batch in _length_order([len(e) for e in encoded], self.config.batch_size):
            ids, attention = _pad([encoded[i] for i in batch], self.tokenizer.pad_token_id or 0, left=False)
            with clock.measure(f"fill:{self.role}"), torch.inference_mode():
                logits = self.model(
                    input_ids=ids.to(self.model.device), attention_mask=attention.to(self.model.device)
                ).logits
            logits = logits.float().cpu()
            for row, index in enumerate(batch):
                where = (ids[row] == mask_id).nonzero()
                if len(where) == 0:  # the mask fell beyond the model's input cap: no fill, the step is a no-op
                    continue
                blocked = self.blocked(logits.shape[-1], first=True)
                scores = logits[row, int(where[0])].masked_fill(blocked, float("-inf"))
                top = torch.topk(scores, k)
                u = np.random.default_rng(requests[index].seed).random()
                chosen = pick_token(top.indices.numpy(), top.values.numpy(), u, self.config.pick)
                piece = self.tokenizer.convert_ids_to_tokens(chosen)
                out[index] = normalize_whitespace(self.tokenizer.convert_tokens_to_string([piece]).replace("##", ""))
        return out


class Seq2SeqFiller(_ModelFiller):
    """mBART/BART infilling: one mask token at the slot, greedy (or beam) generation, middle span kept."""

    def __init__(self, config: FillerConfig, device: str | None = None):
        super().__init__("seq2seq", config, device)
        if self.tokenizer.mask_token is None:
            raise ValueError(f"seq2seq '{config.model}': the tokenizer has no mask token for span infilling")
        self.lang_id = None
        if config.lang_code:
            self.lang_id = self.tokenizer.convert_tokens_to_ids(config.lang_code)
            if self.lang_id is None or self.lang_id == self.tokenizer.unk_token_id:
                raise ValueError(f"seq2seq '{config.model}': unknown language code '{config.lang_code}'")

    def _encode(self, text: str) -> list[int]:
        """mBART source: tokens </s> lang_code; BART: <s> tokens </s> (added by hand when the tokenizer does
        not, and without touching the shared tokenizer's src_lang)."""
        eos, bos = self.tokenizer.eos_token_id, self.tokenizer.bos_token_id
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][: self.input_cap - 2]
        if self.lang_id is not None:
            return ids + [eos, self.lang_id]
        return ([bos] if bos is not None else []) + ids + ([eos] if eos is not None else [])

    def fill(self, requests: Sequence[FillRequest], clock: Stopwatch | None = None) -> list[str]:
        import torch
        from transformers import GenerationConfig

        clock = clock or Stopwatch()
        out = [""] * len(requests)
        if not requests:
            return out
        config = self.config
        encoded = [self._encode(_join(r.left, self.tokenizer.mask_token, r.right)) for r in requests]
        start_id = self.lang_id if self.lang_id is not None else self.model.config.decoder_start_token_id
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        generation = GenerationConfig(
            max_new_tokens=config.max_new_tokens,
            min_new_tokens=config.min_new_tokens,
            num_beams=config.num_beams,
            do_sample=False,
            decoder_start_token_id=start_id,
            eos_token_id=self.tokenizer.eos_token_id,
            pad_token_id=pad_id,
        )
        for batch in _length_order([len(e) for e in encoded], config.batch_size):
            ids, attention = _pad([encoded[i] for i in batch], pad_id, left=False)
            with clock.measure(f"fill:{self.role}"), torch.inference_mode():
                generated = self.model.generate(
                    input_ids=ids.to(self.model.device),
                    attention_mask=attention.to(self.model.device),
                    generation_config=generation,
                )
            texts = self.tokenizer.batch_decode(generated.cpu(), skip_special_tokens=True)
            for text, index in zip(texts, batch):
                # the model decides the span length (paper); only the safety cap applies
                out[index] = extract_infill(text, requests[index].left, requests[index].right, config.max_span_tokens)
        return out


class CausalLMFiller(_ModelFiller):
    """Words sampled from the left context among the top k: one token (``single_token``, the stand-in for a
    masked LM) or a span cut to the requested number of words (the stand-in for seq2seq infilling)."""

    def __init__(self, config: FillerConfig, device: str | None = None):
        import inspect

        super().__init__("causal_lm", config, device)
        tok = self.tokenizer
        # a document separator as the first context token: GPT-2 family <|endoftext|>, else BOS/EOS
        separator = tok.get_vocab().get("<|endoftext|>")
        self.start_id = next(
            (i for i in (separator, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) if i is not None), 0
        )
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else self.start_id
        self.keeps_last = "logits_to_keep" in inspect.signature(self.model.forward).parameters

    def _ids(self, text: str) -> list[int]:
        return [self.start_id] + (self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else [])

    def fill(self, requests: Sequence[FillRequest], clock: Stopwatch | None = None) -> list[str]:
        clock = clock or Stopwatch()
        out = [""] * len(requests)
        if not requests:
            return out
        prompts = [self._ids(r.left)[-self.input_cap :] for r in requests]
        if self.config.single_token:
            return self._single_tokens(prompts, requests, clock)
        for batch in _length_order([len(p) for p in prompts], self.config.batch_size):
            texts = self._sample([prompts[i] for i in batch], [requests[i] for i in batch], clock)
            for text, index in zip(texts, batch):
                out[index] = first_words(text, max(requests[index].words, 1))[0]
        return out

    def _pick(self, logits: Any, request: FillRequest, rng: np.random.Generator, first: bool) -> int:
        import torch

        # the first token continues a non-empty left context, so it must start a new word
        scores = logits.masked_fill(self.blocked(logits.shape[-1], first=first and bool(request.left)), float("-inf"))
        top = torch.topk(scores, self.top_k())
        return pick_token(top.indices.numpy(), top.values.numpy(), rng.random(), self.config.pick)

    def _single_tokens(self, prompts: list[list[int]], requests: Sequence[FillRequest], clock: Stopwatch) -> list[str]:
        """One next token per request. A causal LM's prediction after a prefix does not depend on what follows,
        so requests whose prompts are prefixes of the same text (the variants of one sentence at step 1) share
        one forward pass over that text, read at each prompt's last position."""
        import torch

        carriers: dict[tuple[int, ...], list[int]] = {}
        for index, (prompt, request) in enumerate(zip(prompts, requests)):
            context = self._ids(request.context)[-self.input_cap :] if request.context else prompt
            key = tuple(context) if context[: len(prompt)] == prompt else tuple(prompt)
            carriers.setdefault(key, []).append(index)
        sequences = []
        for key, members in carriers.items():
            if len(members) == 1:  # nothing to share: the prompt alone is the cheapest carrier
                sequences.append((list(prompts[members[0]]), members))
            else:
                sequences.append((list(key[: max(len(prompts[i]) for i in members)]), members))
        out = [""] * len(requests)
        base, head = self.model.base_model, self.model.get_output_embeddings()
        for batch in _length_order([len(seq) for seq, _ in sequences], self.config.batch_size):
            ids, attention = _pad([sequences[b][0] for b in batch], self.pad_id, left=False)
            rows, cols, owners = [], [], []
            for row, b in enumerate(batch):
                for index in sequences[b][1]:
                    rows.append(row)
                    cols.append(len(prompts[index]) - 1)
                    owners.append(index)
            with clock.measure(f"fill:{self.role}"), torch.inference_mode():
                hidden = base(
                    input_ids=ids.to(self.model.device), attention_mask=attention.to(self.model.device)
                ).last_hidden_state
                where = (torch.tensor(rows, device=hidden.device), torch.tensor(cols, device=hidden.device))
                logits = head(hidden[where]).float().cpu()
            for logit_row, index in zip(logits, owners):
                token = self._pick(logit_row, requests[index], np.random.default_rng(requests[index].seed), first=True)
                out[index] = normalize_whitespace(self.tokenizer.decode([token]))
        return out

    def _sample(self, prompts: list[list[int]], requests: list[FillRequest], clock: Stopwatch) -> list[str]:
        """Incremental decoding with a KV cache; each row picks with its own generator and stops by itself."""
        import torch

        rngs = [np.random.default_rng(r.seed) for r in requests]
        words = [max(r.words, 1) for r in requests]
        steps = min(self.config.max_new_tokens, 3 * max(words) + 3)
        ids, attention = _pad(prompts, self.pad_id, left=True)
        device = self.model.device
        ids, attention = ids.to(device), attention.to(device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        new_tokens: list[list[int]] = [[] for _ in prompts]
        done = [False] * len(prompts)
        past = None
        step_ids, step_positions = ids, positions
        extra = {"logits_to_keep": 1} if self.keeps_last else {}
        for step in range(steps):
            with clock.measure(f"fill:{self.role}"), torch.inference_mode():
                result = self.model(
                    input_ids=step_ids,
                    attention_mask=attention,
                    position_ids=step_positions,
                    **with_cache(self.model, past),
                    **extra,
                )
            past = returned_cache(result)
            logits = result.logits[:, -1].float().cpu()
            chosen = []
            for row in range(len(prompts)):
                if done[row]:
                    chosen.append(self.pad_id)
                    continue
                token = self._pick(logits[row], requests[row], rngs[row], first=step == 0)
                new_tokens[row].append(token)
                chosen.append(token)
                if first_words(self.tokenizer.decode(new_tokens[row]), words[row])[1]:
                    done[row] = True  # a word beyond the requested ones has started: the span is complete
            if all(done):
                break
            step_ids = torch.tensor(chosen, dtype=torch.long, device=device).unsqueeze(1)
            attention = torch.cat([attention, torch.ones((len(prompts), 1), dtype=attention.dtype, device=device)], 1)
            step_positions = positions[:, -1:] + step + 1
        return [self.tokenizer.decode(t) for t in new_tokens]


_FILLERS = {"masked_lm": MaskedLMFiller, "seq2seq": Seq2SeqFiller, "causal_lm": CausalLMFiller}


def build_filler(config: FillerConfig, device: str | None = None) -> Filler:
    """The filler for ``config.role``; the model loads through modelroles (hub id, folder or packaged:)."""
    try:
        cls = _FILLERS[config.role]
    except KeyError:
        raise ValueError(f"no filler for role '{config.role}'; roles: {', '.join(_FILLERS)}") from None
    return cls(config, device)


__all__ = [
    "CausalLMFiller",
    "FillRequest",
    "Filler",
    "MaskedLMFiller",
    "Seq2SeqFiller",
    "allowed_token_mask",
    "build_filler",
    "extract_infill",
    "first_words",
    "pick_token",
]
