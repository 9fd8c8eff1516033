"""One loader for the toolkit's YAML recipes: a file or a mapping in, a nested dataclass out.

Why one: MARS (``mars.config``), SEScore synthesis (``sescore.synthesis.config``) and NLI training
(``nlgmetrics.nli.training``) each read YAML, refused unknown keys, built nested sections and applied overrides in
their own way, with three different errors for the same typo. Here that is done once: a recipe is a dataclass whose
fields with a dataclass default are sections (nested mappings in YAML); every key must be a field; an error names
the file and the dotted key (``cloze.temprature``); overrides use the same dotted keys. What a value must satisfy
(ranges, choices) stays with each recipe's dataclass: this module only knows the shape.

``train.py fit`` keeps LightningCLI (jsonargparse), which is Lightning's own mechanism for ``class_path`` recipes.
jsonargparse is not used here: its dataclass parsing would replace the recipe-specific messages users and tests rely
on with its own, coerce values the recipes have always taken as written, and it costs ~0.1 s to import (yaml
~0.02 s) in commands that only read one small file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar

T = TypeVar("T")


class RecipeError(ValueError):
    """A recipe cannot be read or does not fit its dataclass; the message names the file (or mapping) and the key."""


class RecipeNotFoundError(RecipeError, FileNotFoundError):
    """No recipe file of that name: a ``FileNotFoundError`` too, so callers that catch either keep working."""


def plain(value: Any) -> Any:
    """Mappings to dicts with string keys, tuples and lists to lists, recursively: the YAML/JSON form of a value.

    Section values of a dataclass (``dataclasses.asdict``) and YAML values both become this form before overrides
    are applied, so ``(0.0, 0.2)`` and ``[0.0, 0.2]`` are the same value and a hash over it is canonical.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def read_yaml(source: str | Path) -> tuple[Any, Path]:
    """The parsed content of a recipe file (``{}`` for an empty one) and the path it was read from.

    Args:
        source: a path, or a packaged recipe's name as ``nlgmetrics.resources.config_path`` accepts it
            (``configs/mars/offline.yaml``, ``mars/offline.yaml``); an existing path wins.

    Returns:
        ``(content, path)``; ``content`` is whatever the YAML holds, checked by the caller.

    Raises:
        RecipeNotFoundError: no such file and no packaged recipe of that name (the message lists the packaged ones).
        RecipeError: the file cannot be read as UTF-8 text or is not valid YAML.
    """
    import yaml

    from nlgmetrics.resources import config_path

    try:
        path = config_path(source)
    except FileNotFoundError as error:
        raise RecipeNotFoundError(str(error)) from error
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RecipeError(f"config file {path} cannot be read: {error}") from error
    try:
        return yaml.safe_load(text) or {}, path
    except yaml.YAMLError as error:
        raise RecipeError(f"config file {path} is not valid YAML: {error}") from error


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Command-line ``KEY=VALUE`` strings to an overrides dict for ``apply_overrides``.

    Each VALUE is read as YAML (``0`` is an int, ``[0.2, 0.4]`` a list, ``fast`` a string), so the command line
    spells values as recipe files do.

    Args:
        items: strings such as ``masking.window_words=48``.

    Returns:
        ``{"masking.window_words": 48, ...}`` in the given order.
    """
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"an override takes KEY=VALUE, got {item!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def apply_overrides(values: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``values`` (in ``plain`` form) with ``overrides`` set; later overrides win.

    Args:
        values: a recipe as a nested mapping.
        overrides: dotted (``planning.enabled``) or double-underscore (``planning__enabled``, usable as a Python
            keyword) keys; missing sections are created, so the dataclass reports a misspelt one by name.

    Returns:
        The new nested dict; ``values`` is not modified.
    """
    out = plain(values)
    for raw_key, value in overrides.items():
        parts = raw_key.replace("__", ".").split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"override '{raw_key}': '{part}' is not a section")
        node[parts[-1]] = plain(value)
    return out


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def build_dataclass(
    cls: type[T], values: Any, where: str, section: str = "", optional_sections: Mapping[str, type] | None = None
) -> T:
    """``cls(**values)`` with nested sections built the same way and every key checked first.

    A field whose default is a dataclass instance is a section: its value must be a mapping (built recursively).
    A field whose default is None is a section only if ``optional_sections`` names its dotted key (a section older
    recipes leave out); null then stays None. A list given for a field whose default is a tuple becomes a tuple
    (YAML has no tuples; frozen configs keep them hashable). Other values pass as written: range and choice checks
    belong to each recipe's own validation.

    Args:
        cls: the dataclass to build.
        values: the mapping from YAML, a dict or ``apply_overrides``.
        where: the recipe named in errors, e.g. ``"MARS config /path/offline.yaml"``.
        section: dotted key of ``values`` inside the recipe ("" at the top level).
        optional_sections: dotted key -> dataclass, for sections whose default is None.

    Returns:
        The built ``cls`` instance (its ``__post_init__`` validation, if any, has run).

    Raises:
        RecipeError: ``values`` is not a mapping, or has keys that are not fields (all of them are named).
    """
    if not isinstance(values, Mapping):
        what = f"section '{section}'" if section else "the recipe"
        raise RecipeError(f"{where}: {what} must be a mapping of keys to values, got {type(values).__name__}")
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(str(k) for k in values if k not in known)
    if unknown:
        names = ", ".join(repr(f"{section}.{k}" if section else k) for k in unknown)
        scope = f"in '{section}'" if section else "at the top level"
        raise RecipeError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {names}; known {scope}: {', '.join(sorted(known))}"
        )
    optional_sections = optional_sections or {}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        default = _default(known[key])
        dotted = f"{section}.{key}" if section else key
        nested = type(default) if dataclasses.is_dataclass(default) else optional_sections.get(dotted)
        if nested is not None and not (value is None and default is None):
            value = build_dataclass(nested, value, where, dotted, optional_sections)
        elif isinstance(default, tuple) and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    return cls(**kwargs)


def load_recipe(
    cls: type[T],
    source: str | Path | Mapping[str, Any] | T | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    label: str,
    ignore: Sequence[str] = (),
    optional_sections: Mapping[str, type] | None = None,
) -> T:
    """A recipe from a YAML file, a mapping, an instance of ``cls`` or defaults, with overrides applied.

    Args:
        cls: the recipe's dataclass.
        source: a path or packaged recipe name (``read_yaml``), a nested mapping, a ``cls`` instance (rebuilt from
            its values, so overrides apply to it too) or None for the dataclass defaults.
        overrides: dotted keys to set (``apply_overrides``); empty or None leaves the values as read.
        label: what the recipe is, for errors ("MARS config"); a file's path is added after it.
        ignore: top-level keys allowed in files but not fields (informational, e.g. ``metric``).
        optional_sections: see ``build_dataclass``.

    Returns:
        The built ``cls`` instance.

    Raises:
        RecipeNotFoundError: ``source`` names no file.
        RecipeError: unreadable or invalid YAML, a non-mapping, or an unknown key (named with the file).
    """
    where = label
    if isinstance(source, cls):
        values: Any = plain(dataclasses.asdict(source))  # type: ignore[call-overload]
    elif source is None:
        values = {}
    elif isinstance(source, Mapping):
        values = dict(source)
    else:
        values, path = read_yaml(source)  # type: ignore[arg-type]
        where = f"{label} {path}"
    if not isinstance(values, Mapping):
        raise RecipeError(f"{where} must be a mapping of keys to values, got {type(values).__name__}")
    if overrides:
        values = apply_overrides(values, overrides)
    values = {k: v for k, v in values.items() if k not in ignore}
    return build_dataclass(cls, values, where, optional_sections=optional_sections)


__all__ = [
    "RecipeError",
    "RecipeNotFoundError",
    "apply_overrides",
    "build_dataclass",
    "load_recipe",
    "parse_overrides",
    "plain",
    "read_yaml",
]
