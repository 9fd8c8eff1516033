"""MENLI's declarations for the metric registry (``nlgmetrics.registry``): the metric and its mixes.

``menli`` is the NLI metric; ``menli+<metric>[+<metric>...]`` mixes it with any other registered metric
(``w_0 * MENLI + sum_i w_i * M_i`` over stored or fitted ranges, ``menli.combine``). Importing this module loads
no model and no torch: the command line reads it for ``--help``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

from menli.pooling import TASKS
from nlgmetrics.nli.defaults import DEFAULT_NLI
from nlgmetrics.registry import (
    Combination,
    MetricSpec,
    RegistryError,
    batch_size_option,
    device_option,
    lang_option,
    load_metric,
    option,
    part_options,
    precision_option,
    progress_option,
)

# The packaged mix recipe (menli+sescore+lm-ratio) was fitted with the MiniLM SEScore ensemble, the SEScore default
# when it was measured; a recipe names its parts' models, so with today's default SEScore it would find no recipe.
# A mix therefore scores SEScore with that checkpoint unless the caller names one (sescore resolves the name).
MIX_PARTNER_DEFAULTS: dict[str, dict[str, Any]] = {"sescore": {"checkpoint": ["minilm-v2"]}}


@dataclass
class MENLIOptions:
    nli_model: str = option(
        DEFAULT_NLI,
        "NLI role value for MENLI (offline: packaged:nli-mpnet, packaged:nli-minilm, "
        "packaged:nli-me5 for non-English text; or a hub id or local folder)",
    )
    task: str = option(
        "mt",
        "MENLI: the paper's pooling for the task (mt: e <->; summarization: e-c <-, "
        "reference-free -c ->); --formula/--direction override it",
        choices=TASKS,
    )
    formula: str | None = option(None, "MENLI formula: e, -c, e-n, e-c, e-n-2c (default: the task's)")
    direction: str | None = option(
        None, "MENLI direction: -> (reference entails hypothesis), <-, <-> (default: the task's)"
    )
    aggregation: str = option(
        "max", "multi-reference aggregation: max or mean over the references", choices=("max", "mean")
    )
    granularity: str = option(
        "auto",
        "MENLI: score sentence pairs (sentence), whole texts (text), or sentences only "
        "for pairs longer than the NLI window (auto)",
        choices=("auto", "sentence", "text"),
    )
    sentence_pool: str = option(
        "mean", "MENLI at sentence granularity: mean or min over hypothesis sentences", choices=("mean", "min")
    )
    sentence_candidates: int = option(
        0,
        "MENLI at sentence granularity: score only each hypothesis sentence's k most "
        "word-sharing premise sentences (+ the same-position one); 0 = every "
        "sentence pair",
    )
    reference_free: bool = option(
        False, "score against the source (premise = source) instead of the references", cli=False
    )
    batch_size: int = batch_size_option()
    device: str | None = device_option()
    precision: str = precision_option()
    progress: bool = progress_option()
    lang: str | None = lang_option()


def _weights(text: str) -> list[float]:
    """``--weights 0.1,0.6,0.3`` -> floats (checked against the parts by the scorer)."""
    import argparse

    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers (MENLI first), got '{text}'") from None


@dataclass
class MixOptions:
    weight: float = option(0.2, "menli+<metric>: the NLI weight w of w * MENLI + (1 - w) * metric")
    weights: list[float] | None = option(
        None,
        "menli+<a>+<b>...: one weight per part, MENLI first, summing to 1 "
        "(default: the stored recipe's, e.g. the packaged "
        "menli+sescore+lm-ratio: 0.1,0.6,0.3)",
        parse=_weights,
        metavar="W0,W1,...",
    )
    normalization: str = option(
        "auto",
        "menli+<metric>[+<metric>...]: 'auto' (the packaged recipe fitted with these "
        "models if there is one, else 'set'), 'set' (min-max over the scored set: "
        "each score depends on the others) or a stored recipe or ranges JSON file "
        "(a path, or a packaged one: menli/nli-mpnet+bertscore-minilm.json, "
        "menli/mix/nli-mpnet+sescore-minilm+lm-ratio-smollm2.json)",
    )


def build_menli(options: MENLIOptions) -> Any:
    """The MENLI scorer of the options (the task's formula and direction unless those are named)."""
    from menli.pooling import task_strategy
    from menli.scorer import MENLIScorer

    try:
        formula, direction = task_strategy(options.task, options.reference_free, options.formula, options.direction)
    except ValueError as error:
        raise RegistryError(str(error)) from None
    return MENLIScorer(
        options.nli_model,
        formula,
        direction,
        options.aggregation,
        reference_free=options.reference_free,
        batch_size=options.batch_size,
        device=options.device,
        progress=options.progress,
        granularity=options.granularity,
        sentence_reduce=options.sentence_pool,
        sentence_candidates=options.sentence_candidates,
        precision=options.precision,
        lang=options.lang,
        follow_language=options.nli_model == DEFAULT_NLI,
    )


def _recipe(normalization: str) -> Any:
    """'auto' and 'set' as they are; anything else is a recipe file (a path or a packaged name)."""
    if normalization in ("auto", "set"):
        return normalization
    from menli.combine import MixRecipe
    from nlgmetrics.resources import config_path

    try:
        return MixRecipe.load(config_path(normalization))
    except (FileNotFoundError, ValueError) as error:
        raise RegistryError(f"--normalization: {error}") from None


def build_mix(name: str, partners: Sequence[str], explicit: dict[str, Any], options: MixOptions, devices: int) -> Any:
    """``menli+<metric>[+<metric>...]``: MENLI and each partner built from the registry, mixed by one recipe.

    One partner is a mix of two parts whose weights are ``[weight, 1 - weight]`` unless ``weights`` names them.
    """
    from menli.combine import pair_weights
    from menli.scorer import MixedScorer

    if len(partners) == 1 and options.weights is not None:
        raise RegistryError(f"--weights is for MENLI with several partners (menli+<a>+<b>...); {name} takes --weight")
    try:
        weights = pair_weights(options.weight) if len(partners) == 1 else options.weights
    except ValueError as error:
        raise RegistryError(str(error)) from None
    recipe = _recipe(options.normalization)
    if recipe == "set" and weights is None:
        raise RegistryError(f"{name} with --normalization set needs --weights (MENLI first, summing to 1)")
    menli = load_metric("menli", devices=devices, **part_options("menli", explicit))
    parts = []
    for partner in partners:
        chosen = part_options(partner, explicit)
        if len(partners) > 1:
            for key, value in MIX_PARTNER_DEFAULTS.get(partner, {}).items():
                chosen.setdefault(key, value)
        parts.append(load_metric(partner, devices=devices, **chosen))
    try:
        scorer = MixedScorer(menli, parts, weights, recipe)
        if options.normalization == "auto" and scorer.resolve_recipe(warn=False) is None:
            warnings.warn(
                f"{name}: no packaged recipe was fitted with these models, so every part is min-max "
                "normalised over the scored rows and each score depends on the others; store the ranges "
                "once (--save-normalization, or scorer.last_recipe.save) and pass them after "
                "(--normalization <file>, or recipe=)",
                UserWarning,
                stacklevel=2,
            )
    except ValueError as error:
        raise RegistryError(str(error)) from None
    return scorer


MENLI = MetricSpec(
    "menli",
    "NLI probabilities (entailment, contradiction) between reference and hypothesis, pooled by task",
    MENLIOptions,
    build_menli,
    languages="the NLI model's (nli-mpnet: English; nli-me5: ~100)",
    licence="Apache-2.0 (all-mpnet-base-v2); the NLI adapter's training data includes SICK (CC BY-NC-SA 3.0)",
    combination=Combination(MixOptions, build_mix),
)
