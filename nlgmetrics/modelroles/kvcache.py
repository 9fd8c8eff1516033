"""Passing a KV cache to a transformers model and reading it back, under the keyword the installed version uses.

transformers 5.x renamed the forward keyword and output field ``past_key_values`` to ``cache`` (the old name
warns and goes away in 5.40); the toolkit supports every 5.x, so the name is read from the model's ``forward``
signature once per class instead of being hard-coded either way.
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=None)
def _keyword(forward_owner: type) -> str:
    parameters = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def cache_keyword(model: Any) -> str:
    """``"cache"`` when ``model.forward`` takes it (newer transformers), else ``"past_key_values"``."""
    return _keyword(type(model))


def with_cache(model: Any, cache: Any) -> dict[str, Any]:
    """Forward keyword arguments that hand ``cache`` (None = start one) to ``model``."""
    return {cache_keyword(model): cache, "use_cache": True}


def returned_cache(output: Any) -> Any:
    """The cache a forward pass returned, whichever field name the installed transformers uses."""
    fields = getattr(output, "__dataclass_fields__", {})
    return output.cache if "cache" in fields else output.past_key_values
