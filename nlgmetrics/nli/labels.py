"""Label order differs between NLI checkpoints (roberta-large-mnli: c,n,e; deberta-mnli: c,n,e; ynie: e,n,c).

Everything downstream works on probabilities in the canonical order (entailment, neutral, contradiction); the
permutation is always read from the checkpoint's ``id2label``, never assumed.
"""

from __future__ import annotations

from typing import Mapping

CANONICAL: tuple[str, str, str] = ("entailment", "neutral", "contradiction")

_ALIASES = {
    "entailment": "entailment",
    "entails": "entailment",
    "entailed": "entailment",
    "e": "entailment",
    "neutral": "neutral",
    "n": "neutral",
    "contradiction": "contradiction",
    "contradict": "contradiction",
    "contradicts": "contradiction",
    "c": "contradiction",
}


class LabelOrderError(ValueError):
    """The checkpoint's labels cannot be mapped to entailment / neutral / contradiction."""


def canonical_order(id2label: Mapping[int | str, str]) -> list[int]:
    """Indices into the model's logits that give (entailment, neutral, contradiction), in that order."""
    names: dict[str, int] = {}
    for index, label in id2label.items():
        key = _ALIASES.get(str(label).strip().lower())
        if key is None:
            raise LabelOrderError(
                f"NLI label '{label}' (id {index}) is not entailment/neutral/contradiction; "
                "set id2label in the model config"
            )
        names[key] = int(index)
    missing = [name for name in CANONICAL if name not in names]
    if missing:
        raise LabelOrderError(f"NLI model config lacks labels {missing}; its id2label is {dict(id2label)}")
    return [names[name] for name in CANONICAL]
