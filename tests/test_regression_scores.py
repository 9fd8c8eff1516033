"""Every metric's scores on fixed inputs, recomputed through ``load_metric`` and held against the scores the toolkit
gave before the metric registry replaced the command line's own factory (``tests/data/regression_scores.json``):
the shipped defaults and the tiny test models, single metrics and MENLI mixes.

On the CPU model the file was recorded on the scores must be bit-identical; elsewhere matrix kernels may round
differently (oneDNN picks AVX-512 or AMX paths by CPU), so other machines are held to 1e-5.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.harness import cpu_model
from nlgmetrics import load_metric
from nlgmetrics.registry import accepted_options

REPO = Path(__file__).resolve().parents[1]
RECORD = json.loads((REPO / "tests" / "data" / "regression_scores.json").read_text(encoding="utf-8"))
EXAMPLES = REPO / "examples"


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


def _check(case: str, tiny: dict[str, Path] | None) -> None:
    recorded = RECORD["cases"][case]
    hyps, refs, srcs = _texts()
    options = _options(recorded["options"], tiny)
    if "progress" in accepted_options(recorded["metric"]):
        options["progress"] = False
    scorer = load_metric(recorded["metric"], **options)
    scores = scorer.score(hyps, refs, srcs)
    if cpu_model() == RECORD["recorded_on"]["cpu"]:
        assert scores == recorded["scores"], case
    else:
        assert scores == pytest.approx(recorded["scores"], abs=1e-5), case


TINY = [case for case, spec in RECORD["cases"].items() if case.startswith("tiny ")]
SHIPPED = [case for case in RECORD["cases"] if case not in TINY]


@pytest.mark.parametrize("case", TINY)
def test_tiny_models_score_as_before(case, tiny):
    _check(case, tiny)


@pytest.mark.slow
@pytest.mark.parametrize("case", SHIPPED)
def test_shipped_defaults_score_as_before(case):
    _check(case, None)
