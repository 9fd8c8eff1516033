"""Helpers shared by the packaged-model tests (test_packaged_*.py)."""

from __future__ import annotations

import importlib.util

import numpy as np


def installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (the real-model tests run only then)."""
    return importlib.util.find_spec(module) is not None


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def hide_packages(monkeypatch, prefix: str) -> None:
    """Make every package whose import name starts with ``prefix`` look uninstalled to ``find_spec``."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith(prefix) else real_find_spec(name, *a)
    )
