"""Packaged resources: the YAML recipes under ``nlgmetrics/configs`` (``configs/`` in the source tree links here).

A pip user has no repository checkout, so a config named as in the README (``configs/mars/offline.yaml``) or
by its short name (``mars/offline.yaml``) is looked up inside the installed package when no such file exists
relative to the working directory. A path that exists always wins, so users' own configs take precedence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


def packaged_configs() -> list[str]:
    """Short names (``mars/offline.yaml``) of every packaged recipe and stored-ranges file (``menli/*.json``), for
    error messages and ``--help``."""
    return sorted(str(p.relative_to(CONFIG_DIR)) for pattern in ("*.yaml", "*.json") for p in CONFIG_DIR.rglob(pattern))


def config_path(name: str | Path) -> Path:
    """A config file: ``name`` itself if it exists, else the packaged recipe of that name; a clear error if neither."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    parts = path.parts
    if not path.is_absolute():
        short = Path(*parts[1:]) if parts and parts[0] == "configs" else path
        packaged = CONFIG_DIR / short
        if packaged.is_file():
            return packaged
    raise FileNotFoundError(
        f"config file not found: {name} (neither as a path nor among the packaged recipes: "
        f"{', '.join(packaged_configs())})"
    )


def shipped_checkpoint_root(path: str | Path) -> Path | None:
    """The shipped checkpoint folder ``path`` lies in, or None.

    Shipped checkpoints live in a ``checkpoints/`` folder directly inside one of the toolkit's Python packages
    (``nlgmetrics/nli/checkpoints``, ``sescore/checkpoints``); the test is by layout, so no metric package is
    imported here.
    """
    resolved = Path(path).expanduser().resolve()
    for folder in (resolved, *resolved.parents):
        if folder.name == "checkpoints" and (folder.parent / "__init__.py").is_file():
            return folder
    return None


def refuse_shipped_output(path: str | Path, what: str = "training output") -> Path:
    """Raise if a training run would write into a shipped checkpoint; return the resolved output folder.

    Following a README recipe must never overwrite the default model that every user scores with.
    """
    root = shipped_checkpoint_root(path)
    if root is not None:
        raise ValueError(
            f"{what} {path} is inside the shipped checkpoints ({root}); training never overwrites a shipped "
            "model: export to a folder of your own (e.g. runs/...) and copy it there deliberately if you mean to"
        )
    return Path(path).expanduser().resolve()


def data_folder(override: str | Path | None = None, beside: str | Path | None = None) -> Path:
    """Where the judged-data folder is meant to be, whether or not it exists (``data_root`` checks).

    Args:
        override: a flag's value; wins when given.
        beside: the folder whose sibling ``shared/data`` is the default (a checkout, for its benchmarks and
            tests); None for the working directory's.

    Returns:
        ``override``, else ``$NLGMETRICS_DATA``, else ``shared/data`` beside ``beside`` (or ``../shared/data``).
    """
    import os

    default = Path(beside).parent / "shared" / "data" if beside is not None else Path("..") / "shared" / "data"
    return Path(override or os.environ.get("NLGMETRICS_DATA") or default).expanduser()


DATA_PLACEHOLDER = "${NLGMETRICS_DATA}"


def expand_data(text: str) -> str:
    """``text`` with ``${NLGMETRICS_DATA}`` replaced by the judged-data folder (``data_root``); unchanged without it.

    Recipe files name corpora and judged files this way, so one recipe runs wherever the data folder is; every
    reader of such a path resolves it here, so there is one rule for where the data is.

    Raises:
        FileNotFoundError: the text names the folder and it does not exist (the message says how to set it).
    """
    text = str(text)
    if DATA_PLACEHOLDER not in text:
        return text
    return text.replace(DATA_PLACEHOLDER, str(data_root()))


def data_root(override: str | Path | None = None, beside: str | Path | None = None) -> Path:
    """The judged-data folder (``data_folder``), with a clear error when it does not exist, because none of that
    data is ever shipped."""
    path = data_folder(override, beside)
    if not path.is_dir():
        raise FileNotFoundError(f"judged data folder not found: {path} (pass --data-root or set NLGMETRICS_DATA)")
    return path


def portable(value: Any, root: str | Path | None = None) -> Any:
    """``value`` with this machine's paths taken out, as result files should record them (they are read on other
    machines and on the docs site): paths under ``root`` become relative, the judged-data folder becomes
    ``$NLGMETRICS_DATA/``, an installed package's folder ``<site-packages>/``.

    Args:
        value: a result: dicts, lists and tuples are walked, strings and paths rewritten, the rest kept.
        root: the folder paths are made relative to (a checkout); None for the working directory.

    Returns:
        The same structure with the rewritten strings (paths become strings).
    """
    root = Path(root if root is not None else Path.cwd()).resolve()
    data = {(root.parent / "shared" / "data").resolve(), data_folder().resolve()}
    prefixes = [(f"{path}/", "$NLGMETRICS_DATA/") for path in sorted(data)]
    prefixes += [(f"{path}/", "<site-packages>/") for path in _site_packages()]
    prefixes.append((f"{root}/", ""))
    return _rewrite(value, prefixes)


def _rewrite(value: Any, prefixes: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: _rewrite(v, prefixes) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_rewrite(v, prefixes) for v in value)
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or "/" not in value:
        return value
    for prefix, replacement in prefixes:
        value = value.replace(prefix, replacement)
    return value


def _site_packages() -> list[Path]:
    """This interpreter's package folders: where an installed package's paths start."""
    import site
    import sysconfig

    found = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()}
    found.add(site.getusersitepackages())
    return [Path(p) for p in sorted(found) if p and Path(p).name == "site-packages"]
