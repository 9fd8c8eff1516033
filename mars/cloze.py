"""Self-planning cloze augmentation (MARS section 2.2, Algorithm 2: generate, judge and revise).

A template is filled left to right after the context. Text blocks are copied verbatim (they are fed to the LM
as given, never generated). For a blank, one sampled trajectory of |B| + tau tokens is generated; every prefix
of it is a candidate fill (lengths 1 .. |B| + tau), judged by the LM perplexity of (reference so far + fill +
next text block), and the lowest-perplexity candidate is kept (the paper's priority queue; here a min over
candidates). Blanks followed by text are decoded with self-planning toward that text (``mars.planning``);
a trailing blank is open-ended. All rows of a group (templates of several references and ratios) advance
together in one ``LockstepBatch``. Each template samples from its own seeded ``torch.Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from mars.config import ClozeConfig, PlanningConfig
from mars.lockstep import LockstepBatch
from mars.planning import draw, plan_logits_head, plan_logits_hidden, sampling_probs
from mars.template import Blank, Template, TextBlock


@dataclass(frozen=True)
class ClozeJob:
    """One template to fill; ``context`` may be "" (no context); ``seed`` seeds this template's sampling."""

    template: Template
    context: str
    seed: int


@dataclass
class _Segment:
    kind: str  # "text" or "blank"
    tokens: list[int] = field(default_factory=list)  # text tokens
    n_candidates: int = 0  # blank: trajectory length |B| + tau
    word_start: bool | None = None  # blank: first token must (True) / must not (False) start a word
    future: list[int] = field(default_factory=list)  # blank: planning reward tokens ([] = open-ended)
    judge_tokens: list[int] = field(default_factory=list)  # blank: next-text tokens scored by the judge


@dataclass
class _Row:
    job_index: int
    prefix: list[int]
    segments: list[_Segment]
    generator: torch.Generator
    segment: int = 0
    offset: int = 0
    logprobs: torch.Tensor | None = None  # base log-probs of the next token (T = 1)
    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = None
    nll: float = 0.0  # NLL of the reference tokens fed so far (the judge's "s")
    n_scored: int = 0
    trajectory: list[int] = field(default_factory=list)
    trajectory_nll: list[float] = field(default_factory=list)  # cumulative
    judge_first: list[float] = field(default_factory=list)
    states: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=list)
    fills: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.segment >= len(self.segments)

    @property
    def current(self) -> _Segment:
        return self.segments[self.segment]


def _has_control(text: str) -> bool:
    """Newlines, tabs and other control characters (fills stay on one line)."""
    return any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in text)


class ClozeAugmenter:
    """Fills templates with a causal LM. Vocabulary constraints are computed once per augmenter."""

    def __init__(self, lm: Any, cloze: ClozeConfig, planning: PlanningConfig) -> None:
        self.lm = lm
        self.tokenizer = lm.tokenizer
        self.model = lm.model
        self.cloze = cloze
        self.planning = planning
        self._vocab: tuple[torch.Tensor, torch.Tensor] | None = None
        self.skip_trailing_text = True  # False only to measure the saving (bench/bench_mars.py); same output
        self.growing_cache = True  # False = transformers' DynamicCache, only to measure (mars_length*.md results)

    # -- vocabulary ---------------------------------------------------------------------------------------------
    def _vocab_masks(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(banned, starts_word) over the LM's output vocabulary."""
        if self._vocab is None:
            size = self.model.get_output_embeddings().weight.shape[0]
            tok = self.tokenizer
            pieces = tok.convert_ids_to_tokens(list(range(min(size, len(tok)))))
            texts = tok.batch_decode([[i] for i in range(min(size, len(tok)))], clean_up_tokenization_spaces=False)
            banned = torch.zeros(size, dtype=torch.bool)
            starts = torch.zeros(size, dtype=torch.bool)
            banned[len(texts) :] = True  # padding rows of the embedding matrix
            special = set(tok.all_special_ids)
            for i, (piece, text) in enumerate(zip(pieces, texts)):
                piece = piece or ""
                if i in special or text == "" or (self.cloze.ban_newlines and _has_control(text)):
                    banned[i] = True
                starts[i] = piece.startswith(("Ġ", "▁")) or text.startswith(" ")
            device = self.lm.device
            self._vocab = (banned.to(device), starts.to(device))
        return self._vocab

    # -- programs -----------------------------------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _start_ids(self) -> list[int]:
        """The document-start token: ``<|endoftext|>`` when the vocabulary has it (GPT-2, SmolLM2 pretraining
        separator; SmolLM2-Instruct's BOS is a chat token), else BOS, else EOS."""
        tok = self.tokenizer
        start = tok.convert_tokens_to_ids("<|endoftext|>")
        if start is None or tok.convert_ids_to_tokens(start) != "<|endoftext|>":
            start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        if start is None:
            raise ValueError("the causal LM tokenizer has neither a BOS nor an EOS token to start generation from")
        return [int(start)]

    def _program(self, job: ClozeJob) -> tuple[list[int], list[_Segment]]:
        c = self.cloze
        context = job.context.strip()
        context_ids = self._encode(context) if context else []
        segments: list[_Segment] = []
        blocks = job.template.blocks
        for index, block in enumerate(blocks):
            first = index == 0
            lead = block.lead if not (first and context and not block.lead) else " "
            if isinstance(block, TextBlock):
                segments.append(_Segment("text", tokens=self._encode(lead + block.text)))
                continue
            assert isinstance(block, Blank)
            if c.blank_length_unit == "words":
                length = block.n_words
            else:
                length = len(self._encode(lead + block.original))
            if first and not context:
                word_start = None
            else:
                word_start = bool(lead) and lead[:1].isspace()
            segments.append(_Segment("blank", n_candidates=max(1, length + c.max_extra_guesses), word_start=word_start))
        for index, segment in enumerate(segments):
            if segment.kind != "blank" or index + 1 >= len(segments):
                continue
            following = segments[index + 1].tokens
            if self.planning.future == "next_block":
                segment.future = list(following)
            else:
                segment.future = [t for s in segments[index + 1 :] if s.kind == "text" for t in s.tokens]
            n = len(following) if c.judge_lookahead == -1 else min(c.judge_lookahead, len(following))
            segment.judge_tokens = list(following[:n])
        body = sum(len(s.tokens) if s.kind == "text" else s.n_candidates for s in segments)
        limit = self._max_positions()
        room = min(c.max_context_tokens, limit - body - 1) if limit else c.max_context_tokens
        if room < 0:
            raise ValueError(
                f"reference too long for the causal LM ({body} tokens incl. guesses, limit {limit}): "
                f"{job.template.original()[:80]!r}"
            )
        prefix = self._start_ids() + context_ids[:room]
        return prefix, segments

    def _max_positions(self) -> int | None:
        config = self.model.config
        for name in ("max_position_embeddings", "n_positions"):
            value = getattr(config, name, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    # -- decoding -----------------------------------------------------------------------------------------------
    def augment(self, groups: Sequence[Sequence[ClozeJob]], progress: bool = False) -> list[list[str]]:
        """Fill every job; jobs in one group are decoded together. Returns texts in the input structure."""
        return [
            [job.template.render(f) for job, f in zip(group, fills)]
            for group, fills in zip(groups, self.fill(groups, progress))
        ]

    def fill(self, groups: Sequence[Sequence[ClozeJob]], progress: bool = False) -> list[list[list[str]]]:
        """The fill of every blank of every job (each fill includes its own leading whitespace)."""
        from tqdm.auto import tqdm

        out: list[list[list[str]]] = []
        for group in tqdm(list(groups), desc="MARS cloze", disable=not progress, unit="group"):
            out.append(self._run_group(list(group)))
        return out

    def _run_group(self, jobs: list[ClozeJob]) -> list[list[str]]:
        results: list[list[str]] = [[] for _ in jobs]
        rows: list[_Row] = []
        for i, job in enumerate(jobs):
            if job.template.blanks:
                prefix, segments = self._program(job)
                rows.append(_Row(i, prefix, segments, torch.Generator().manual_seed(int(job.seed))))
        if rows:
            self._decode(rows)
            for row in rows:
                results[row.job_index] = row.fills
        return results

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.get_output_embeddings()(hidden)

    def _decode(self, rows: list[_Row]) -> None:
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else self._start_ids()[0]
        batch = LockstepBatch(self.model, pad, self.growing_cache)
        self._prefill(rows, batch)
        active = [r for r in rows if not r.done]
        if len(active) < len(rows):
            batch.keep_rows([i for i, r in enumerate(rows) if not r.done])
        while active:
            chunks = self._next_chunks(active)
            hidden = batch.step(chunks)
            self._absorb(active, hidden, chunks, batch)
            keep = [i for i, r in enumerate(active) if not r.done]
            if len(keep) < len(active):
                if keep:
                    batch.keep_rows(keep)
                active = [active[i] for i in keep]

    def _prefill(self, rows: list[_Row], batch: LockstepBatch) -> None:
        """Feed each distinct context once, with the leading text all its rows share, then copy it to every row.

        Templates of one reference share the context and usually their first words (context-carrying words are
        expensive to mask), so this turns many one-token steps into a single wide step.
        """
        shared: dict[tuple[int, ...], list[int]] = {}
        for row in rows:
            key = tuple(row.prefix)
            first = row.segments[0].tokens if row.segments[0].kind == "text" else []
            if key not in shared:
                shared[key] = list(first)
            else:
                common = shared[key]
                n = 0
                while n < min(len(common), len(first)) and common[n] == first[n]:
                    n += 1
                shared[key] = common[:n]
        keys = list(shared)
        hidden = batch.step([list(k) + shared[k] for k in keys])
        states = []
        with torch.no_grad():
            for key, h in zip(keys, hidden):
                text = shared[key]
                h = h[-(len(text) + 1) :]
                logits = self._head(h).float()
                logprobs = torch.log_softmax(logits, dim=-1)
                nll = (
                    -float(logprobs[:-1].gather(1, torch.as_tensor(text, dtype=torch.long).view(-1, 1)).sum())
                    if text
                    else 0.0
                )
                states.append((len(text), nll, logits[-1], logprobs[-1], h[-1]))
        index = {k: i for i, k in enumerate(keys)}
        batch.keep_rows([index[tuple(r.prefix)] for r in rows])
        for row in rows:
            n_text, nll, row.logits, row.logprobs, row.hidden = states[index[tuple(row.prefix)]]
            row.nll, row.n_scored = nll, n_text
            if n_text and n_text < len(row.segments[0].tokens):
                row.offset = n_text
                continue
            if n_text:
                row.segment += 1
            self._enter(row)

    def _next_chunks(self, rows: list[_Row]) -> list[list[int]]:
        chunks: list[list[int]] = [[] for _ in rows]
        sampling = [i for i, r in enumerate(rows) if r.current.kind == "blank"]
        for i, row in enumerate(rows):
            if row.current.kind == "text":
                remaining = row.current.tokens[row.offset :]
                size = self.cloze.text_chunk if self.cloze.text_chunk > 0 and sampling else len(remaining)
                chunks[i] = remaining[:size]
        if sampling:
            for i, token in zip(sampling, self._sample([rows[i] for i in sampling])):
                chunks[i] = [token]
        return chunks

    def _sample(self, rows: list[_Row]) -> list[int]:
        """One token per row in a blank: self-planned when text follows, plain otherwise."""
        c, p = self.cloze, self.planning
        banned, starts = self._vocab_masks()
        logits = torch.stack([r.logits for r in rows])
        planned = None
        plan_rows = [i for i, r in enumerate(rows) if r.current.future] if p.enabled and p.steps > 0 else []
        if plan_rows:
            width = max(len(rows[i].current.future) for i in plan_rows)
            future = torch.full((len(plan_rows), width), -1, dtype=torch.long, device=logits.device)
            for k, i in enumerate(plan_rows):
                future[k, : len(rows[i].current.future)] = torch.as_tensor(rows[i].current.future)
            sub = logits[plan_rows]
            eta = p.eta * p.eta_scale
            if p.scope == "head":
                norms = torch.stack([rows[i].hidden.norm() for i in plan_rows])
                new = plan_logits_head(sub, norms, future, eta=eta, steps=p.steps, temperature=c.temperature)
            else:
                head = self.model.get_output_embeddings()
                hidden = torch.stack([rows[i].hidden for i in plan_rows])
                new = plan_logits_hidden(
                    hidden, head.weight, head.bias, future, eta=eta, steps=p.steps, temperature=c.temperature
                )
            planned = logits.clone()
            planned[plan_rows] = new
        ban = banned.unsqueeze(0).expand(len(rows), -1).clone()
        for i, row in enumerate(rows):
            if not row.trajectory and row.current.word_start is not None and c.respect_word_boundaries:
                ban[i] |= ~starts if row.current.word_start else starts
        probs = sampling_probs(
            logits, planned, temperature=c.temperature, importance_cap=p.importance_cap, banned=ban, top_k=c.top_k
        )
        tokens = draw(probs, [r.generator for r in rows], c.top_k)
        for row, token in zip(rows, tokens):
            base_nll = -float(row.logprobs[token])
            previous = row.trajectory_nll[-1] if row.trajectory_nll else 0.0
            row.trajectory.append(token)
            row.trajectory_nll.append(previous + base_nll)
        return tokens

    def _absorb(
        self, rows: list[_Row], hidden: list[torch.Tensor], chunks: list[list[int]], batch: LockstepBatch
    ) -> None:
        """Turn the step's hidden states into log-probs, account NLL, and advance each row's program."""
        lengths = [h.shape[0] for h in hidden]
        with torch.no_grad():
            logits_all = self._head(torch.cat(hidden, dim=0)).float()
            logprobs_all = torch.log_softmax(logits_all, dim=-1)
        start = 0
        for r, row in enumerate(rows):
            n = lengths[r]
            logits, logprobs, states = logits_all[start : start + n], logprobs_all[start : start + n], hidden[r]
            start += n
            segment = row.current
            chunk = chunks[r]
            if segment.kind == "text":
                nll = -float(row.logprobs[chunk[0]])
                if n > 1:
                    nll -= float(logprobs[:-1].gather(1, torch.as_tensor(chunk[1:]).unsqueeze(1)).sum())
                row.nll += nll
                row.n_scored += n
                row.logits, row.logprobs, row.hidden = logits[-1], logprobs[-1], states[-1]
                row.offset += n
                if row.offset >= len(segment.tokens):
                    row.segment += 1
                    self._enter(row)
            else:
                row.logits, row.logprobs, row.hidden = logits[-1], logprobs[-1], states[-1]
                row.states.append((row.logits, row.logprobs, row.hidden))
                if segment.judge_tokens:
                    row.judge_first.append(-float(row.logprobs[segment.judge_tokens[0]]))
                if len(row.trajectory) >= segment.n_candidates:
                    self._revise(row, r, batch)
                    self._enter(row)

    def _enter(self, row: _Row) -> None:
        """Start the row's current segment (skipping empty text blocks) with fresh per-segment state."""
        row.offset = 0
        row.trajectory, row.trajectory_nll, row.judge_first, row.states = [], [], [], []
        while not row.done and row.current.kind == "text" and not row.current.tokens:
            row.segment += 1
        if self.skip_trailing_text and not any(s.kind == "blank" for s in row.segments[row.segment :]):
            # Text after the last blank is copied by ``Template.render``; feeding it to the LM would only compute
            # states nobody reads (3% of the token positions on ROC stories), so the row is done here.
            row.segment = len(row.segments)

    def _judge_rest(self, row: _Row, r: int, batch: LockstepBatch) -> list[float]:
        """NLL of next-text tokens 2..n for every candidate length (only when judge_lookahead > 1)."""
        segment = row.current
        n_candidates = len(row.trajectory)
        if len(segment.judge_tokens) <= 1:
            return [0.0] * n_candidates
        fork = batch.fork(r, n_candidates)
        for k in range(n_candidates):
            fork.hide_last(k, n_candidates - (k + 1))
        feed = segment.judge_tokens[:-1]
        hidden = fork.step([feed] * n_candidates)
        with torch.no_grad():
            logprobs = torch.log_softmax(self._head(torch.stack(hidden)).float(), dim=-1)  # [L, n-1, V]
        target = torch.as_tensor(segment.judge_tokens[1:]).view(1, -1, 1).expand(n_candidates, -1, 1)
        return (-logprobs.gather(2, target).squeeze(-1).sum(dim=1)).tolist()

    def _revise(self, row: _Row, r: int, batch: LockstepBatch) -> None:
        """Judge every candidate length by perplexity and keep the best; rejected tokens become cache holes."""
        segment = row.current
        rest = self._judge_rest(row, r, batch)
        n_judge = len(segment.judge_tokens)
        best, best_ppl = 1, float("inf")
        for length in range(1, len(row.trajectory) + 1):
            judge = (row.judge_first[length - 1] + rest[length - 1]) if n_judge else 0.0
            nll = row.trajectory_nll[length - 1] + judge
            count = length + n_judge
            if self.cloze.judge_scope == "sequence":
                nll, count = nll + row.nll, count + row.n_scored
            ppl = nll / count  # log-perplexity: same order as perplexity
            if ppl < best_ppl:
                best, best_ppl = length, ppl
        batch.hide_last(r, len(row.trajectory) - best)
        row.nll += row.trajectory_nll[best - 1]
        row.n_scored += best
        row.logits, row.logprobs, row.hidden = row.states[best - 1]
        row.fills.append(
            self.tokenizer.decode(row.trajectory[:best], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        )
        row.segment += 1
