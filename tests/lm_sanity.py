"""One sanity check for every causal LM the toolkit packages: a fluent sentence is far likelier than its shuffle."""

from __future__ import annotations

import math
from typing import Any

FLUENT = "The weather was cold, so we stayed at home and read books by the fire."
SHUFFLED = "fire cold books home the stayed by so, read we and The at weather was the."


def perplexity(loaded: Any, text: str) -> float:
    """exp of the mean next-token loss of ``text`` under a loaded causal LM (``LoadedModel``)."""
    import torch

    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        return math.exp(float(loaded.model(**enc, labels=enc["input_ids"]).loss))


def fluent_and_shuffled(loaded: Any) -> tuple[float, float]:
    return perplexity(loaded, FLUENT), perplexity(loaded, SHUFFLED)
