"""The baseline metrics' declarations for the metric registry (``nlgmetrics.registry``).

Declared here once, found through the ``nlgmetrics.metrics`` entry points like every other metric; importing this
module loads no model and no torch (the command line reads it for ``--help``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nlgmetrics.modelroles.resolve import DEFAULT_ENCODER
from nlgmetrics.registry import (
    MetricSpec,
    batch_size_option,
    device_option,
    option,
    precision_option,
    progress_option,
)

DEFAULT_CAUSAL_LM = "packaged:smollm2"
# the causal LM's batches are capped: a 30-layer LM on 64 texts of a few hundred tokens needs GBs of activations
LM_BATCH_CAP = 16


def encoder_option() -> Any:
    return option(
        DEFAULT_ENCODER,
        "encoder role value for bertscore/cosine (offline: packaged:me5-small, "
        "packaged:minilm, packaged:mpnet; or a hub id or local folder)",
    )


@dataclass
class NoOptions:
    """BLEU and chrF take no options (sacrebleu's defaults; the signature records them)."""


@dataclass
class BERTScoreOptions:
    encoder: str = encoder_option()
    layer: int | None = option(None, "hidden layer for bertscore (default: the last)")
    prompt: str = option(
        "",
        "text put before every text for bertscore, as context only: its tokens are never matched "
        "(an instruction prompt, e.g. EmbeddingGemma's 'task: sentence similarity | query: ')",
    )
    batch_size: int = batch_size_option()
    device: str | None = device_option()
    precision: str = precision_option()
    progress: bool = progress_option()


@dataclass
class CosineOptions:
    encoder: str = encoder_option()
    batch_size: int = batch_size_option()
    device: str | None = device_option()
    precision: str = precision_option()
    progress: bool = progress_option()


@dataclass
class LMOptions:
    causal_lm: str = option(
        DEFAULT_CAUSAL_LM,
        "causal_lm role value for lm-likelihood / lm-ratio (GPT-PPL-style "
        "fluency); offline: packaged:smollm2, or opt-in packaged:gemma3-270m "
        "(Gemma Terms of Use, not an OSI licence)",
    )
    batch_size: int = batch_size_option()
    device: str | None = device_option()
    progress: bool = progress_option()


def build_sacrebleu(name: str) -> Any:
    def build(options: NoOptions) -> Any:
        from nlgmetrics.baselines.scorers import SacreBleuScorer

        return SacreBleuScorer(name)

    return build


def build_bertscore(options: BERTScoreOptions) -> Any:
    from nlgmetrics.baselines.scorers import BERTScorer

    return BERTScorer(
        options.encoder,
        options.batch_size,
        options.device,
        options.progress,
        layer=options.layer,
        prompt=options.prompt,
        precision=options.precision,
    )


def build_cosine(options: CosineOptions) -> Any:
    from nlgmetrics.baselines.scorers import CosineScorer

    return CosineScorer(
        options.encoder, options.batch_size, options.device, options.progress, precision=options.precision
    )


def build_lm(relative: bool) -> Any:
    def build(options: LMOptions) -> Any:
        from nlgmetrics.baselines.lm_likelihood import LMLikelihoodScorer

        return LMLikelihoodScorer(
            options.causal_lm,
            min(options.batch_size, LM_BATCH_CAP),
            options.device,
            options.progress,
            relative=relative,
        )

    return build


BLEU = MetricSpec(
    "bleu",
    "sentence BLEU (sacrebleu, effective order): n-gram overlap with the references",
    NoOptions,
    build_sacrebleu("bleu"),
    languages="any (sacrebleu 13a tokenisation)",
    licence="no model (sacrebleu: Apache-2.0)",
)
CHRF = MetricSpec(
    "chrf",
    "sentence chrF (sacrebleu): character n-gram F-score against the references",
    NoOptions,
    build_sacrebleu("chrf"),
    languages="any",
    licence="no model (sacrebleu: Apache-2.0)",
)
BERTSCORE = MetricSpec(
    "bertscore",
    "BERTScore F1: greedy token alignment of contextual embeddings",
    BERTScoreOptions,
    build_bertscore,
    languages="the encoder's (me5-small: ~100)",
    licence="MIT (me5-small)",
)
COSINE = MetricSpec(
    "cosine",
    "cosine similarity of mean-pooled sentence embeddings",
    CosineOptions,
    build_cosine,
    languages="the encoder's (me5-small: ~100)",
    licence="MIT (me5-small)",
)
LM_LIKELIHOOD = MetricSpec(
    "lm-likelihood",
    "mean token log-likelihood of the hypothesis under a causal LM (fluency, reference-free)",
    LMOptions,
    build_lm(False),
    languages="the LM's (SmolLM2: English)",
    licence="Apache-2.0 (SmolLM2)",
)
LM_RATIO = MetricSpec(
    "lm-ratio",
    "causal-LM likelihood of the hypothesis relative to the reference's (fluency)",
    LMOptions,
    build_lm(True),
    languages="the LM's (SmolLM2: English)",
    licence="Apache-2.0 (SmolLM2)",
)
