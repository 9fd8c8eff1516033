"""Scoring with a trained SEScore checkpoint: a pure function over a loaded regressor and the Scorer shape.

Each distinct text (hypotheses and references together) is encoded once, in length-sorted batches; the cheap
head then scores every (hypothesis, reference) pair. Judged MT data repeats each reference for every system,
so this halves the encoder work there. With several references per hypothesis the best score counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nlgmetrics.inputs import check_pairs
from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision, forward_precision, precision_tag
from sescore.regressor.checkpoint import checkpoint_hash, ensemble_members, load_checkpoint
from sescore.regressor.model import SEScoreRegressor, scores_from_vectors
from sescore.regressor.scale import bound_to_range

# The shipped default: the v2 recipe on the MPNet encoder (packaged:mpnet), weights half-way from the run's own
# initialisation, stored as float16; it passed a rule written before it was scored on the dev mix's select half, then
# its report half (README, "SEScore").
DEFAULT_CHECKPOINT = str(Path(__file__).resolve().parents[1] / "checkpoints" / "mpnet-v2")
# The default before mpnet-v2: an ensemble folder of three v2 runs on MiniLM (training seeds 13-15), each half-way
# from its own initialisation. About half of mpnet-v2's CPU time; MENLI's packaged three-way mix was fitted
# with it.
MINILM_V2_CHECKPOINT = str(Path(__file__).resolve().parents[1] / "checkpoints" / "minilm-v2")
# The first shipped model (`train.py fit --config configs/sescore/fit_offline.yaml`), the default until minilm-v2.
V1_CHECKPOINT = str(Path(__file__).resolve().parents[1] / "checkpoints" / "minilm-news")

_VERSION = toolkit_version()


def reference_lists(hyps: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    """One reference per hypothesis, or a non-empty list of references per hypothesis (the shared input policy)."""
    return check_pairs(hyps, refs, hyp_name="hypotheses", ref_name="references")[1]


def sescore_scores(
    regressor: SEScoreRegressor,
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    batch_size: int = 64,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> np.ndarray:
    """[N] scores on the checkpoint's output scale (inside its declared range), in input order; multi-reference
    -> max. ``precision``: the encoder's forward pass (``nlgmetrics.modelroles.precision``); the head and the
    alignment run in float32 either way."""
    ref_lists = reference_lists(hyps, refs)
    if not len(hyps):
        return np.zeros(0, dtype=np.float64)
    unique = list(dict.fromkeys(list(hyps) + [r for rs in ref_lists for r in rs]))
    row = {text: i for i, text in enumerate(unique)}
    with forward_precision(regressor.device, precision):
        vectors, tokens = regressor.encode_texts(unique, batch_size, progress=progress)
    owner = np.asarray([i for i, rs in enumerate(ref_lists) for _ in rs], dtype=np.int64)
    cand_rows = np.asarray([row[hyps[i]] for i in owner], dtype=np.int64)
    ref_rows = np.asarray([row[r] for rs in ref_lists for r in rs], dtype=np.int64)
    pair_scores = scores_from_vectors(regressor, vectors, cand_rows, ref_rows, tokens=tokens or None)
    pair_scores = bound_to_range(pair_scores, regressor.config.output_scale)  # monotone: rankings unchanged
    out = np.full(len(hyps), -np.inf)
    np.maximum.at(out, owner, pair_scores)
    return out


def checkpoint_folders(checkpoint: str | Path | Sequence[str | Path]) -> list[str]:
    """One folder (a str or Path) or several -> the list of model folders; an ensemble folder (``ensemble.yaml``)
    stands for its members. An empty list names the problem."""
    folders = [checkpoint] if isinstance(checkpoint, (str, Path)) else list(checkpoint)
    if not folders:
        raise ValueError("SEScore needs a checkpoint folder")
    out = []
    for folder in folders:
        members = ensemble_members(folder)
        if members is None:
            out.append(str(folder))
        else:
            out.extend(str(f) for f in members)
    return out


def ensemble_scores(
    regressors: Sequence[SEScoreRegressor],
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    batch_size: int = 64,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> np.ndarray:
    """[N] mean of several checkpoints' scores (each as ``sescore_scores`` gives it: max over references).

    Why: runs of one recipe that differ only in their training seed end ~0.02 apart on the dev mix, more than
    most recipe changes; averaging their scores is the plain way to spend compute on that variance. Averaging is
    only meaningful on one scale, so checkpoints with different output scales are refused.
    """
    if not regressors:
        raise ValueError("an ensemble needs at least one checkpoint")
    scales = sorted({r.config.output_scale for r in regressors})
    if len(scales) > 1:
        raise ValueError(f"cannot average checkpoints with different output scales {scales}; export them on one "
                         "scale")
    total = np.zeros(len(hyps), dtype=np.float64)
    for regressor in regressors:
        total += sescore_scores(regressor, hyps, refs, batch_size, progress, precision)
    return total / len(regressors)


@dataclass
class SEScoreScorer:
    """SEScore in the common Scorer shape (``evaluate.py``, the protocols, stress tests).

    ``checkpoint`` is one exported folder, or several: then the score is the mean of theirs (``ensemble_scores``).
    ``precision``: the encoders' forward pass, float32 or bfloat16 (``nlgmetrics.modelroles.precision``).
    """

    checkpoint: str | Sequence[str] = DEFAULT_CHECKPOINT
    batch_size: int = 64
    device: str | None = None
    name: str = "sescore"
    progress: bool = False
    _regressors: Any = field(default=None, repr=False)
    precision: str = DEFAULT_PRECISION

    def __post_init__(self) -> None:
        check_precision(self.precision)

    @property
    def checkpoints(self) -> list[str]:
        return checkpoint_folders(self.checkpoint)

    @property
    def regressors(self) -> list[SEScoreRegressor]:
        if self._regressors is None:
            from nlgmetrics.modelroles import pick_device

            device = pick_device(self.device)
            self._regressors = [load_checkpoint(folder, device) for folder in self.checkpoints]
        return self._regressors

    @property
    def regressor(self) -> SEScoreRegressor:
        """The first (for one checkpoint: the only) loaded model."""
        return self.regressors[0]

    def score(self, hyps: Sequence[str], refs: Sequence, srcs: Sequence[str] | None = None) -> list[float]:
        if refs is None:
            raise ValueError("SEScore needs references")
        # one checkpoint: the mean of one score is that score, bit for bit
        return [float(s) for s in ensemble_scores(self.regressors, hyps, refs, self.batch_size, self.progress,
                                                  self.precision)]

    def signature(self) -> str:
        parts = []
        for folder, r in zip(self.checkpoints, self.regressors):
            parts.append(f"ckpt:{Path(folder).name}@{checkpoint_hash(folder)}"
                         f"|encoder:{r.config.encoder}@{r.encoder_hash}|scale:{r.config.output_scale}")
        combined = "|".join(parts) if len(parts) == 1 else f"ensemble:mean[{';'.join(parts)}]"
        return f"{self.name}|{combined}|refs:max{precision_tag(self.precision)}|version:{_VERSION}"
