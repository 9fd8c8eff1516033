"""The dev mix: the judged sets every recipe and checkpoint decision is made on, read from a YAML.

Shared by ``evaluate.py devmix`` (reported numbers) and training-time checkpoint selection (a metric package's
dev loader), so both read exactly the same rows of exactly the same half.
"""

from __future__ import annotations

import warnings
from pathlib import Path

MIX_KEYS = {"name", "path", "human", "exclude_systems", "limit_items"}


def load_mix(path: str | Path) -> dict:
    """The mix YAML, checked: every set has a name, a path and a human score key; names are unique."""
    import yaml

    from nlgmetrics.metaeval import InputError
    from nlgmetrics.resources import config_path

    try:
        config = yaml.safe_load(config_path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise InputError(str(error)) from error
    if not isinstance(config, dict) or not isinstance(config.get("sets"), list) or not config["sets"]:
        raise InputError(f"mix {path}: expected a mapping with a non-empty 'sets' list")
    names = set()
    for index, entry in enumerate(config["sets"]):
        if not isinstance(entry, dict) or not {"name", "path", "human"} <= set(entry):
            raise InputError(f"mix {path}: set {index} needs 'name', 'path' and 'human'")
        unknown = set(entry) - MIX_KEYS
        if unknown:
            raise InputError(f"mix {path}: set {entry['name']} has unknown keys: {', '.join(sorted(unknown))}")
        if entry["name"] in names:
            raise InputError(f"mix {path}: set name {entry['name']} appears twice")
        names.add(entry["name"])
    config.setdefault("split_seed", 0)
    return config


def set_path(entry: dict, root: Path) -> Path:
    """A set's judged file: its ``path``, relative to the data folder unless absolute."""
    path = Path(entry["path"])
    return path if path.is_absolute() else root / path


def set_rows(entry: dict, root: Path, half: str, split_seed: int, limit_items: int | None) -> list[dict]:
    """The rows of one set's half: judged by ``entry['human']``, excluded systems dropped, at most
    ``limit_items`` items (in file order within the half)."""
    from nlgmetrics.metaeval import InputError, first_items, read_jsonl, rows_in_half, usable_rows

    path = set_path(entry, root)
    rows = read_jsonl(path)
    excluded = set(entry.get("exclude_systems") or [])
    rows = [
        r for r in rows if (r.get("scores") or {}).get(entry["human"]) is not None and r.get("system") not in excluded
    ]
    if not rows:
        raise InputError(f"{path}: no row has human score '{entry['human']}'")
    rows, skipped = usable_rows(rows)
    if skipped:  # the correlate policy: empty outputs are left out and said, never scored
        warnings.warn(
            f"{entry['name']}: {len(skipped)} rows with an empty hypothesis or no non-empty reference "
            f"left out (first: {skipped[0]})",
            stacklevel=2,
        )
    rows = rows_in_half(rows, half, split_seed)
    limit = entry.get("limit_items") if limit_items is None else limit_items
    return first_items(rows, limit)


def mix_files(mix: str | Path, root: str | Path | None = None) -> dict[Path, str]:
    """{resolved judged file: set name} of a mix, to keep training data off the files selection is made on."""
    from nlgmetrics.resources import data_root

    config = load_mix(mix)
    try:
        folder = data_root(root)
    except FileNotFoundError:  # no judged data here: nothing to overlap with
        return {}
    return {set_path(entry, folder).resolve(): entry["name"] for entry in config["sets"]}


def mix_sets(
    mix: str | Path,
    half: str,
    root: str | Path | None = None,
    limit_items: int | None = None,
) -> list[tuple[dict, list[dict]]]:
    """Every set of the mix with the rows of its ``half`` (see ``set_rows``); the data folder as ``data_root``."""
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.resources import data_root

    config = load_mix(mix)
    try:
        folder = data_root(root)
    except FileNotFoundError as error:
        raise InputError(str(error)) from error
    return [(entry, set_rows(entry, folder, half, int(config["split_seed"]), limit_items)) for entry in config["sets"]]
