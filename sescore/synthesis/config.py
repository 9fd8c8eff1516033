"""The synthesis recipe: every number the paper or the authors' code fixed, as a typed, hashed YAML config.

The original hid these constants in code (Poisson rates, top-4, operation weights, caps). Here they are config
values with the paper's choices as defaults, validated at load time with errors that name the offending key,
and hashed so that every generated row says which recipe made it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import Any

from nlgmetrics.recipes import RecipeError, load_recipe

# edit kinds of the operation mix: which operation, and which filler supplies new words
EDIT_KINDS: dict[str, tuple[str, str | None]] = {
    "seq2seq_insert": ("insert", "seq2seq"),
    "seq2seq_replace": ("replace", "seq2seq"),
    "mlm_insert": ("insert", "mlm"),
    "mlm_replace": ("replace", "mlm"),
    "delete": ("delete", None),
    "swap": ("swap", None),
}
# rule edits (beyond the paper): errors real systems make, written by nlgmetrics.perturb's pure functions and
# spaCy instead of a language model; the span they touched is found after the fact (sescore/synthesis/rules.py)
RULE_PERTURBATIONS: dict[str, str] = {
    "rule_negation": "menli_negation",  # negation added to / removed from a verb
    "rule_number": "menli_number",  # wrong numbers
    "rule_name": "menli_name",  # wrong person name
    "rule_noun": "menli_noun_mismatch",  # mistranslated word: a noun replaced by another noun
    "rule_verb": "menli_verb_mismatch",  # ... a verb by another verb, same inflection
    "rule_adjective": "menli_adjective_mismatch",
    "rule_pronoun": "menli_pronoun",  # he -> she, their -> his
    "rule_agreement": "menli_subject_verb",  # subject-verb disagreement (fluency)
}
EDIT_KINDS.update({kind: ("rule", None) for kind in RULE_PERTURBATIONS})
# German rule kinds and the parser-free rule of nlgmetrics.perturb.german each one runs (no German spaCy
# pipeline installs offline); the other rule kinds exist in English only
GERMAN_RULE_KINDS = {"rule_negation": "negation", "rule_number": "number", "rule_name": "name"}
RULE_LANGUAGES = ("en", "de")
# retrieval edits (SEScore2): one differing span of the sentence is replaced by (or gets) what its nearest neighbour
# sentence of the input has there, so the new words are words real text uses in that context
# (sescore/synthesis/neighbours.py)
NEIGHBOUR_KIND = "neighbour"
EDIT_KINDS[NEIGHBOUR_KIND] = ("rule", None)
FILLER_ROLES = ("masked_lm", "seq2seq", "causal_lm")


# A malformed synthesis config: the toolkit's one recipe error (unknown keys, unreadable files) under the name
# this package has always raised and caught; ``validate`` raises it for bad values. The message names the key.
ConfigError = RecipeError


@dataclass(frozen=True)
class SpanLength:
    """Lengths ``min..max`` weighted by Poisson(k - min; lambda) (scipy's ``loc=min``), uniform if lambda is null."""

    min: int = 1
    max: int = 4
    poisson_lambda: float | None = 1.5


@dataclass(frozen=True)
class FillerConfig:
    """One model that writes new words. ``role`` decides the filling method (see fillers.py)."""

    role: str = "masked_lm"
    model: str = "xlm-roberta-large"
    top_k: int = 4  # paper: pick among the top 4 predictions
    pick: str = "uniform"  # uniform (paper) or proportional to the model's probabilities within the top k
    single_token: bool = False  # causal_lm: write one token, like a masked LM (the stand-in for MLM edits)
    whole_words: bool = True  # only offer tokens that start a word (or are punctuation) at the first position
    max_tokens: int = 126  # input cap in the model's own tokens (XLM-R 126, mBART 125 in the original)
    max_new_tokens: int = 128  # generation cap (seq2seq 128 in the original)
    max_span_tokens: int = 10  # most words a seq2seq fill may add (keeps a rewritten sentence from leaking in)
    min_new_tokens: int = 0  # seq2seq: forbid end-of-sequence before this many tokens (0 = model decides)
    num_beams: int = 1
    lang_code: str | None = None  # mBART language code, e.g. en_XX / de_DE
    batch_size: int = 64
    dtype: str = "float32"


@dataclass(frozen=True)
class SeverityConfig:
    """Bidirectional entailment: minor when P(e) passes the threshold both ways, else major."""

    nli: str = "roberta-large-mnli"
    mode: str = "absolute"  # absolute: P(e) > threshold; ratio: P(e) / P(e | x0, x0) > threshold
    threshold: float = 0.9
    minor: int = -1
    major: int = -5
    batch_size: int = 64
    calibration: dict[str, Any] | None = None  # written by the calibrate command for this NLI model


@dataclass(frozen=True)
class RulesConfig:
    """Rule edits: the spaCy pipeline that parses each version and how far one rule edit may reach."""

    spacy: str = "packaged:en_core_web_sm"
    max_span: int = 6  # a rewrite whose changed tokens span more than this (old or new side) is rejected
    lexicon_names: int = 300  # most frequent first names per gender offered by name swaps


@dataclass(frozen=True)
class NeighboursConfig:
    """Retrieval edits: the encoder that finds each sentence's nearest other sentence of the input file (cosine of
    mean-pooled embeddings) and how wide one borrowed span may be."""

    encoder: str = "packaged:minilm"
    max_span: int = 6  # a differing span wider than this (either side) is never borrowed
    batch_size: int = 64


@dataclass(frozen=True)
class SynthesisConfig:
    """A SEScore error-synthesis recipe: how many damaged variants each sentence gets, the mixes of edit kinds for
    the first and the later edits, span lengths, the fill models, the severity labeller (NLI model and threshold)
    and the optional rule and retrieval edits. Read from YAML by :func:`load_config` (the packaged
    ``sescore/offline_en_v2.yaml`` built the shipped default's data); :meth:`hash` is the digest of everything that
    can change a row, so two runs with the same hash and input write the same rows."""

    name: str = "paper_en"
    language: str = "en"
    seed: int = 12
    variants: int = 10
    max_edits: int = 5
    num_edits_lambda: float = 1.5  # authors' code default; their released checkpoints used 0.5
    retry_rejected: int = 0  # extra draws after a rejected draw (0 = the original: the step makes no edit)
    mix_single_edit: dict[str, float] = field(
        default_factory=lambda: {
            "seq2seq_insert": 4,
            "seq2seq_replace": 4,
            "mlm_insert": 1,
            "mlm_replace": 1,
            "swap": 0,
            "delete": 1,
        }
    )
    mix_multi_edit: dict[str, float] = field(default_factory=lambda: {"mlm_insert": 1, "mlm_replace": 1, "delete": 1})
    seq2seq_max_step: int = 1  # seq2seq edits only at steps <= this
    delete_span: SpanLength = SpanLength(1, 4, 1.5)
    seq2seq_span: SpanLength = SpanLength(1, 6, 1.5)  # replaced span; also the words a causal stand-in inserts
    swap_distance: SpanLength = SpanLength(1, 4, None)
    mlm: FillerConfig = FillerConfig()
    seq2seq: FillerConfig = FillerConfig(
        role="seq2seq", model="facebook/mbart-large-cc25", max_tokens=125, lang_code="en_XX", batch_size=16
    )
    severity: SeverityConfig = SeverityConfig()
    rules: RulesConfig | None = None  # needed when a mix gives a rule_* kind weight; null keeps old hashes
    neighbours: NeighboursConfig | None = None  # needed when a mix gives 'neighbour' weight; null keeps old hashes
    sentences_per_call: int = 16  # variants of this many consecutive sentences share each model call
    long_lines: str = "truncate"  # truncate to the fillers' max_tokens, or skip
    bad_utf8: str = "error"  # error (naming the line) or skip
    # runtime only: never change a row, so not hashed
    block_size: int = 256
    device: str | None = None

    RUNTIME_KEYS = ("block_size", "device")

    def hash(self) -> str:
        """Short digest of everything that can change a row (runtime keys excluded)."""
        payload = {k: v for k, v in to_dict(self).items() if k not in self.RUNTIME_KEYS}
        for section in ("rules", "neighbours"):  # recipes written before these sections keep their hash
            if payload.get(section) is None:
                payload.pop(section, None)
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]

    def fillers_in_use(self) -> dict[str, FillerConfig]:
        """Fillers that some edit kind with non-zero weight needs (a config without seq2seq edits loads none)."""
        used = set()
        for mix in (self.mix_single_edit, self.mix_multi_edit):
            used |= {EDIT_KINDS[k][1] for k, w in mix.items() if w > 0 and EDIT_KINDS[k][1]}
        return {name: getattr(self, name) for name in ("mlm", "seq2seq") if name in used}

    def rule_kinds_in_use(self) -> list[str]:
        """Rule edit kinds with non-zero weight in either mix (none: no spaCy or lexicon is loaded)."""
        return sorted(
            {
                k
                for mix in (self.mix_single_edit, self.mix_multi_edit)
                for k, w in mix.items()
                if w > 0 and k in RULE_PERTURBATIONS
            }
        )

    def uses_neighbours(self) -> bool:
        """Whether either mix gives neighbour (retrieval) edits weight: then the neighbour encoder is loaded."""
        return any(mix.get(NEIGHBOUR_KIND, 0) > 0 for mix in (self.mix_single_edit, self.mix_multi_edit))


# sections whose default is null (absent from older recipes) but that are built like the others when given
_OPTIONAL_SECTIONS: dict[str, type] = {"rules": RulesConfig, "neighbours": NeighboursConfig}


def to_dict(config: Any) -> dict[str, Any]:
    return asdict(config) if is_dataclass(config) else dict(config)


def validate(config: SynthesisConfig) -> SynthesisConfig:
    """Raise ConfigError naming the first bad value; return the config unchanged."""

    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(f"config '{config.name}': {message}")

    need(isinstance(config.seed, int) and config.seed >= 0, f"seed must be an integer >= 0, got {config.seed!r}")
    need(config.variants >= 1, f"variants must be >= 1, got {config.variants}")
    need(1 <= config.max_edits <= 25, f"max_edits must be in 1..25, got {config.max_edits}")
    need(config.num_edits_lambda >= 0, f"num_edits_lambda must be >= 0, got {config.num_edits_lambda}")
    need(config.retry_rejected >= 0, f"retry_rejected must be >= 0, got {config.retry_rejected}")
    for name in ("mix_single_edit", "mix_multi_edit"):
        mix = getattr(config, name)
        need(isinstance(mix, dict) and mix, f"{name} must be a non-empty mapping")
        bad = sorted(set(mix) - set(EDIT_KINDS))
        need(not bad, f"{name}: unknown edit kinds {bad}; kinds are {sorted(EDIT_KINDS)}")
        need(all(float(w) >= 0 for w in mix.values()), f"{name}: weights must be >= 0")
        need(sum(float(w) for w in mix.values()) > 0, f"{name}: at least one weight must be > 0")
    if config.rule_kinds_in_use():
        need(
            config.rules is not None,
            f"the mixes use rule edits {config.rule_kinds_in_use()}; add a 'rules:' "
            "section (e.g. rules: {max_span: 6})",
        )
        need(
            config.language in RULE_LANGUAGES,
            f"rule edits exist for the languages {', '.join(RULE_LANGUAGES)}, not '{config.language}'",
        )
        english_only = sorted(set(config.rule_kinds_in_use()) - set(GERMAN_RULE_KINDS))
        need(
            config.language != "de" or not english_only,
            f"rule kinds {english_only} need an English parse; German has {sorted(GERMAN_RULE_KINDS)}",
        )
    need(
        not config.uses_neighbours() or config.neighbours is not None,
        "the mixes use neighbour edits; add a 'neighbours:' section (e.g. neighbours: {encoder: packaged:minilm})",
    )
    if config.neighbours is not None:
        need(config.neighbours.max_span >= 1, f"neighbours.max_span must be >= 1, got {config.neighbours.max_span}")
        need(
            config.neighbours.batch_size >= 1, f"neighbours.batch_size must be >= 1, got {config.neighbours.batch_size}"
        )
    if config.rules is not None:
        need(config.rules.max_span >= 1, f"rules.max_span must be >= 1, got {config.rules.max_span}")
        need(config.rules.lexicon_names >= 1, f"rules.lexicon_names must be >= 1, got {config.rules.lexicon_names}")
    for name in ("delete_span", "seq2seq_span", "swap_distance"):
        span = getattr(config, name)
        need(1 <= span.min <= span.max, f"{name}: need 1 <= min <= max, got {span.min}..{span.max}")
        need(span.poisson_lambda is None or span.poisson_lambda >= 0, f"{name}: poisson_lambda must be >= 0")
    for name, filler in (("mlm", config.mlm), ("seq2seq", config.seq2seq)):
        need(filler.role in FILLER_ROLES, f"{name}.role must be one of {FILLER_ROLES}, got '{filler.role}'")
        need(
            name != "seq2seq" or filler.role != "masked_lm",
            "seq2seq.role cannot be masked_lm: a masked LM fills one token, not a span",
        )
        need(filler.top_k >= 1, f"{name}.top_k must be >= 1")
        need(filler.pick in ("uniform", "proportional"), f"{name}.pick must be uniform or proportional")
        need(filler.max_tokens >= 8, f"{name}.max_tokens must be >= 8")
        need(filler.max_new_tokens >= 1 and filler.max_span_tokens >= 1, f"{name}: generation caps must be >= 1")
        need(0 <= filler.min_new_tokens <= filler.max_new_tokens, f"{name}.min_new_tokens must be in 0..max_new_tokens")
        need(filler.num_beams >= 1, f"{name}.num_beams must be >= 1")
        need(filler.batch_size >= 1, f"{name}.batch_size must be >= 1")
    sev = config.severity
    need(sev.mode in ("absolute", "ratio"), f"severity.mode must be absolute or ratio, got '{sev.mode}'")
    need(sev.threshold > 0, f"severity.threshold must be > 0, got {sev.threshold}")
    need(sev.minor <= 0 and sev.major <= 0, "severity.minor and severity.major must be <= 0")
    need(sev.batch_size >= 1, "severity.batch_size must be >= 1")
    need(config.sentences_per_call >= 1, "sentences_per_call must be >= 1")
    need(config.long_lines in ("truncate", "skip"), f"long_lines must be truncate or skip, got '{config.long_lines}'")
    need(config.bad_utf8 in ("error", "skip"), f"bad_utf8 must be error or skip, got '{config.bad_utf8}'")
    need(
        config.block_size >= 1 and config.block_size % config.sentences_per_call == 0,
        f"block_size ({config.block_size}) must be a positive multiple of sentences_per_call "
        f"({config.sentences_per_call}) so that blocks never split a model-call group",
    )
    return config


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> SynthesisConfig:
    """Read and validate a YAML recipe.

    Args:
        path: the recipe file, or a packaged recipe's name (``sescore/offline_en.yaml``).
        overrides: top-level values (e.g. from the command line) that win over the file; None means "not given".

    Returns:
        The validated config; any problem is a ``ConfigError`` naming the file or the key.
    """
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    config = load_recipe(
        SynthesisConfig, path, given, label="SEScore synthesis recipe", optional_sections=_OPTIONAL_SECTIONS
    )
    return validate(config)


def with_overrides(config: SynthesisConfig, **changes: Any) -> SynthesisConfig:
    """A validated copy with some top-level values changed (tests, CLI flags)."""
    return validate(replace(config, **{k: v for k, v in changes.items() if v is not None}))


__all__ = [
    "EDIT_KINDS",
    "FILLER_ROLES",
    "RULE_PERTURBATIONS",
    "ConfigError",
    "FillerConfig",
    "NEIGHBOUR_KIND",
    "NeighboursConfig",
    "RulesConfig",
    "SeverityConfig",
    "SpanLength",
    "SynthesisConfig",
    "load_config",
    "to_dict",
    "validate",
    "with_overrides",
]
