"""Resumable storage: rows go to one Arrow file per block of sentences, merged into a `datasets` dataset.

Every file is written to a temporary name and renamed into place, so a run killed at any moment leaves
complete files or none. Within a block, the rows of each finished model-call group (``sentences_per_call``
sentences) are kept in a group file, so a kill loses at most one group of work even when the whole input is one
block; when its block is written, the block's group files are deleted. A restart with the same command skips
complete blocks and kept groups. Groups depend only on their sentences, the config and the models (all pinned by
``manifest.json``), so the merged dataset is byte-identical whether it was produced in one go, resumed, or split
over shards.

Layout of an output folder::

    OUT/                      the dataset (datasets.save_to_disk), summary.json, score_histogram.png
    OUT/work/manifest.json    what every block was made from (config hash, seed, input hash, model hashes)
    OUT/work/blocks/block-000003.arrow
    OUT/work/groups/group-000017.arrow   rows of a finished group whose block is not written yet
    OUT/work/sessions/...json timing of each process that wrote blocks (for the rate report)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

WORK = "work"
MANIFEST = "manifest.json"
# manifest keys that must agree before blocks from two runs may be combined
PINNED = (
    "format",
    "config_hash",
    "seed",
    "input_sha256",
    "limit",
    "block_size",
    "num_sentences",
    "num_blocks",
    "models",
    "sentence_indices_sha256",
)
FORMAT = "nlgmetrics-sescore-synthesis/1"


class StoreError(RuntimeError):
    """Blocks or manifests that cannot be combined; the message says which and why."""


def features() -> Any:
    """The dataset schema (one row per reference x variant; ``history`` has one entry per planned step)."""
    from datasets import Features, List, Value

    step = {
        "step": Value("int32"),
        "kind": Value("string"),
        "operation": Value("string"),
        "filler": Value("string"),
        "start": Value("int32"),
        "length": Value("int32"),
        "new_length": Value("int32"),
        "status": Value("string"),
        "severity": Value("int32"),
        "p_entail_forward": Value("float64"),
        "p_entail_backward": Value("float64"),
        "text": Value("string"),
    }
    return Features(
        {
            "sentence_index": Value("int64"),
            "variant_index": Value("int32"),
            "reference": Value("string"),
            "candidate": Value("string"),
            "score": Value("int32"),
            "num_planned": Value("int32"),
            "num_applied": Value("int32"),
            "history": List(step),
            "reference_self_entailment": Value("float64"),
            "config_hash": Value("string"),
        }
    )


def work_dir(output: str | Path) -> Path:
    return Path(output) / WORK


def block_path(output: str | Path, block: int) -> Path:
    return work_dir(output) / "blocks" / f"block-{block:06d}.arrow"


def group_path(output: str | Path, group: int) -> Path:
    """Rows of model-call group ``group`` (numbered over the whole input, so independent of the block size)."""
    return work_dir(output) / "groups" / f"group-{group:06d}.arrow"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rows_to_table(rows: list[dict]) -> Any:
    import pyarrow as pa

    schema = features().arrow_schema
    return pa.Table.from_pylist(rows, schema=schema)


def _write_rows(path: Path, rows: list[dict]) -> Path:
    """Rows as an Arrow IPC file, atomically."""
    import pyarrow as pa

    table = rows_to_table(rows)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    _atomic_write_bytes(path, sink.getvalue().to_pybytes())
    return path


def write_block(output: str | Path, block: int, rows: list[dict]) -> Path:
    """Write one block's rows, atomically (a block file is always complete)."""
    return _write_rows(block_path(output, block), rows)


def write_group(output: str | Path, group: int, rows: list[dict]) -> Path:
    """Keep one finished group's rows until its block is written, atomically."""
    return _write_rows(group_path(output, group), rows)


def read_rows(path: str | Path) -> list[dict]:
    """Rows of a block or group file, as the pipeline made them (Arrow round-trips every value exactly)."""
    return read_block(path).to_pylist()


def remove_groups(output: str | Path, groups: Iterable[int]) -> None:
    """Drop group files once their block file holds the rows."""
    for group in groups:
        group_path(output, group).unlink(missing_ok=True)


def read_block(path: str | Path) -> Any:
    import pyarrow as pa

    with pa.memory_map(str(path), "r") as source:
        return pa.ipc.open_file(source).read_all()


def _numbered_files(folder: Path, prefix: str) -> dict[int, Path]:
    """``prefix-000123.arrow`` files by number (temporary files of an interrupted write start with a dot)."""
    if not folder.is_dir():
        return {}
    out = {}
    for path in folder.glob(f"{prefix}-*.arrow"):
        try:
            out[int(path.stem.split("-")[1])] = path
        except (IndexError, ValueError):
            continue
    return out


def completed_blocks(output: str | Path) -> dict[int, Path]:
    """Blocks already written."""
    return _numbered_files(work_dir(output) / "blocks", "block")


def completed_groups(output: str | Path) -> dict[int, Path]:
    """Groups kept from an interrupted block (stale ones of an already written block are included)."""
    return _numbered_files(work_dir(output) / "groups", "group")


def count_kept(
    num_sentences: int, block_size: int, group_size: int, blocks: Iterable[int], groups: Iterable[int]
) -> int:
    """Sentences whose rows are stored: in written blocks, plus in kept groups of blocks not written yet."""
    blocks = set(blocks)
    kept = sum(max(0, min(block_size, num_sentences - b * block_size)) for b in blocks)
    per_block = block_size // group_size
    kept += sum(
        max(0, min(group_size, num_sentences - g * group_size)) for g in set(groups) if g // per_block not in blocks
    )
    return kept


def kept_sentences(output: str | Path) -> int:
    """How many sentences of the run in ``output`` need no computing again (0 when nothing was started)."""
    manifest = read_manifest(output)
    if manifest is None:
        return 0
    return count_kept(
        manifest["num_sentences"],
        manifest["block_size"],
        manifest["config"]["sentences_per_call"],
        completed_blocks(output),
        completed_groups(output),
    )


def write_json(path: Path, payload: dict) -> None:
    _atomic_write_bytes(path, (json.dumps(payload, indent=1, sort_keys=True) + "\n").encode())


def read_manifest(output: str | Path) -> dict | None:
    path = work_dir(output) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


# what a user changes; the other pinned keys follow from these and are named only when none of these differs
CAUSES = ("format", "seed", "block_size", "limit", "input_sha256", "config", "models")
FLAGS = {"seed": "--seed", "block_size": "--block-size", "limit": "--limit"}


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key in sorted(value):
        out.update(_flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
    return out


def manifest_conflicts(existing: dict, planned: dict) -> list[tuple[str, Any, Any]]:
    """(setting, folder's value, planned value) for each pinned key of ``planned`` the folder disagrees on.

    Nested recipe and model values are named by their dotted key (``severity.threshold``), so the message says
    what changed rather than that a hash did.
    """
    conflicts = []
    for key in CAUSES:
        if key not in planned or existing.get(key) == planned[key]:
            continue
        if key in ("config", "models"):
            old, new = _flatten(existing.get(key) or {}, ""), _flatten(planned[key], "")
            skip = {"seed"} if key == "config" else set()  # the top-level seed already names it
            prefix = "models." if key == "models" else ""
            conflicts += [
                (prefix + k, old.get(k), new.get(k))
                for k in sorted(set(old) | set(new))
                if k not in skip and old.get(k) != new.get(k)
            ]
        else:
            conflicts.append((key, existing.get(key), planned[key]))
    if not conflicts:
        conflicts = [(k, existing.get(k), planned[k]) for k in PINNED if k in planned and existing.get(k) != planned[k]]
    return conflicts


def _show(value: Any) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text[:12] + "..." if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def _how_to_resume(setting: str, old: Any) -> str:
    if setting in FLAGS:
        return f"{FLAGS[setting]} {_show(old)}" if old is not None else f"without {FLAGS[setting]}"
    if setting == "input_sha256":
        return "the same input file"
    if setting.startswith("models."):
        return f"the same weights for {setting[len('models.') :]}"
    if setting in PINNED:  # a derived key (hash, counts): only the inputs it is derived from can restore it
        return "the same config, input file and models"
    return f"{setting}: {_show(old)} in the config"


def conflict_message(output: str | Path, conflicts: list[tuple[str, Any, Any]]) -> str:
    """One line: what the folder was made with, what this command asks for, and the two ways on."""
    changes = ", ".join(f"{name} {_show(old)} (now {_show(new)})" for name, old, new in conflicts)
    how = "; ".join(_how_to_resume(name, old) for name, old, _ in conflicts)
    return f"{output} was made with {changes}; to resume it rerun with {how}, or use a new --output folder"


def check_settings(output: str | Path, planned: dict) -> None:
    """Raise StoreError when ``output`` holds a run made with other settings (only keys of ``planned`` count).

    Called with the settings known before any model is loaded, and again with the full manifest after.
    """
    existing = read_manifest(output)
    if existing is not None:
        conflicts = manifest_conflicts(existing, planned)
        if conflicts:
            raise StoreError(conflict_message(output, conflicts))


def check_or_write_manifest(output: str | Path, manifest: dict) -> None:
    """First run writes the manifest; later runs (resume, other shards) must match it on every pinned key."""
    if read_manifest(output) is None:
        write_json(work_dir(output) / MANIFEST, manifest)
    else:
        check_settings(output, manifest)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def collect_blocks(sources: Iterable[str | Path]) -> tuple[dict, dict[int, Path]]:
    """Manifest and complete block files over one or more run folders (e.g. one per shard), checked."""
    manifest: dict | None = None
    first: str | Path = ""
    blocks: dict[int, Path] = {}
    for source in sources:
        if not Path(source).is_dir():
            raise StoreError(f"{source} does not exist (or is not a folder); give the --output folders of the shards")
        found = read_manifest(source)
        if found is None:
            raise StoreError(f"{source} has no {WORK}/{MANIFEST}: not a synthesis output folder")
        if manifest is None:
            manifest, first = found, source
        else:
            conflicts = manifest_conflicts(manifest, found)
            if conflicts:
                theirs = ", ".join(f"{name} {_show(new)}" for name, _, new in conflicts)
                ours = ", ".join(f"{name} {_show(old)}" for name, old, _ in conflicts)
                raise StoreError(
                    f"cannot merge: {source} was made with {theirs} but {first} with {ours}; merge only "
                    "folders of one command run with different --shard-index values"
                )
        for index, path in completed_blocks(source).items():
            if index in blocks and _sha256(blocks[index]) != _sha256(path):
                raise StoreError(
                    f"block {index} differs between {blocks[index]} and {path} although both runs had the "
                    "same settings; merge only one of the two folders"
                )
            blocks.setdefault(index, path)
    if manifest is None:
        raise StoreError("merge needs at least one run folder")
    missing = sorted(set(range(manifest["num_blocks"])) - set(blocks))
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise StoreError(
            f"{len(missing)} of {manifest['num_blocks']} blocks are missing ({shown}): finish the shards "
            "that own them (rerun their commands, or add their folders), then merge again"
        )
    return manifest, blocks


def _table_digest(table: Any) -> str:
    """Content hash of the merged rows (not of the block files, which depend on the block size)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue()).hexdigest()[:16]


DESCRIPTION_PREFIX = "SEScore stratified error synthesis: "


def synthesis_language(output: str | Path) -> str | None:
    """The language of the sentences a synthesis dataset was made from (its recipe's ``language``).

    Why: a regressor trained on German triples must declare German in its checkpoint, and the dataset is the one
    place that knows; reading it at export time means the declaration cannot disagree with the data.

    Args:
        output: a folder written by ``train.py synthesize``.

    Returns:
        The ISO 639-1 code, or None for a dataset that does not record its recipe (e.g. one made elsewhere).
    """
    path = Path(output) / "dataset_info.json"
    try:
        description = json.loads(path.read_text(encoding="utf-8")).get("description") or ""
        recipe = (
            json.loads(description[len(DESCRIPTION_PREFIX) :]) if description.startswith(DESCRIPTION_PREFIX) else {}
        )
    except (OSError, ValueError):
        return None
    language = (recipe.get("config") or {}).get("language")
    return language.lower() if isinstance(language, str) else None


def merge_blocks(blocks: dict[int, Path], manifest: dict, output: str | Path) -> Any:
    """Concatenate blocks in index order and save them as a `datasets` dataset in ``output``."""
    import pyarrow as pa
    from datasets import Dataset, DatasetInfo

    tables = [read_block(blocks[i]) for i in sorted(blocks)]
    # one chunk: the saved bytes must not depend on how rows were split into blocks
    table = (pa.concat_tables(tables) if tables else rows_to_table([])).combine_chunks()
    digest = _table_digest(table)
    info = DatasetInfo(
        description=DESCRIPTION_PREFIX
        + json.dumps({k: manifest.get(k) for k in ("config", "config_hash", "models", "seed")}, sort_keys=True),
        features=features(),
    )
    dataset = Dataset(table, info=info, fingerprint=f"sescore-{digest}")
    Path(output).mkdir(parents=True, exist_ok=True)
    dataset.save_to_disk(str(output))
    return dataset


__all__ = [
    "DESCRIPTION_PREFIX",
    "StoreError",
    "block_path",
    "check_or_write_manifest",
    "check_settings",
    "conflict_message",
    "collect_blocks",
    "completed_blocks",
    "completed_groups",
    "count_kept",
    "features",
    "group_path",
    "kept_sentences",
    "manifest_conflicts",
    "merge_blocks",
    "synthesis_language",
    "read_block",
    "read_manifest",
    "read_rows",
    "remove_groups",
    "rows_to_table",
    "work_dir",
    "write_block",
    "write_group",
    "write_json",
]
