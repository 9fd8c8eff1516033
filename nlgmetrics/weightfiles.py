"""Why a checkpoint file could not be read, in words a user can act on.

Every checkpoint this toolkit writes is safetensors; nothing is ever unpickled, because unpickling a file runs
code from it. The common mistake is pointing a loader at a ``torch.save`` / Lightning ``.ckpt`` file (a zip or a
pickle stream), which safetensors reports as a header error; saying "damaged" there would send users looking for
a disk fault, so such files are named for what they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import yaml

_PICKLE_STARTS = (b"PK\x03\x04", b"\x80")  # torch.save's zip archive; a raw pickle (protocol >= 2)


def unreadable_reason(path: str | Path) -> str:
    """``"a pickled PyTorch file ..."`` for a torch.save/Lightning file, else ``"damaged or truncated"``."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(4)
    except OSError:
        return "unreadable"
    if start.startswith(_PICKLE_STARTS):
        return (
            "a pickled PyTorch file (torch.save or a Lightning .ckpt), not safetensors; it is not loaded, "
            "because unpickling runs code from the file"
        )
    return "damaged or truncated"


def read_format_yaml(
    file: str | Path, fmt: str, owner: str, error: Callable[[str], Exception], missing: str | None = None
) -> dict[str, Any]:
    """A checkpoint's YAML file as a dict whose ``format`` is ``fmt``, or ``error(message)`` raised.

    Why one function: every checkpoint kind (SEScore models and ensembles, NLI adapters) must turn a missing file,
    bad YAML or bytes, and another format's file into the same kind of one-line message naming ``owner`` (e.g.
    ``"SEScore checkpoint runs/x"``) and the file. ``missing`` replaces the default "no <file>" message.
    """
    file = Path(file)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError as cause:
        raise error(f"{owner}: {missing or f'no {file.name}'}") from cause
    except (yaml.YAMLError, UnicodeDecodeError) as cause:
        raise error(f"{owner}: {file.name} is not valid YAML ({cause})") from cause
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        raise error(f"{owner}: {file.name} is not a '{fmt}' file")
    return raw


def save_weights(state: dict[str, Any], path: str | Path, metadata: dict[str, str] | None = None) -> Path:
    """``safetensors.torch.save_file`` with the file mode a plain ``open`` gives (0666 minus the umask).

    Why: safetensors creates its file private (0600), so a checkpoint exported on a shared machine or into a
    shared folder could not be read by anybody else, unlike every other file the toolkit writes.

    Args:
        state: tensors by name.
        path: the ``.safetensors`` file to write.
        metadata: safetensors' string metadata.

    Returns:
        The path written.
    """
    import os

    from safetensors.torch import save_file

    save_file(state, str(path), metadata=metadata)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
    return Path(path)
