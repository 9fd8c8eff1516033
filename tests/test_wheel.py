"""The built wheel, installed into a fresh virtual environment, works from a directory outside the repository.

The release files are built as they would be published (``python -m build``: an sdist, and the wheel built from
it) and checked by ``twine check --strict``. This is what a ``pip install nlgmetrics`` user gets: the console
commands, the packaged configs and shipped checkpoints, and the Python imports, with no generic top-level names.
The wheel is pip-installed for real; its dependencies are not downloaded and unpacked again (that was 130 s, an
eighth of the suite, repeating what ``make setup`` already resolved from the same requirements). Instead the fresh
environment sees exactly the distributions the wheel's own ``Requires-Dist`` reaches, transitively, linked from the
environment running the tests, and nothing else: a module the toolkit imports without declaring it (say a ``dev``
extra's) is missing
there as it would be for a user.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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


def _declared_closure(wheel: Path) -> list[importlib.metadata.Distribution]:
    """Every installed distribution the wheel's requirements reach (markers and extras evaluated as pip would)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = Parser().parsestr(archive.read(metadata).decode("utf-8")).get_all("Requires-Dist") or []

    def applies(requirement: Requirement, extras: set[str]) -> bool:
        return requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in {"", *extras})

    todo = [r for r in map(Requirement, requires) if applies(r, set())]
    extras_of: dict[str, set[str]] = {}
    found: dict[str, importlib.metadata.Distribution] = {}
    missing = []
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in extras_of and set(requirement.extras) <= extras_of[name]:
            continue
        extras_of[name] = extras_of.get(name, set()) | set(requirement.extras)
        try:
            found[name] = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(str(requirement))
            continue
        todo += [r for r in map(Requirement, found[name].requires or []) if applies(r, extras_of[name])]
    assert not missing, f"declared but not installed here (run make setup): {missing}"
    return list(found.values())


def _link_dependencies(wheel: Path, site_packages: Path) -> int:
    """Symlink each declared distribution's top-level files (packages, modules, .dist-info) into ``site_packages``."""
    linked = 0
    for dist in _declared_closure(wheel):
        assert dist.files is not None, f"{dist.metadata['Name']} has no RECORD: cannot tell its files"
        for top in sorted({f.parts[0] for f in dist.files if f.parts[0] not in ("..", "__pycache__")}):
            target = site_packages / top
            if not target.exists():  # a namespace folder two distributions share is linked once
                target.symlink_to(dist.locate_file(top))
                linked += 1
    return linked


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin folder, wheel path, an empty working directory outside the repository)."""
    root = tmp_path_factory.mktemp("wheel")
    source = _copy_of_the_checkout(root / "src")
    dist = root / "dist"
    # the release path: an sdist, and the wheel built from that sdist (so a file the sdist lacks fails here)
    built = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)], root)
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    (wheel,) = dist.glob("nlgmetrics-*.whl")
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    assert _link_dependencies(wheel, site_packages) > 100
    # the wheel itself is installed by pip (console scripts, RECORD, package data), not linked
    done = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",
            str(wheel),
        ],
        root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    checked = _run([sys.executable, "-m", "pip", "--python", str(python), "check"], root)
    assert checked.returncode == 0, checked.stdout[-3000:]  # every requirement's version range is met there
    work = root / "elsewhere"
    work.mkdir()
    return env_dir / "bin", wheel, work


def test_release_files_pass_twine_check(installed):
    """What PyPI would refuse (a README that does not render, missing metadata) fails here, not at upload."""
    _, wheel, _ = installed
    files = sorted(str(p) for p in wheel.parent.iterdir())
    assert len(files) == 2 and any(f.endswith(".tar.gz") for f in files), files
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", *files], wheel.parent)
    assert checked.returncode == 0, (checked.stdout + checked.stderr)[-3000:]
    assert checked.stdout.count("PASSED") == 2


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
        done = _run(
            [
                str(bin_dir / "nlgmetrics-evaluate"),
                "score",
                "--metric",
                metric,
                "--quiet",
                "--hyps",
                "h.txt",
                "--refs",
                "r.txt",
            ],
            work,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["n"] == 2 and result["metric"] == metric
    for command in ("nlgmetrics-evaluate", "nlgmetrics-train", "nlgmetrics-models"):
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
        "from nlgmetrics.resources import config_path\n"
        "ranges = config_path('menli/nli-mpnet+bertscore-minilm.json')\n"
        "from sescore.scorer import checkpoint_folders\n"
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
    # only declared dependencies are there: the dev extra, importable in the environment running this test, is not
    import hypothesis  # noqa: F401

    undeclared = _run([str(bin_dir / "python"), "-c", "import hypothesis"], work)
    assert undeclared.returncode != 0 and "No module named 'hypothesis'" in undeclared.stderr
    site = str(bin_dir.parent)
    assert all(f.startswith(site) for f in found["files"]), found["files"]  # not the repository's copies
    assert found["nli"].startswith(site) and found["sescore"].startswith(site) and found["ranges"].startswith(site)
    assert found["sescore_ok"] and found["nli_ok"]
