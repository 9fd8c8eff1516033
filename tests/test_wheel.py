"""The built wheel, installed into a fresh virtual environment, works from a directory outside the repository.

This is what a ``pip install nlgmetrics`` user gets: the console commands, the packaged configs and shipped
checkpoints, and the Python imports, with no generic top-level names. It builds and installs for real
(about a minute on 2 cores from the local package caches), so it runs once per session.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = {"nlgmetrics", "sescore", "menli", "mars"}


def _run(cmd: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)


def _copy_of_the_checkout(target: Path) -> Path:
    """The files git tracks (or would track) copied elsewhere: a stale build/ or an ignored file never ships."""
    listed = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], REPO)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_symlink() or not source.is_file():
            continue  # configs/ -> nlgmetrics/configs: the package holds the real files
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin folder, wheel path, an empty working directory outside the repository)."""
    root = tmp_path_factory.mktemp("wheel")
    source = _copy_of_the_checkout(root / "src")
    dist = root / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(source)], root)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("nlgmetrics-*.whl")
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    torch_spec = f"torch=={__import__('torch').__version__.split('+')[0]}"  # the build this suite runs on
    # --no-compile: byte-compiling every module of ~130 packages was two thirds of this fixture's time; the
    # modules the tests import are compiled on first import as they would be for any user
    done = _run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", torch_spec, str(wheel)], root)
    assert done.returncode == 0, done.stderr[-3000:]
    work = root / "elsewhere"
    work.mkdir()
    return env_dir / "bin", wheel, work


def test_wheel_holds_only_the_toolkit_namespaces_and_its_data(installed):
    _, wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == TOP_LEVEL
    assert "nlgmetrics/configs/mars/offline.yaml" in names
    assert "nlgmetrics/configs/sescore/fit_offline.yaml" in names
    assert "nlgmetrics/configs/menli/nli-mpnet+bertscore-minilm.json" in names  # stored combination ranges
    assert "nlgmetrics/configs/menli/mix/nli-mpnet+sescore-minilm+lm-ratio-smollm2.json" in names  # a mix recipe
    assert any(n.startswith("sescore/checkpoints/") and n.endswith(".safetensors") for n in names)
    assert any(n.startswith("nlgmetrics/nli/checkpoints/") and n.endswith(".safetensors") for n in names)


def test_console_commands_score_from_outside_the_repository(installed):
    bin_dir, _, work = installed
    (work / "h.txt").write_text("The cat sat on the mat.\nProfits rose sharply.\n")
    (work / "r.txt").write_text("A cat sat on the mat.\nProfits increased sharply.\n")
    for metric in ("chrf", "bertscore"):
        done = _run([str(bin_dir / "nlgmetrics-evaluate"), "score", "--metric", metric, "--quiet",
                     "--hyps", "h.txt", "--refs", "r.txt"], work, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["n"] == 2 and result["metric"] == metric
    for command in ("nlgmetrics-evaluate", "nlgmetrics-train"):
        shown = _run([str(bin_dir / command), "--help"], work)
        assert shown.returncode == 0, shown.stderr
        assert "usage" in shown.stdout.lower()


def test_imports_configs_and_shipped_models_resolve_from_the_installed_package(installed):
    bin_dir, _, work = installed
    code = (
        "import json, pathlib, mars, menli, sescore, nlgmetrics\n"
        "from nlgmetrics.modelroles import resolve\n"
        "from sescore.regressor import DEFAULT_CHECKPOINT\n"
        "config = mars.load_config('configs/mars/offline.yaml')\n"
        "nli = resolve('nli', 'packaged:nli-minilm').location\n"
        "from nlgmetrics.cli.evaluate import _normalization_file\n"
        "ranges = _normalization_file('menli/nli-mpnet+bertscore-minilm.json')\n"
        "from sescore.regressor.scoring import checkpoint_folders\n"
        "members = checkpoint_folders(DEFAULT_CHECKPOINT)\n"
        "from sescore.regressor import MINILM_V2_CHECKPOINT\n"
        "members += checkpoint_folders(MINILM_V2_CHECKPOINT)\n"
        "sescore_ok = len(members) == 4 and all((pathlib.Path(m) / 'model.safetensors').is_file() for m in members)\n"
        "print(json.dumps({'files': [m.__file__ for m in (mars, menli, sescore, nlgmetrics)],\n"
        "  'nli': str(nli), 'sescore': DEFAULT_CHECKPOINT, 'ranges': str(ranges),\n"
        "  'sescore_ok': sescore_ok,\n"
        "  'nli_ok': any(pathlib.Path(nli).glob('*.safetensors'))}))\n"
    )
    done = _run([str(bin_dir / "python"), "-c", code], work)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    site = str(bin_dir.parent)
    assert all(f.startswith(site) for f in found["files"]), found["files"]  # not the repository's copies
    assert found["nli"].startswith(site) and found["sescore"].startswith(site) and found["ranges"].startswith(site)
    assert found["sescore_ok"] and found["nli_ok"]
