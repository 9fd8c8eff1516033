"""MARS settings: every choice the paper leaves open is a named, documented value here.

The paper (Liu et al., 2021) is the only specification, so each field says whether it is the paper's number or
our assumption. Configs load from YAML or dicts through the toolkit's one recipe loader (``nlgmetrics.recipes``):
unknown keys are errors (a typo must not silently fall back to a default), and two hashes identify a run:
``augmentation_hash`` (what changes the augmented references, and so keys the on-disk cache) and ``config_hash``
(everything that changes a score, for signatures).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from nlgmetrics.recipes import apply_overrides, load_recipe, parse_overrides, plain  # noqa: F401 (re-exported)

ALGORITHM_VERSION = 1  # bump when augmentation code changes its output for the same config (invalidates caches)

AUGMENTERS = ("self_planning", "naive")
PLANNING_SCOPES = ("head", "hidden")
JUDGE_SCOPES = ("sequence", "span")
LENGTH_UNITS = ("words", "tokens")
FUTURES = ("next_block", "all_text")


@dataclass(frozen=True)
class ModelsConfig:
    """Model roles (``packaged:<name>``, a local folder or a hub id)."""

    causal_lm: str = "packaged:smollm2"  # paper: gpt2-large
    encoder: str = "packaged:minilm"  # paper: roberta-large
    spacy: str = "packaged:en_core_web_sm"
    masked_lm: str | None = None  # only for augmenter "naive"; paper: roberta-large


@dataclass(frozen=True)
class MaskingConfig:
    """Section 2.1 / Algorithm 1: which reference words become blanks."""

    ratios: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8)  # paper; 0 = the human reference itself
    alpha: Mapping[str, float] = field(default_factory=lambda: {"ADJ": 4.0, "ADV": 3.0, "NOUN": 2.0})  # paper
    alpha_default: float = 1.0  # paper: "other POS 1"
    idf_table: str = "default"  # "default" = shipped WikiText-103 table, or a path to a table JSON
    idf_smoothing: float = 1.0  # assumption: idf = -log((df + s) / (M + s)) so unseen words stay finite
    min_idf: float = 1e-3  # assumption: floor, since a word in every document has idf 0 (priority alpha / 0)
    lcs_cost: int = 10  # paper
    default_cost: int = 1  # paper
    lowercase: bool = True  # assumption: LCS and idf lookups compare lowercased words
    unmaskable_pos: tuple[str, ...] = ("SPACE",)  # assumption: whitespace tokens are never blanks
    # ours (cost bound, not in the paper): only the first N maskable words of a reference may become blanks, and
    # each ratio's budget counts those N. The LM never reads past the last blank (the rest is copied verbatim), so
    # augmenting a reference costs at most what an N-word reference costs, whatever its length; shorter references
    # are untouched. 0 = no bound (the paper).
    window_words: int = 0


@dataclass(frozen=True)
class ClozeConfig:
    """Section 2.2 / Algorithm 2: filling the blanks with a causal LM (generate, judge, revise)."""

    temperature: float = 1.3  # paper's xi: sampling temperature, also used in the planning reward
    top_k: int = 50  # assumption: transformers' sampling default (paper used GPT-2 through transformers)
    max_extra_guesses: int = 1  # paper's tau (value not given): candidate lengths 1 .. |B| + tau; 1 for CPU speed
    blank_length_unit: str = "words"  # |B| counted in masked words (paper masks words) or in LM tokens
    judge_lookahead: int = 1  # tokens of the next text block scored by the judge; -1 = all (paper), 1 = free
    judge_scope: str = "sequence"  # ppl over (reference so far + fill + next text) or only (fill + next text)
    respect_word_boundaries: bool = True  # a fill starts a new word iff the masked words did
    ban_newlines: bool = True  # fills stay on one line: tokens with newline/tab/control characters are banned
    max_context_tokens: int = 512  # paper cut long contexts at the tail (kept the beginning)
    lockstep_references: int = 8  # references decoded together (speed; see README on batch invariance)
    text_chunk: int = 1  # text-block tokens fed per step while other rows decode; <= 0 = whole block


@dataclass(frozen=True)
class PlanningConfig:
    """Reinforced self-planning (eq. 3-6) for blanks followed by text."""

    enabled: bool = True  # False = ablation "w/o self-planning"
    scope: str = "head"  # where the temporary delta lives: "head" (output projection) or "hidden" (last state)
    steps: int = 3  # paper's k
    eta: float = 0.02  # paper's learning rate (per normalised step of the all-parameter update)
    eta_scale: float = 2.0  # measured: makes the head-only step match the paper's all-parameter step (README)
    future: str = "next_block"  # reward tokens: the next text block, or all remaining text
    importance_cap: float | None = 10.0  # truncated importance weight pi_d/pi <= cap (None = untruncated)


@dataclass(frozen=True)
class ScoreConfig:
    """Section 2.3: weighted cosine similarity on the encoder role."""

    q: float = 0.8  # assumption (paper gives no value): geometric ratio, weights a*q^(i-1) summing to 1
    batch_size: int = 32
    max_length: int = 512


@dataclass(frozen=True)
class MARSConfig:
    """Everything that decides a MARS score: the models, masking, cloze filling, self-planning and scoring
    sections, the augmenter and the runtime settings. Built by :func:`load_config` from a recipe such as the packaged
    ``mars/offline.yaml``; values are checked when it is made, and :meth:`augmentation_dict` is what keys the
    augmentation cache."""

    models: ModelsConfig = field(default_factory=ModelsConfig)
    masking: MaskingConfig = field(default_factory=MaskingConfig)
    cloze: ClozeConfig = field(default_factory=ClozeConfig)
    planning: PlanningConfig = field(default_factory=PlanningConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    augmenter: str = "self_planning"  # or "naive" (masked-LM fill, fixed length; paper's baseline)
    use_context: bool = True  # False = ablation "w/o context" (no context for the LM, no LCS costs)
    seed: int = 0
    device: str = "auto"
    cache_dir: str | None = "~/.cache/nlgmetrics/mars"  # None disables the augmentation cache
    progress: bool = True

    def __post_init__(self) -> None:
        _validate(self)

    def to_dict(self) -> dict[str, Any]:
        return plain(dataclasses.asdict(self))

    def augmentation_dict(self) -> dict[str, Any]:
        """Fields that change augmented references (not ratios: the cache is keyed per ratio)."""
        masking = dict(plain(dataclasses.asdict(self.masking)))
        masking.pop("ratios")
        if not masking.get("window_words"):
            masking.pop("window_words", None)  # no bound: the hash (and cache keys) of configs written before it
        cloze = dict(plain(dataclasses.asdict(self.cloze)))
        cloze.pop("lockstep_references")  # speed only (float rounding aside, see README)
        out: dict[str, Any] = {
            "algorithm_version": ALGORITHM_VERSION,
            "augmenter": self.augmenter,
            "use_context": self.use_context,
            "seed": self.seed,
            "masking": masking,
            "spacy": self.models.spacy,
        }
        if self.augmenter == "naive":
            out["masked_lm"] = self.models.masked_lm
        else:
            out["causal_lm"] = self.models.causal_lm
            out["cloze"] = cloze
            out["planning"] = plain(dataclasses.asdict(self.planning))
        return out

    def scoring_dict(self) -> dict[str, Any]:
        """Everything that can change a score (excludes device, cache, progress bars, batch sizes)."""
        out = self.augmentation_dict()
        out["ratios"] = list(self.masking.ratios)
        out["encoder"] = self.models.encoder
        out["q"] = self.score.q
        out["max_length"] = self.score.max_length
        return out


def stable_hash(payload: Any, length: int = 12) -> str:
    """Short sha256 of canonical JSON: equal settings give equal hashes on every machine."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _validate(config: MARSConfig) -> None:
    m, c, p, s = config.masking, config.cloze, config.planning, config.score
    ratios = list(m.ratios)
    if not ratios:
        raise ValueError("masking.ratios is empty; use e.g. [0.0, 0.2, 0.4, 0.6, 0.8]")
    if any(not 0.0 <= r < 1.0 for r in ratios):
        raise ValueError(f"masking.ratios must lie in [0, 1), got {ratios}")
    if ratios != sorted(set(ratios)):
        raise ValueError(f"masking.ratios must be increasing and distinct (weights follow their order), got {ratios}")
    if m.lcs_cost < 0 or m.default_cost < 0:
        raise ValueError("masking costs must be non-negative integers")
    if isinstance(m.window_words, bool) or not isinstance(m.window_words, int) or m.window_words < 0:
        raise ValueError(f"masking.window_words must be an integer >= 0 (0 = no bound), got {m.window_words!r}")
    if m.min_idf <= 0 or m.idf_smoothing < 0:
        raise ValueError("masking.min_idf must be > 0 and masking.idf_smoothing >= 0")
    if config.augmenter not in AUGMENTERS:
        raise ValueError(f"augmenter must be one of {AUGMENTERS}, got '{config.augmenter}'")
    if config.augmenter == "naive" and not config.models.masked_lm:
        raise ValueError("augmenter 'naive' needs models.masked_lm (e.g. roberta-large or a local folder)")
    if c.temperature <= 0:
        raise ValueError(f"cloze.temperature must be > 0, got {c.temperature}")
    if c.top_k < 0 or c.max_extra_guesses < 0:
        raise ValueError("cloze.top_k and cloze.max_extra_guesses must be >= 0")
    if c.judge_lookahead == 0 or c.judge_lookahead < -1:
        raise ValueError("cloze.judge_lookahead must be -1 (whole block) or >= 1")
    if c.judge_scope not in JUDGE_SCOPES:
        raise ValueError(f"cloze.judge_scope must be one of {JUDGE_SCOPES}")
    if c.blank_length_unit not in LENGTH_UNITS:
        raise ValueError(f"cloze.blank_length_unit must be one of {LENGTH_UNITS}")
    if c.lockstep_references < 1 or c.max_context_tokens < 0:
        raise ValueError("cloze.lockstep_references must be >= 1 and cloze.max_context_tokens >= 0")
    if p.scope not in PLANNING_SCOPES:
        raise ValueError(
            f"planning.scope must be one of {PLANNING_SCOPES} (parameter scopes 'all'/'last_layers:N' were only "
            "measured, by bench/bench_mars_planning.py, in git history at commit 6c42b7a: they cost seconds per token "
            "on CPU)"
        )
    if p.steps < 0 or p.eta < 0 or p.eta_scale <= 0:
        raise ValueError("planning.steps and planning.eta must be >= 0 and planning.eta_scale > 0")
    if p.future not in FUTURES:
        raise ValueError(f"planning.future must be one of {FUTURES}")
    if p.importance_cap is not None and p.importance_cap < 1.0:
        raise ValueError("planning.importance_cap must be >= 1 (or null for no truncation)")
    if not 0.0 < s.q <= 1.0:
        raise ValueError(f"score.q must lie in (0, 1], got {s.q}")
    if s.batch_size < 1 or s.max_length < 8:
        raise ValueError("score.batch_size must be >= 1 and score.max_length >= 8")


_IGNORED_TOP_LEVEL = ("metric", "description")  # informational keys allowed in YAML files

ABLATIONS: dict[str, dict[str, Any]] = {
    "full": {},
    "no_planning": {"planning.enabled": False},
    "no_context": {"use_context": False},
    "no_planning_no_context": {"planning.enabled": False, "use_context": False},
    "naive": {"augmenter": "naive"},
}


def load_config(
    source: str | Path | Mapping[str, Any] | MARSConfig | None = None,
    overrides: Mapping[str, Any] | None = None,
    ablation: str | None = None,
) -> MARSConfig:
    """A validated MARS config: a YAML path, a dict, a config object or defaults, then an ablation, then overrides.

    Args:
        source: a YAML file or packaged recipe name (``mars/offline.yaml``), a nested dict, a ``MARSConfig`` or
            None (the documented defaults).
        overrides: dotted or double-underscore keys (``score.q``, ``planning__enabled``); they win over the ablation.
        ablation: a key of ``ABLATIONS`` (``no_planning``, ``naive``, ...).

    Returns:
        The validated config.

    Raises:
        RecipeError: an unknown key (``nlgmetrics.recipes.RecipeError``, a ValueError), naming the file and key.
        ValueError: a bad value, naming its key.
    """
    merged: dict[str, Any] = {}
    if ablation is not None:
        if ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation '{ablation}'; known: {', '.join(ABLATIONS)}")
        merged.update(ABLATIONS[ablation])
    merged.update(overrides or {})
    return load_recipe(MARSConfig, source, merged, label="MARS config", ignore=_IGNORED_TOP_LEVEL)
