"""Model roles: every metric asks for models by role (encoder, nli, masked_lm, seq2seq, causal_lm, spacy).

A role's value is a hub id, a local directory, or ``packaged:<name>`` for weights that load offline.
"""

from nlgmetrics.modelroles.errors import ModelRoleError
from nlgmetrics.modelroles.load import (
    LoadedModel,
    check_device,
    load_causal_lm,
    load_encoder,
    load_fresh,
    load_masked_lm,
    load_model,
    load_seq2seq,
    load_spacy,
    pick_device,
)
from nlgmetrics.modelroles.resolve import (
    DEFAULT_ENCODER,
    PACKAGED,
    ROLES,
    ResolvedModel,
    fingerprint,
    offline_alternatives,
    resolve,
)

__all__ = [
    "DEFAULT_ENCODER",
    "PACKAGED",
    "ROLES",
    "LoadedModel",
    "ModelRoleError",
    "ResolvedModel",
    "fingerprint",
    "load_causal_lm",
    "load_encoder",
    "load_fresh",
    "load_masked_lm",
    "load_model",
    "load_seq2seq",
    "load_spacy",
    "offline_alternatives",
    "check_device",
    "pick_device",
    "resolve",
]
