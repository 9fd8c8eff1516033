"""One model-call group: all variants of a few consecutive sentences, edited step by step.

At each step every variant still editing draws its edit (own generator), the fills of all variants go to
each filler in one batched call, and the severities of all changed variants go to the NLI model in one batched
call. A group's model calls depend only on the group's sentences and the config, never on the block, shard or
resume point it is processed in, so floating-point batch effects cannot make two runs differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from sescore.synthesis.budget import BudgetTable
from sescore.synthesis.config import NEIGHBOUR_KIND, RULE_PERTURBATIONS, SynthesisConfig
from sescore.synthesis.edits import apply_edit
from sescore.synthesis.fillers import Filler, FillRequest
from sescore.synthesis.neighbours import neighbour_edit
from sescore.synthesis.planning import PlannedEdit, draw_edit, draw_num_edits, variant_rng
from sescore.synthesis.rules import RuleContext, RuleEdit, rule_edits
from sescore.synthesis.severity import entailment_both_ways, severities
from sescore.synthesis.stopwatch import Stopwatch
from sescore.synthesis.tokens import Token, join_tokens, split_tokens, words_of


@dataclass(frozen=True)
class Sentence:
    """A reference: its 0-based line number in the input file (stable across limits and shards) and text."""

    index: int
    text: str


@dataclass
class SynthesisModels:
    """Loaded fillers by name (``mlm``, ``seq2seq``), the NLI model (anything with ``predict_proba``), for rule
    edits the spaCy pipeline and lexicon, and for neighbour edits the encoder (``neighbour_encoder``) and each
    sentence's neighbour text by line number (``neighbours``, filled by the run once the input is read)."""

    fillers: dict[str, Filler]
    nli: Any
    rules: RuleContext | None = None
    neighbour_encoder: Any = None
    neighbours: dict[int, str | None] | None = None

    def hashes(self) -> dict[str, str]:
        out = {f"filler:{name}": f"{f.spec}@{f.hash}" for name, f in sorted(self.fillers.items())}
        out["nli"] = f"{getattr(self.nli, 'spec', '?')}@{getattr(self.nli, 'hash', '?')}"
        if self.rules is not None:
            out["rules"] = self.rules.describe()
        if self.neighbour_encoder is not None:
            encoder = self.neighbour_encoder
            out["neighbours"] = f"{getattr(encoder, 'spec', '?')}@{getattr(encoder, 'hash', '?')}"
        return out


@dataclass
class _Variant:
    sentence: Sentence
    variant: int
    rng: np.random.Generator
    num_edits: int
    tokens: list[Token]
    table: BudgetTable
    versions: list[str]
    history: list[dict] = field(default_factory=list)


def _step_record(step: int, kind: str, edit: PlannedEdit | None, role: str | None, status: str, text: str) -> dict:
    return {
        "step": step,
        "kind": kind,
        "operation": edit.operation if edit else None,
        "filler": role,
        "start": edit.start if edit else None,
        "length": edit.length if edit else None,
        "new_length": None,
        "status": status,
        "severity": 0,
        "p_entail_forward": None,
        "p_entail_backward": None,
        "text": text,
    }


def synthesize_group(
    sentences: Sequence[Sentence],
    models: SynthesisModels,
    config: SynthesisConfig,
    clock: Stopwatch | None = None,
) -> list[dict]:
    """Rows (one per sentence x variant, in that order) for a group of sentences."""
    clock = clock or Stopwatch()
    variants = []
    for sentence in sentences:
        tokens = split_tokens(sentence.text)
        for v in range(config.variants):
            rng = variant_rng(config.seed, sentence.index, v)
            variants.append(
                _Variant(
                    sentence,
                    v,
                    rng,
                    draw_num_edits(rng, config),
                    tokens,
                    BudgetTable.fresh(len(tokens)),
                    [sentence.text],
                )
            )
    self_entailment: dict[int, float] = {}
    if config.severity.mode == "ratio":
        texts = [s.text for s in sentences]
        with clock.measure("nli"):
            selves = models.nli.predict_proba(texts, texts, batch_size=config.severity.batch_size)[:, 0]
        self_entailment = {s.index: float(p) for s, p in zip(sentences, selves)}

    for step in range(1, max((v.num_edits for v in variants), default=0) + 1):
        active = [v for v in variants if v.num_edits >= step]
        edits: list[tuple[_Variant, PlannedEdit]] = []
        for v in active:
            first_kind, edit = draw_edit(v.rng, v.table, step, v.num_edits, config)
            if edit is None:
                v.history.append(_step_record(step, first_kind, None, None, "rejected", v.versions[-1]))
            else:
                edits.append((v, edit))
        edits, rule_fills = _resolve_rules(edits, models, config, step, clock)
        fills = _fill_all(edits, models, clock)
        fills = [rule_fills.get(i, fill) for i, fill in enumerate(fills)]
        changed: list[tuple[_Variant, dict, list[Token], BudgetTable]] = []
        for (v, edit), fill in zip(edits, fills):
            rule = (
                "rule" if edit.kind in RULE_PERTURBATIONS else NEIGHBOUR_KIND if edit.kind == NEIGHBOUR_KIND else None
            )
            role = models.fillers[edit.filler].role if edit.filler else rule
            new_tokens = apply_edit(v.tokens, edit.operation, edit.start, edit.length, fill)
            text = join_tokens(new_tokens)
            record = _step_record(step, edit.kind, edit, role, "applied", text)
            if edit.operation in ("insert", "replace"):
                record["new_length"] = len(fill)
            if not text or text in v.versions:  # equals an earlier version (or nothing left): adds 0, undone
                record.update(status="unchanged", text=v.versions[-1])
                v.history.append(record)
                continue
            table = v.table.apply(edit.operation, edit.start, edit.length, len(fill))
            changed.append((v, record, new_tokens, table))
        before = [v.versions[-1] for v, *_ in changed]
        after = [record["text"] for _, record, *_ in changed]
        forward, backward = entailment_both_ways(models.nli, before, after, config.severity.batch_size, clock)
        selves = np.array([self_entailment.get(v.sentence.index, 1.0) for v, *_ in changed], dtype=np.float64)
        labels = severities(forward, backward, config.severity, selves if config.severity.mode == "ratio" else None)
        for (v, record, new_tokens, table), pf, pb, label in zip(changed, forward, backward, labels):
            record.update(severity=int(label), p_entail_forward=float(pf), p_entail_backward=float(pb))
            v.history.append(record)
            v.tokens, v.table = new_tokens, table
            v.versions.append(record["text"])

    config_hash = config.hash()
    rows = []
    for v in variants:
        statuses = [h["status"] for h in v.history]
        rows.append(
            {
                "sentence_index": v.sentence.index,
                "variant_index": v.variant,
                "reference": v.sentence.text,
                "candidate": v.versions[-1],
                "score": int(sum(h["severity"] for h in v.history)),
                "num_planned": v.num_edits,
                "num_applied": statuses.count("applied"),
                "history": v.history,
                "reference_self_entailment": self_entailment.get(v.sentence.index),
                "config_hash": config_hash,
            }
        )
    return rows


def _resolve_rules(
    edits: list[tuple[_Variant, PlannedEdit]],
    models: SynthesisModels,
    config: SynthesisConfig,
    step: int,
    clock: Stopwatch,
) -> tuple[list[tuple[_Variant, PlannedEdit]], dict[int, list[Token]]]:
    """Run the drawn rule edits (one spaCy pass) and neighbour edits; keep those the budget table accepts as
    ordinary edits.

    Returns the edits with each kept rule edit turned into its insert/replace/delete (same kind and seed) and
    the fills of those rule edits by position in the returned list; rejected rule edits are recorded.
    """
    rule_positions = [i for i, (_, e) in enumerate(edits) if e.operation == "rule" and e.kind != NEIGHBOUR_KIND]
    neighbour_positions = [i for i, (_, e) in enumerate(edits) if e.operation == "rule" and e.kind == NEIGHBOUR_KIND]
    if not rule_positions and not neighbour_positions:
        return edits, {}
    outcome: dict[int, RuleEdit | str] = {}
    if rule_positions:
        if models.rules is None or config.rules is None:
            raise ValueError("rule edits need models.rules (spaCy + lexicon) and a 'rules:' config section")
        with clock.measure("rules"):
            made = rule_edits(
                [edits[i][1].kind for i in rule_positions],
                [edits[i][0].tokens for i in rule_positions],
                [edits[i][1].fill_seed for i in rule_positions],
                models.rules,
                config.rules.max_span,
            )
        outcome.update(zip(rule_positions, made))
    if neighbour_positions:
        if models.neighbours is None or config.neighbours is None:
            raise ValueError("neighbour edits need models.neighbours and a 'neighbours:' config section")
        for i in neighbour_positions:
            v, edit = edits[i]
            neighbour = models.neighbours.get(v.sentence.index)
            outcome[i] = (
                "not applicable: no neighbour sentence"
                if neighbour is None
                else neighbour_edit(v.tokens, split_tokens(neighbour), edit.fill_seed, config.neighbours.max_span)
            )
    kept: list[tuple[_Variant, PlannedEdit]] = []
    fills: dict[int, list[Token]] = {}
    for i, (v, edit) in enumerate(edits):
        if i not in outcome:
            kept.append((v, edit))
            continue
        result = outcome[i]
        if isinstance(result, RuleEdit) and v.table.accepts(result.operation, result.start, result.length):
            fills[len(kept)] = list(result.fill)
            kept.append((v, replace(edit, operation=result.operation, start=result.start, length=result.length)))
        else:
            # not applicable, too wide (rules.max_span) or overlapping an earlier edit: the step makes no edit
            role = NEIGHBOUR_KIND if edit.kind == NEIGHBOUR_KIND else "rule"
            v.history.append(_step_record(step, edit.kind, None, role, "rejected", v.versions[-1]))
    return kept, fills


def _fill_all(
    edits: list[tuple[_Variant, PlannedEdit]], models: SynthesisModels, clock: Stopwatch
) -> list[list[Token]]:
    """New tokens for every edit: one batched call per filler, results back in edit order."""
    fills: list[list[Token]] = [[] for _ in edits]
    by_filler: dict[str, list[int]] = {}
    for i, (_, edit) in enumerate(edits):
        if edit.filler:
            by_filler.setdefault(edit.filler, []).append(i)
    for name, indices in sorted(by_filler.items()):
        requests = []
        for i in indices:
            v, edit = edits[i]
            end = edit.start + (edit.length if edit.operation == "replace" else 0)
            requests.append(
                FillRequest(
                    join_tokens(v.tokens[: edit.start]),
                    join_tokens(v.tokens[end:]),
                    edit.fill_words,
                    edit.fill_seed,
                    context=v.versions[-1],
                )
            )
        for i, text in zip(indices, models.fillers[name].fill(requests, clock)):
            fills[i] = words_of(text)
    return fills


__all__ = ["Sentence", "SynthesisModels", "synthesize_group"]
