"""MENLI's 15 pooling strategies: 5 formulas over (e, n, c) x 3 directions.

Directions: ``->`` premise = reference, hypothesis = candidate; ``<-`` the reverse; ``<->`` averages the two
probability vectors FIRST and then applies the formula (not the average of two formula values: for the
non-linear-looking ``e-n-2c`` both orders agree, but the authors define it this way, so we keep to it).
"""

from __future__ import annotations

import numpy as np

FORMULAS: dict[str, tuple[float, float, float]] = {
    # weights on (e, n, c): every formula is linear in the probabilities
    "e": (1.0, 0.0, 0.0),
    "-c": (0.0, 0.0, -1.0),
    "e-n": (1.0, -1.0, 0.0),
    "e-c": (1.0, 0.0, -1.0),
    "e-n-2c": (1.0, -1.0, -2.0),
}
DIRECTIONS: tuple[str, ...] = ("->", "<-", "<->")
DIRECTION_ALIASES = {
    "->": "->",
    "ref->cand": "->",
    "forward": "->",
    "<-": "<-",
    "ref<-cand": "<-",
    "backward": "<-",
    "<->": "<->",
    "ref<->cand": "<->",
    "both": "<->",
    "avg": "<->",
}


# The MENLI paper's pooling choice per task (its section 5): MT takes e over both directions, reference-based or
# not; reference-based summarisation e-c with the candidate as premise (does the summary entail the reference's
# content); reference-free summarisation -c with the source document as premise (a summary need not entail its
# document, only not contradict it). Keyed by (task, reference_free).
PAPER_CHOICES: dict[tuple[str, bool], tuple[str, str]] = {
    ("mt", False): ("e", "<->"),
    ("mt", True): ("e", "<->"),
    ("summarization", False): ("e-c", "<-"),
    ("summarization", True): ("-c", "->"),
}
TASKS: tuple[str, ...] = tuple(dict.fromkeys(task for task, _ in PAPER_CHOICES))


def task_strategy(
    task: str, reference_free: bool = False, formula: str | None = None, direction: str | None = None
) -> tuple[str, str]:
    """(formula, direction) for a task: the paper's choice, with an explicit ``formula``/``direction`` winning.

    Summaries and translations want different pooling: on the THumB CNN/DM blind-spot suite (nli-mpnet, sentence
    pooling) e <-> passed 14/23 tests and the summarisation choice e-c <- 19/23 (docs/results/stress.md)."""
    if task not in TASKS:
        raise ValueError(f"unknown MENLI task '{task}'; choose from {', '.join(TASKS)}")
    paper_formula, paper_direction = PAPER_CHOICES[(task, bool(reference_free))]
    return check_strategy(formula or paper_formula, direction or paper_direction)


def check_strategy(formula: str, direction: str) -> tuple[str, str]:
    """Validate and normalise a (formula, direction) pair; the error lists the valid choices."""
    if formula not in FORMULAS:
        raise ValueError(f"unknown MENLI formula '{formula}'; choose from {', '.join(FORMULAS)}")
    if direction not in DIRECTION_ALIASES:
        raise ValueError(f"unknown MENLI direction '{direction}'; choose from {', '.join(DIRECTIONS)}")
    return formula, DIRECTION_ALIASES[direction]


def needs(direction: str) -> tuple[bool, bool]:
    """Which NLI passes a direction needs: (ref as premise, candidate as premise)."""
    direction = DIRECTION_ALIASES[direction]
    return direction in ("->", "<->"), direction in ("<-", "<->")


def pool(formula: str, direction: str, forward: np.ndarray | None, backward: np.ndarray | None) -> np.ndarray:
    """Score from [N, 3] (e, n, c) probabilities: ``forward`` with the reference as premise, ``backward`` reverse."""
    formula, direction = check_strategy(formula, direction)
    if direction == "->":
        probs = forward
    elif direction == "<-":
        probs = backward
    else:
        if forward is None or backward is None:
            raise ValueError("direction <-> needs both NLI passes")
        probs = (forward + backward) / 2.0
    if probs is None:
        raise ValueError(f"direction {direction} needs the {'forward' if direction == '->' else 'backward'} pass")
    return np.asarray(probs, dtype=np.float64) @ np.asarray(FORMULAS[formula])


ALL_STRATEGIES: tuple[tuple[str, str], ...] = tuple((f, d) for f in FORMULAS for d in DIRECTIONS)
