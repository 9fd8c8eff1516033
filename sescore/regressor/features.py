"""Pair features a regressor's head can take beside the encoder: text-level similarities (chrF) and an NLI
model's probabilities of the pair, with the memo that computes each distinct pair once per process (and, under
``$NLGMETRICS_NLI_PAIRS``, once across processes).

The NLI model is frozen and not stored in the checkpoint: the checkpoint names it (and the hash of its weights,
checked on load), so a repeated dev check or a second checkpoint scored on the same rows costs nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np


def _chrf(candidates: Sequence[str], references: Sequence[str]) -> list[float]:
    """sacrebleu's sentence chrF (character 6-grams, beta 2) of each pair, divided by 100."""
    import sacrebleu

    chrf = sacrebleu.CHRF()
    return [chrf.sentence_score(c, [r]).score / 100.0 for c, r in zip(candidates, references)]


# text-level features a regressor can add to its head (RegressorConfig.lexical): name -> (candidates, references)
# -> one value on [0, 1] per pair
LEXICAL_FEATURES: dict[str, Callable[[Sequence[str], Sequence[str]], list[float]]] = {"chrf": _chrf}

# the inputs RegressorConfig.nli adds, in order (P of the label, premise -> hypothesis)
NLI_FEATURES = (
    "entailment(reference -> candidate)",
    "contradiction(reference -> candidate)",
    "entailment(candidate -> reference)",
    "contradiction(candidate -> reference)",
)


def lexical_features(names: Sequence[str], candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """[N, len(names)] float32 text-level similarities of candidate i and reference i, each on [0, 1].

    Args:
        names: keys of ``LEXICAL_FEATURES``; ``chrf`` is sacrebleu's sentence chrF (character 6-grams, beta 2)
            divided by 100.
        candidates: the candidate texts.
        references: one reference per candidate.

    Returns:
        The features, one row per pair, in the order of ``names``.
    """
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    unknown = [name for name in names if name not in LEXICAL_FEATURES]
    if unknown:
        raise ValueError(f"unknown lexical features {unknown}; known: {', '.join(LEXICAL_FEATURES)}")
    out = np.zeros((len(candidates), len(names)), dtype=np.float32)
    for column, name in enumerate(names):
        out[:, column] = LEXICAL_FEATURES[name](candidates, references)
    return out


def nli_features(nli: Any, candidates: Sequence[str], references: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """[N, 4] float32 NLI probabilities of each pair, in the order of ``NLI_FEATURES``.

    Args:
        nli: anything with ``NLIModel.predict_proba`` (a loaded NLI model, or a ``PairCache`` in front of one).
        candidates: the candidate texts.
        references: one reference per candidate.
        batch_size: NLI pairs per batch (speed only: a pair's probabilities do not depend on its batch).

    Returns:
        P(entailment), P(contradiction) with the reference as premise, then with the candidate as premise.
    """
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    out = np.zeros((len(candidates), len(NLI_FEATURES)), dtype=np.float32)
    if not len(candidates):
        return out
    forward = nli.predict_proba(list(references), list(candidates), batch_size=batch_size, desc="NLI r->c")
    backward = nli.predict_proba(list(candidates), list(references), batch_size=batch_size, desc="NLI c->r")
    out[:, 0], out[:, 1] = forward[:, 0], forward[:, 2]
    out[:, 2], out[:, 3] = backward[:, 0], backward[:, 2]
    return out


# a folder that keeps NLI pair probabilities across processes (one JSON Lines file per NLI model, named by its
# weights' hash): the fits of several seeds train on the same pairs, and every checkpoint scored on the dev mix asks
# for the same dev pairs, so without it each process pays the NLI model again (~350 s per MiniLM fit, ~450 s per
# dev-mix scoring on 2 CPU cores). One process at a time may write a folder.
NLI_PAIRS_ENV = "NLGMETRICS_NLI_PAIRS"


def nli_pair_file(nli_hash: str) -> Path | None:
    """The pair file of an NLI model under ``$NLGMETRICS_NLI_PAIRS``, or None when the variable is unset.

    Args:
        nli_hash: the hash of the NLI model's weights (``NLIModel.hash``); a file holds one model's pairs.

    Returns:
        ``nlgmetrics.nli.cache.pair_file`` of the folder (created on first use by ``PairCache``), or None.
    """
    from nlgmetrics.nli.cache import pair_file

    folder = os.environ.get(NLI_PAIRS_ENV, "").strip()
    return pair_file(folder, nli_hash) if folder else None


def memoised_nli(name: str, device: str) -> Any:
    """The NLI model ``name`` on ``device`` behind the process's memo of pair probabilities (loaded on first call),
    kept in a file when ``$NLGMETRICS_NLI_PAIRS`` names a folder (``nli_pair_file``).

    Args:
        name: an NLI role value (``packaged:nli-minilm``, a folder...).
        device: a torch device type.

    Returns:
        A ``nlgmetrics.nli.cache.PairCache`` in front of the loaded model, shared by every caller in the process.
    """
    from nlgmetrics.modelroles.memo import memoised

    def build() -> Any:
        from nlgmetrics.nli.cache import PairCache
        from nlgmetrics.nli.model import load_nli

        nli = load_nli(name, device=device)
        return PairCache(nli, path=nli_pair_file(nli.hash))

    # one memo per (NLI model, device), shared by every regressor of the process: a training run's dev checks and
    # the checkpoints an ablation scores on the same rows ask for the same pairs
    return memoised(("nli-pairs", name, device), build)


__all__ = [
    "LEXICAL_FEATURES",
    "NLI_FEATURES",
    "NLI_PAIRS_ENV",
    "lexical_features",
    "memoised_nli",
    "nli_features",
    "nli_pair_file",
]
