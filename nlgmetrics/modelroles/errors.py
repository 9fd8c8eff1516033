"""The one error type of model roles, in a module of its own.

Why its own module: ``resolve`` (which decides where a model lives) and the converters it calls (``split_zip``,
...) both raise it; defining it in ``resolve`` made ``split_zip`` import ``resolve`` while ``resolve`` imports
``split_zip``, an import cycle. Both now import it from here; ``resolve`` and ``nlgmetrics.modelroles`` re-export it.
"""

from __future__ import annotations


class ModelRoleError(RuntimeError):
    """A role's model cannot be found or loaded; the message says which role, which value and what to do."""
