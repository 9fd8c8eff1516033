"""What every metric looks like to the protocols: texts in, one float per segment out, plus a signature.

The protocols (correlation, adversarial preference, stress tests) and ``evaluate.py`` only need this shape, so
any toolkit metric, a combination of metrics, or a user's plain function can be measured the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence, runtime_checkable


def toolkit_version() -> str:
    """The installed toolkit version for score signatures ("dev" when run from a source tree not installed)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("nlgmetrics")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


ScoreFn = Callable[[Sequence[str], Sequence[str], "Sequence[str] | None"], Sequence[float]]


@runtime_checkable
class Scorer(Protocol):
    """``score(hyps, refs, srcs)`` -> one float per hypothesis; higher is better."""

    name: str

    def score(self, hyps: Sequence[str], refs: Sequence[str], srcs: Sequence[str] | None = None) -> list[float]: ...

    def signature(self) -> str: ...


@dataclass
class FunctionScorer:
    """Wrap a plain callable ``fn(hyps, refs, srcs) -> scores`` (user code) as a Scorer."""

    fn: ScoreFn
    name: str = "callable"

    def score(self, hyps: Sequence[str], refs: Sequence[str], srcs: Sequence[str] | None = None) -> list[float]:
        scores = [float(s) for s in self.fn(list(hyps), list(refs), None if srcs is None else list(srcs))]
        if len(scores) != len(hyps):
            raise ValueError(f"{self.name} returned {len(scores)} scores for {len(hyps)} hypotheses")
        return scores

    def signature(self) -> str:
        return f"{self.name}|callable"


def as_scorer(metric: "Scorer | ScoreFn", name: str | None = None) -> Scorer:
    """Accept a Scorer or a plain callable."""
    if isinstance(metric, Scorer):
        return metric
    if callable(metric):
        return FunctionScorer(metric, name or getattr(metric, "__name__", "callable"))
    raise TypeError(f"expected a Scorer or a callable, got {type(metric).__name__}")
