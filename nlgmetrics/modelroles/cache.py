"""The toolkit's cache of derived model folders, and the one way anything is written into it.

Packaged models that are not loadable as shipped (a GGUF, a split zip, a custom 4-bit format) are converted once
into ``$NLGMETRICS_CACHE`` (default ``~/.cache/nlgmetrics``). Two processes may ask for the same model at the same
moment (``--devices`` workers, parallel test runs), and a conversion may be interrupted, so every folder is built
in a temporary sibling and renamed into place: a reader sees either nothing or a complete folder, never a half
one. A lock file keeps a second process from doing the same minutes-long work while the first is at it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Iterator

CACHE_ENV = "NLGMETRICS_CACHE"


def cache_root() -> Path:
    """Where converted models and other derived artefacts go (``$NLGMETRICS_CACHE`` or ``~/.cache/nlgmetrics``)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "nlgmetrics")
    return Path(root)


_SHA256: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered per (path, size, mtime) so a 400 MB weight file is read once per process.

    Both the integrity check of a cached model and the weight fingerprint of score signatures need this hash;
    sharing the memo means loading a checked model costs one pass over its weights, not two.
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, int(stat.st_mtime_ns))
    if key not in _SHA256:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 22), b""):
                digest.update(chunk)
        _SHA256[key] = digest.hexdigest()
    return _SHA256[key]


def read_marker(folder: Path, marker: str, required: str) -> dict | None:
    """The JSON a finished build leaves in ``folder`` (written last), or None if it or ``required`` is missing.

    Each converter decides from the returned dict whether the folder is current (same source, same converter).
    """
    path = folder / marker
    if not path.is_file() or not (folder / required).is_file():
        return None
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


@contextlib.contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock named after ``out`` (a sibling ``.<name>.lock`` file) while building it.

    Only an optimisation: correctness comes from the atomic rename in :func:`build_once`, so on a system
    without ``fcntl`` (Windows) two processes may both build and one result is kept.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Linux/macOS
        yield
        return
    with open(out.parent / f".{out.name}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _publish(tmp: Path, out: Path, valid: Callable[[Path], bool]) -> None:
    """Rename the finished ``tmp`` to ``out``; a valid ``out`` that appeared meanwhile wins, a broken one is replaced.

    ``os.rename`` of a directory onto a non-empty directory fails on POSIX, which is what makes two racing
    builders safe: exactly one rename succeeds. A broken ``out`` is first moved aside (also a rename), so no
    reader ever sees a folder with files of two builds.
    """
    for _ in range(3):
        try:
            os.rename(tmp, out)
            return
        except OSError:
            if valid(out):
                shutil.rmtree(tmp, ignore_errors=True)
                return
            aside = out.with_name(f".{out.name}.stale-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(out, aside)
            except FileNotFoundError:  # another process moved it aside first; try our rename again
                continue
            shutil.rmtree(aside, ignore_errors=True)
    raise OSError(f"could not move the converted model into {out}")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def build_once(out: Path, valid: Callable[[Path], bool], build: Callable[[Path], None]) -> Path:
    """Return ``out`` when ``valid(out)``; otherwise ``build(tmp)`` a fresh folder and rename it into place.

    ``valid`` decides what a good cache entry is (a marker file, a hash); an entry that fails it (interrupted by
    an older version, corrupted on disk, built from other weights) is rebuilt, not trusted.
    """
    if valid(out):
        return out
    with build_lock(out):
        if valid(out):  # another process finished it while we waited for the lock
            return out
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            build(tmp)
            tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it private (0700); a cache folder is like any other
            _publish(tmp, out, valid)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    if not valid(out):
        raise OSError(f"the model converted into {out} does not pass its own check; delete the folder and retry")
    return out
