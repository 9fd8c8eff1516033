"""Model card (README.md) written beside every exported checkpoint, from what the run itself recorded.

A checkpoint without its data, recipe and dev numbers cannot be trusted or reproduced; writing the card from
``hparams.yaml`` and the synthesis summary at export time means it can never disagree with the weights.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def _fmt(value: Any) -> str:
    """Four decimals for metrics; small values such as learning rates keep their digits (5e-05, not 0.0001)."""
    if isinstance(value, float):
        return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.3g}"
    return "-" if value is None else str(value)


def _data_lines(data: dict[str, Any], model: dict[str, Any]) -> list[str]:
    """What the weights were trained on: synthesis triples or human judgments, and where training started."""
    split = (
        f"{data.get('train_pairs')} training pairs, {data.get('val_pairs')} held-out pairs "
        f"(split by reference, val_fraction {data.get('val_fraction')})"
    )
    if data.get("judged"):
        kind = (
            f"scored rows (`{data['judged_score']}`), regression"
            if data.get("judged_score")
            else "relative-ranking pairs (better vs worse candidate), pairwise logistic loss"
        )
        lines = [f"- Human judgments: `{data['judged']}`, {kind}; {split}."]
    else:
        lines = [f"- Synthesis dataset: `{data.get('dataset')}`; labels: {data.get('labels', 'severity')}; {split}."]
    if model.get("init_from"):
        lines.append(f"- Started from the checkpoint `{model['init_from']}` (its architecture and weights).")
    return lines


def _selection_line(record: dict[str, Any], data: dict[str, Any]) -> str:
    where = (
        f"the dev mix `{data['dev_mix']}` ({data.get('dev_half')} half, {data.get('dev_items_per_set')} items per set)"
        if data.get("dev_mix")
        else f"`{data.get('dev_judgments')}` (`{data.get('dev_score')}`, first {data.get('dev_items')} items, "
        f"{data.get('dev_pairs')} pairs)"
    )
    return f"- Model selection: {record.get('monitor')} ({record.get('mode')}) on {where}."


def synthesis_summary(dataset: str | Path | None) -> dict[str, Any] | None:
    """The ``summary.json`` that ``train.py synthesize`` wrote beside the training rows, if it is there."""
    if not dataset:
        return None
    path = Path(dataset) / "summary.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _training_record(hparams: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the record of the training run, the interpolation record or {}): an interpolated checkpoint's training
    facts are its trained end's; the card says which point between start and end it is."""
    record = hparams.get("record") or {}
    interpolated = record.get("interpolated") or {}
    return (interpolated.get("trained_record") or {} if interpolated else record), interpolated


def _language_line(languages: list[str], summary: dict[str, Any] | None) -> str:
    """What the card says about languages: the declared ones, which scoring enforces (other text is refused)."""
    from nlgmetrics.language import name

    if languages == ["en"]:
        return "- English only (the encoder and the NLI model that labelled severities are English)."
    nli = ((summary or {}).get("models") or {}).get("nli")
    labelled = f"; severities labelled by `{nli}`" if nli else ""
    return (
        f"- Declared languages: {', '.join(name(code) for code in languages)}, the language of its training "
        f"sentences{labelled}; scoring refuses references identified as another language unless `--lang` says so."
    )


def render_model_card(hparams: dict[str, Any], size_bytes: int, summary: dict[str, Any] | None = None) -> str:
    """Markdown card: what the model is, what it was trained on, how, and how it did on the dev set."""
    record, interpolated = _training_record(hparams)
    model = record.get("model_hparams") or {}
    data = record.get("data") or {}
    metrics = record.get("metrics") or {}
    regressor = hparams.get("regressor") or {}
    lora = regressor.get("lora")
    weights = hparams.get("weights") or {}
    note = (hparams.get("record") or {}).get("note")
    lines = [
        "# SEScore regressor checkpoint",
        "",
        f"Encoder `{hparams.get('encoder')}` (weight hash `{hparams.get('encoder_hash')}`, checked on load)"
        + (f" with LoRA r={lora['r']} adapters" if lora else ", fully fine-tuned")
        + f"; head {regressor.get('hidden_sizes')} over [c; r; c*r; |c-r|] of mean-pooled"
        + (" layer-mixed" if regressor.get("layer_mix") else "")
        + " token states"
        + (
            ", plus greedy token-alignment precision/recall/F1 (BERTScore-style) with a linear skip to the output"
            if regressor.get("alignment")
            else ""
        )
        + (f", reading the pair features {', '.join(regressor['lexical'])}" if regressor.get("lexical") else "")
        + (
            f", reading NLI entailment/contradiction probabilities of `{regressor['nli']}` in both directions "
            f"(weight hash `{hparams.get('nli_hash')}`, checked on load)"
            if regressor.get("nli")
            else ""
        )
        + ".",
        f"Weights: `{weights.get('file')}` ({size_bytes / 2**20:.1f} MB, {weights.get('contents')}, stored as "
        f"{weights.get('dtype')}); loading never unpickles.",
        f"Output: `{(hparams.get('output_scale') or {}).get('formula')}` "
        f"({(hparams.get('output_scale') or {}).get('meaning')}).",
        "",
        *([f"Chosen: {note}", ""] if note else []),
        "```python",
        "from sescore import SEScoreScorer",
        'scores = SEScoreScorer("<this folder>").score(candidates, [[ref] for ref in references])',
        "```",
        "",
        "## Training data",
        *_data_lines(data, model),
    ]
    if interpolated:
        lines.append(
            f"- Weights {_fmt(interpolated.get('weight'))} of the way from `{interpolated.get('start')}` (the "
            f"run's initialisation) to `{interpolated.get('trained')}` (its trained export), WiSE-FT style: the "
            "LoRA update is scaled, head and layer mix are averaged. Everything below describes that trained run."
        )
    if summary:
        severity = summary.get("severity") or {}
        lines += [
            f"- Made by `train.py synthesize` with config `{summary.get('config_name')}` "
            f"(hash `{summary.get('config_hash')}`, seed {summary.get('seed')}): {summary.get('rows')} rows from "
            f"{summary.get('sentences')} sentences; minor share {_fmt(severity.get('minor_share'))}, "
            f"major share {_fmt(severity.get('major_share'))}, mean score {_fmt(summary.get('mean_score'))}.",
            "- Models used for synthesis: "
            + ", ".join(f"{k} = `{v}`" for k, v in (summary.get("models") or {}).items())
            + ".",
        ]
    lines += [
        _selection_line(record, data),
        "",
        "## Recipe",
        "| hyper-parameter | value |",
        "|---|---|",
    ]
    for key in (
        "encoder_lr",
        "head_lr",
        "layerwise_decay",
        "encoder_freeze_fraction",
        "freeze_embeddings",
        "weight_decay",
        "pair_scale",
        "rank_weight",
    ):
        if key in model:
            lines.append(f"| {key} | {_fmt(model[key])} |")
    # architecture from the exported regressor itself: with init_from, the run's own model arguments are unused
    architecture = {
        "dropout": regressor.get("dropout"),
        "max_length": regressor.get("max_length"),
        "lora_r": (lora or {}).get("r"),
        "lora_alpha": (lora or {}).get("alpha"),
        "lora_dropout": (lora or {}).get("dropout"),
    }
    lines += [f"| {key} | {_fmt(value)} |" for key, value in architecture.items()]
    data_hp = record.get("data_hparams") or {}
    for key in ("batch_size", "bucket_pool", "shuffle_seed", "split_seed"):
        if key in data_hp:
            lines.append(f"| {key} | {_fmt(data_hp[key])} |")
    lines += (
        [
            "",
            "## Dev numbers at the exported step",
            f"Selected: {record.get('selected')} at epoch {record.get('epoch')}, step {record.get('global_step')} "
            f"({record.get('train_seconds')} s of training, world size {record.get('world_size')}, "
            f"precision {record.get('precision')}).",
            "",
            "| metric | value |",
            "|---|---|",
        ]
        + [f"| {k} | {_fmt(v)} |" for k, v in sorted(metrics.items())]
        + [
            "",
            "## Limits",
            _language_line(hparams.get("languages") or ["en"], summary),
            (
                "- Fine-tuned on the human judgments above"
                if data.get("judged")
                else "- Trained on synthetic errors in the synthesis dataset's sentences (news for the paper's recipe)"
            )
            + f"; long multi-sentence texts are truncated at {regressor.get('max_length')} tokens.",
            "- The dev slice above chose this checkpoint: report results on other items or other data sets.",
            "",
        ]
    )
    return "\n".join(lines)


def write_model_card(checkpoint_dir: str | Path) -> Path:
    """Render README.md from the folder's ``hparams.yaml`` (and the synthesis summary it points at)."""
    folder = Path(checkpoint_dir)
    hparams = yaml.safe_load((folder / "hparams.yaml").read_text(encoding="utf-8"))
    weights = folder / ((hparams.get("weights") or {}).get("file") or "model.safetensors")
    size = weights.stat().st_size if weights.exists() else 0
    dataset = (_training_record(hparams)[0].get("data") or {}).get("dataset")
    card = folder / "README.md"
    card.write_text(render_model_card(hparams, size, synthesis_summary(dataset)), encoding="utf-8")
    return card


def render_ensemble_card(members: dict[str, dict[str, Any]], note: str = "") -> str:
    """Markdown card of an ensemble folder from its members' ``hparams.yaml`` contents (by sub-folder name): what
    scoring with it means, its members and why they were put together; each member's own card has its training
    facts."""
    lines = [
        "# SEScore ensemble",
        "",
        f"Scores with the mean of {len(members)} SEScore checkpoints' scores (each takes the best score over a "
        "segment's references first). Scoring costs one encoder pass per member.",
        "",
        "```python",
        "from sescore import SEScoreScorer",
        'scores = SEScoreScorer("<this folder>").score(candidates, [[ref] for ref in references])',
        "```",
        "",
        "| member | encoder | weights | model card |",
        "|---|---|---|---|",
    ]
    for member, hparams in members.items():
        lines.append(
            f"| `{member}` | `{hparams.get('encoder')}` (hash `{hparams.get('encoder_hash')}`) | "
            f"{(hparams.get('weights') or {}).get('contents')} | `{member}/README.md` |"
        )
    if note:
        lines += ["", "## Why these members", note]
    return "\n".join(lines) + "\n"


__all__ = ["render_ensemble_card", "render_model_card", "synthesis_summary", "write_model_card"]
