"""Every metric's scores on fixed inputs, recomputed through ``load_metric`` and held against a recording
(``tests/data/regression_scores.json``): the shipped defaults and the tiny test models, single metrics and MENLI
mixes.

Two rules, so the test holds on every CPU and still catches a real change:

- **Same kernels, same bits.** Where this machine's kernel key (:func:`nlgmetrics.machine.kernel_key`: torch version,
  torch's dispatch capability, CPU vendor, the vector extensions MKL and oneDNN dispatch on) equals the one the
  record was made with, every score must be bit-identical.
- **Other kernels, 1e-5.** Elsewhere float32 products round differently (AVX2 against AVX-512 against AMX), so each
  score must agree within ``TOLERANCE`` (1e-5) times ``max(1, |recorded|)``: log-likelihoods of -5 carry five
  times the absolute rounding of a probability. Between an AVX2-era recording and AVX-512 AMD the largest
  difference seen was 9.4e-6 on an lm-likelihood of about -4 (2e-6 relative), most were below 1e-6.

To re-record after an intended change of scores: ``NLGMETRICS_RERECORD=1 pytest tests/test_regression_scores.py``
(writes this machine's scores and kernel key into the record; review the diff).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from nlgmetrics import load_metric
from nlgmetrics.machine import cpu_model, kernel_key
from nlgmetrics.registry import accepted_options

REPO = Path(__file__).resolve().parents[1]
RECORD_PATH = REPO / "tests" / "data" / "regression_scores.json"
RECORD = json.loads(RECORD_PATH.read_text(encoding="utf-8"))
EXAMPLES = REPO / "examples"
TOLERANCE = 1e-5


def _texts() -> tuple[list[str], list[str], list[str]]:
    return tuple(
        (EXAMPLES / f"{name}.txt").read_text(encoding="utf-8").splitlines()  # type: ignore[return-value]
        for name in ("hyps", "refs", "srcs")
    )


def _options(options: dict, tiny: dict[str, Path] | None) -> dict:
    out = {}
    for key, value in options.items():
        if isinstance(value, str) and value.startswith("tiny:"):
            value = str(tiny[value[5:]])
        out[key] = value
    return out


def mismatch(scores: list[float], recorded: list[float], same_kernels: bool) -> str | None:
    """Why ``scores`` do not match ``recorded`` under the rule for this machine, or None when they do."""
    if len(scores) != len(recorded):
        return f"{len(scores)} scores, {len(recorded)} recorded"
    for i, (got, want) in enumerate(zip(scores, recorded)):
        if same_kernels and got != want:
            return f"segment {i}: {got!r} != recorded {want!r} (same kernels: bit-identical required)"
        if not same_kernels and abs(got - want) > TOLERANCE * max(1.0, abs(want)):
            return f"segment {i}: {got!r} differs from recorded {want!r} by more than {TOLERANCE} x max(1, |recorded|)"
    return None


def _check(case: str, tiny: dict[str, Path] | None) -> None:
    recorded = RECORD["cases"][case]
    hyps, refs, srcs = _texts()
    options = _options(recorded["options"], tiny)
    if "progress" in accepted_options(recorded["metric"]):
        options["progress"] = False
    scorer = load_metric(recorded["metric"], **options)
    scores = scorer.score(hyps, refs, srcs)
    if os.environ.get("NLGMETRICS_RERECORD"):
        record = json.loads(RECORD_PATH.read_text(encoding="utf-8"))
        record["recorded_on"] = {"cpu": cpu_model(), "kernels": kernel_key()}
        record["cases"][case]["scores"] = scores
        RECORD_PATH.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    problem = mismatch(scores, recorded["scores"], kernel_key() == RECORD["recorded_on"].get("kernels"))
    assert problem is None, f"{case}: {problem}"


TINY = [case for case, spec in RECORD["cases"].items() if case.startswith("tiny ")]
SHIPPED = [case for case in RECORD["cases"] if case not in TINY]


@pytest.mark.parametrize("case", TINY)
def test_tiny_models_score_as_before(case, tiny):
    _check(case, tiny)


@pytest.mark.slow
@pytest.mark.parametrize("case", SHIPPED)
def test_shipped_defaults_score_as_before(case):
    _check(case, None)


def test_record_names_its_kernels():
    assert set(RECORD["recorded_on"]["kernels"]) == set(kernel_key())


def test_a_planted_change_fails_under_both_rules():
    recorded = RECORD["cases"][TINY[0]]["scores"]
    assert mismatch(list(recorded), recorded, same_kernels=True) is None
    one_ulp = [math.nextafter(recorded[0], 2.0), *recorded[1:]]
    assert "bit-identical" in mismatch(one_ulp, recorded, same_kernels=True)
    assert mismatch(one_ulp, recorded, same_kernels=False) is None
    planted = [recorded[0] + 2 * TOLERANCE * max(1.0, abs(recorded[0])), *recorded[1:]]
    assert "more than" in mismatch(planted, recorded, same_kernels=False)
    assert "recorded" in mismatch(recorded[:-1], recorded, same_kernels=False)
