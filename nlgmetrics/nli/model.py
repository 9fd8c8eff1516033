"""Batched NLI probabilities in canonical (entailment, neutral, contradiction) order, from any NLI checkpoint.

SEScore's severity labels and MENLI's metric both need P(e|premise, hypothesis) for many pairs. The original
MENLI code scored one pair at a time; here pairs are sorted by length, batched, truncated so that both texts
survive (``longest_first`` trims the longer one), and returned in input order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from nlgmetrics.modelroles import ModelRoleError, fingerprint, pick_device, resolve
from nlgmetrics.modelroles.batching import bucketed_batches, fill_vector_rows, token_lengths
from nlgmetrics.modelroles.precision import running_model
from nlgmetrics.nli.checkpoint import is_adapter_dir, load_adapter_model
from nlgmetrics.nli.defaults import DEFAULT_NLI, PUBLISHED_NLI  # noqa: F401  (re-exported)
from nlgmetrics.nli.labels import canonical_order


@dataclass
class NLIModel:
    """A loaded NLI classifier; ``order`` maps canonical labels to logit columns."""

    spec: str
    tokenizer: Any
    model: Any
    order: list[int]
    max_length: int
    temperature: float
    hash: str

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def predict_proba(
        self,
        premises: Sequence[str],
        hypotheses: Sequence[str],
        batch_size: int = 64,
        progress: bool = False,
        desc: str = "NLI",
    ) -> np.ndarray:
        """[N, 3] probabilities (e, n, c) for each (premise, hypothesis) pair."""
        return predict_proba(self, premises, hypotheses, batch_size=batch_size, progress=progress, desc=desc)


def load_nli(spec: str = DEFAULT_NLI, device: str | None = None) -> NLIModel:
    """Load an NLI model: an adapter folder of this toolkit, or any sequence classifier with NLI labels (once per
    process and device: ``nlgmetrics.modelroles.memo``)."""
    from nlgmetrics.modelroles.memo import memoised

    device = pick_device(device)
    return memoised(("nli", spec, device), lambda: _build_nli(spec, device))


def _build_nli(spec: str, device: str) -> NLIModel:
    resolved = resolve("nli", spec)
    if resolved.local and is_adapter_dir(resolved.location):
        tokenizer, model, config = load_adapter_model(resolved.location, device)
        max_length, temperature = config.max_length, float(config.temperature)
    else:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(resolved.location)
            model = AutoModelForSequenceClassification.from_pretrained(resolved.location)
        except (OSError, ValueError) as error:
            raise ModelRoleError(f"role 'nli': cannot load '{spec}': {error}") from error
        model.to(device).eval()
        max_length = min(int(getattr(tokenizer, "model_max_length", 512) or 512), 512)
        temperature = 1.0
    order = canonical_order(model.config.id2label)
    return NLIModel(spec, tokenizer, model, order, max_length, temperature, fingerprint(resolved.location))


def unload_nli(model: NLIModel) -> None:
    """Drop ``model`` from the process's model table, so its memory goes once the caller lets go of it too (a
    distillation teacher is not needed while the student trains)."""
    from nlgmetrics.modelroles.memo import forget

    forget(model)


def predict_proba(
    nli: NLIModel,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    batch_size: int = 64,
    progress: bool = False,
    desc: str = "NLI",
) -> np.ndarray:
    """Pure batching logic around the model: sort, encode with safe truncation, softmax, restore order."""
    import torch
    from tqdm.auto import tqdm

    from nlgmetrics.inputs import check_same_length, validate_texts
    from nlgmetrics.truncation import note_batch

    premises = validate_texts("premises", premises, allow_empty=True)
    hypotheses = validate_texts("hypotheses", hypotheses, allow_empty=True)
    check_same_length(premises=premises, hypotheses=hypotheses)
    out = np.zeros((len(premises), 3), dtype=np.float64)
    if not len(premises):
        return out
    # each pair padded to its own bucket length, and the pooler and classifier head run on a multiple of 8 rows
    # (fill_vector_rows): a pair's probabilities never depend on the batch it landed in
    batches = bucketed_batches(
        token_lengths(nli.tokenizer, premises, nli.max_length, hypotheses), batch_size, nli.max_length
    )
    fill_vector_rows(nli.model)
    order = torch.tensor(nli.order)
    with torch.inference_mode():
        for batch, padded in tqdm(batches, desc=desc, disable=not progress, unit="batch"):
            encoded = nli.tokenizer(
                [premises[i] for i in batch],
                [hypotheses[i] for i in batch],
                truncation="longest_first",
                max_length=padded,
                padding="max_length",
                return_tensors="pt",
            ).to(nli.device)
            note_batch(
                "NLI pairs",
                nli.tokenizer,
                encoded["attention_mask"].sum(1).tolist(),
                nli.max_length,
                [premises[i] for i in batch],
                [hypotheses[i] for i in batch],
            )
            logits = running_model(nli.model)(**encoded).logits.float().cpu()  # int8 copy under precision int8
            probs = torch.softmax(logits / nli.temperature, dim=-1)[:, order]
            out[batch] = probs.numpy()
    return out
