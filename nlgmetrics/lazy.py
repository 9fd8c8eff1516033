"""Names a package exports but imports only on first access (a PEP 562 module ``__getattr__``).

Why: the torchmetrics and Lightning classes of the metric packages (``sescore.SEScore``, ``menli.MENLI``,
``mars.MARS``, the regressor's training classes) pull in torchmetrics, which imports its audio, image and text
modules, scipy.signal and transformers (~4 s here), and Lightning. Scoring never uses them, yet every
``evaluate.py`` run and every ``--devices`` worker paid that on ``import menli``. One helper instead of a
hand-written ``__getattr__`` per package.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each lazy name to the module that defines it."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module '{package}' has no attribute '{name}'")

    return __getattr__
