"""Why a weights file could not be read, in words a user can act on.

Every checkpoint this toolkit writes is safetensors; nothing is ever unpickled, because unpickling a file runs
code from it. The common mistake is pointing a loader at a ``torch.save`` / Lightning ``.ckpt`` file (a zip or a
pickle stream), which safetensors reports as a header error; saying "damaged" there would send users looking for
a disk fault, so such files are named for what they are.
"""
from __future__ import annotations

from pathlib import Path

_PICKLE_STARTS = (b"PK\x03\x04", b"\x80")  # torch.save's zip archive; a raw pickle (protocol >= 2)


def unreadable_reason(path: str | Path) -> str:
    """``"a pickled PyTorch file ..."`` for a torch.save/Lightning file, else ``"damaged or truncated"``."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(4)
    except OSError:
        return "unreadable"
    if start.startswith(_PICKLE_STARTS):
        return ("a pickled PyTorch file (torch.save or a Lightning .ckpt), not safetensors; it is not loaded, "
                "because unpickling runs code from the file")
    return "damaged or truncated"
