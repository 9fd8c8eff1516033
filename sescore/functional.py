"""SEScore as pure functions of loaded regressors and texts (no state; ``SEScoreScorer`` and ``SEScore`` wrap these).

The toolkit's functional convention (``menli.functional``, ``mars.functional``): the model comes first, then the
texts, and the result is a float64 numpy array with one score per hypothesis, in input order.

Each distinct text (hypotheses and references together) is encoded once, in length-sorted batches; the cheap head
then scores every (hypothesis, reference) pair. Judged MT data repeats each reference for every system, so this
halves the encoder work there. With several references per hypothesis the best score counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from nlgmetrics.inputs import check_pairs
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, forward_precision, running_model
from sescore.regressor.model import scores_from_vectors
from sescore.regressor.scale import bound_to_range

if TYPE_CHECKING:
    from sescore.regressor.model import SEScoreRegressor


def reference_lists(hyps: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    """One reference per hypothesis, or a non-empty list of references per hypothesis (the shared input policy).

    Args:
        hyps: the hypotheses.
        refs: one reference string per hypothesis, or a list of them per hypothesis.

    Returns:
        A list of references per hypothesis; a mismatch or an empty text raises ``InputError``.
    """
    return check_pairs(hyps, refs, hyp_name="hypotheses", ref_name="references")[1]


def sescore_scores(
    regressor: SEScoreRegressor,
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    batch_size: int = 64,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> np.ndarray:
    """One checkpoint's score per hypothesis; with several references the best one counts.

    Args:
        regressor: a loaded model (``sescore.regressor.load_checkpoint``).
        hyps: the hypotheses.
        refs: one reference per hypothesis, or a list of references per hypothesis.
        batch_size: texts per encoder batch (speed only: a score does not depend on its batch).
        progress: show a progress bar over the encoder batches.
        precision: the encoder's forward pass (``nlgmetrics.modelroles.precision``); the head and the alignment run
            in float32 either way.

    Returns:
        [N] float64 scores on the checkpoint's output scale (inside its declared range), in input order.
    """
    ref_lists = reference_lists(hyps, refs)
    if not len(hyps):
        return np.zeros(0, dtype=np.float64)
    unique = list(dict.fromkeys(list(hyps) + [r for rs in ref_lists for r in rs]))
    row = {text: i for i, text in enumerate(unique)}
    owner = np.asarray([i for i, rs in enumerate(ref_lists) for _ in rs], dtype=np.int64)
    cand_rows = np.asarray([row[hyps[i]] for i in owner], dtype=np.int64)
    ref_rows = np.asarray([row[r] for rs in ref_lists for r in rs], dtype=np.int64)
    with forward_precision(regressor.device, precision):  # int8: the regressor's copy with an int8 encoder
        vectors, tokens = running_model(regressor).encode_texts(unique, batch_size, progress=progress)
        # lexical and NLI pair features (None when the checkpoint reads none); the NLI model runs in ``precision``
        extra = regressor.pair_inputs([unique[i] for i in cand_rows], [unique[i] for i in ref_rows])
    pair_scores = scores_from_vectors(regressor, vectors, cand_rows, ref_rows, tokens=tokens or None, extra=extra)
    pair_scores = bound_to_range(pair_scores, regressor.config.output_scale)  # monotone: rankings unchanged
    out = np.full(len(hyps), -np.inf)
    np.maximum.at(out, owner, pair_scores)
    return out


def ensemble_scores(
    regressors: Sequence[SEScoreRegressor],
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    batch_size: int = 64,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> np.ndarray:
    """The mean of several checkpoints' scores (each as ``sescore_scores`` gives it: max over references).

    Why: runs of one recipe that differ only in their training seed end ~0.02 apart on the dev mix, more than
    most recipe changes; averaging their scores is the plain way to spend compute on that variance. Averaging is
    only meaningful on one scale, so checkpoints with different output scales are refused.

    Args:
        regressors: loaded models, all on one output scale (one model: its scores, bit for bit).
        hyps: the hypotheses, as for ``sescore_scores``.
        refs: one reference per hypothesis, or a list of references per hypothesis.
        batch_size: texts per encoder batch (speed only).
        progress: show a progress bar over the encoder batches.
        precision: the encoders' forward pass, as for ``sescore_scores``.

    Returns:
        [N] float64 mean scores, in input order.
    """
    if not regressors:
        raise ValueError("an ensemble needs at least one checkpoint")
    scales = sorted({r.config.output_scale for r in regressors})
    if len(scales) > 1:
        raise ValueError(f"cannot average checkpoints with different output scales {scales}; export them on one scale")
    total = np.zeros(len(hyps), dtype=np.float64)
    for regressor in regressors:
        total += sescore_scores(regressor, hyps, refs, batch_size, progress, precision)
    return total / len(regressors)


__all__ = ["ensemble_scores", "reference_lists", "sescore_scores"]
