"""The package layering the README promises, checked on the source: a rule that is only written down drifts.

- ``sescore``, ``menli`` and ``mars`` are siblings: none imports another, nor the entry-point layer.
- ``nlgmetrics`` (what they share) imports no metric package, except ``nlgmetrics.cli``, which composes them.
- Nothing imports the old top-level names that moved under ``nlgmetrics``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
METRIC_PACKAGES = ("sescore", "menli", "mars")
MOVED = ("modelroles", "nli", "baselines", "metaeval", "perturb", "stress")


def imported_top_levels(path: Path) -> set[str]:
    """Dotted names of every absolute import in a file (``import a.b`` and ``from a.b import c`` give ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _sources(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def _violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in files:
        for name in imported_top_levels(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(REPO)} imports {name}")
    return out


@pytest.mark.parametrize("package", METRIC_PACKAGES)
def test_metric_packages_import_neither_siblings_nor_the_entry_points(package):
    others = tuple(p for p in METRIC_PACKAGES if p != package) + ("nlgmetrics.cli",)
    assert _violations(_sources(package), others) == []


def test_shared_package_imports_no_metric_package_outside_cli():
    files = [p for p in _sources("nlgmetrics") if "cli" not in p.relative_to(REPO / "nlgmetrics").parts[:1]]
    assert files, "no nlgmetrics sources found"
    assert _violations(files, METRIC_PACKAGES) == []


def test_no_code_imports_the_old_top_level_names():
    files = [p for p in REPO.rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts]
    assert _violations(files, MOVED) == []


def test_the_checker_sees_a_violation(tmp_path):
    """The rules above are only as good as the import scanner: feed it each import form it must catch."""
    bad = tmp_path / "bad.py"
    bad.write_text("import menli.functional\nfrom mars import build\n\ndef f():\n    from sescore.regressor import x\n")
    assert imported_top_levels(bad) == {"menli.functional", "mars", "sescore.regressor"}


def test_training_refuses_to_export_into_a_shipped_checkpoint(tmp_path):
    """Following a README recipe must never overwrite the default model every user scores with."""
    from nlgmetrics.resources import refuse_shipped_output, shipped_checkpoint_root

    shipped = REPO / "sescore" / "checkpoints" / "minilm-news"
    assert shipped_checkpoint_root(shipped) == REPO / "sescore" / "checkpoints"
    with pytest.raises(ValueError, match="shipped"):
        refuse_shipped_output(shipped)
    with pytest.raises(ValueError, match="shipped"):
        refuse_shipped_output(REPO / "nlgmetrics" / "nli" / "checkpoints" / "minilm-lora" / "sub")
    assert refuse_shipped_output(tmp_path / "checkpoints" / "mine") == (tmp_path / "checkpoints" / "mine").resolve()


def test_no_packaged_recipe_exports_into_a_shipped_checkpoint():
    import yaml

    from nlgmetrics.resources import CONFIG_DIR, shipped_checkpoint_root

    for path in CONFIG_DIR.rglob("*.yaml"):
        config = yaml.safe_load(path.read_text()) or {}
        outputs = [config.get("output"), (config.get("export") or {}).get("dirpath")]
        for out in filter(None, outputs):
            assert shipped_checkpoint_root(REPO / out) is None, f"{path.name} writes into {out}"


def test_export_callback_refuses_the_shipped_folder():
    from sescore.regressor.export import ExportBest

    with pytest.raises(ValueError, match="shipped"):
        ExportBest(dirpath=str(REPO / "sescore" / "checkpoints" / "minilm-news"))


def test_packaged_config_lookup(tmp_path, monkeypatch):
    from nlgmetrics.resources import config_path

    monkeypatch.chdir(tmp_path)  # no configs/ here: names resolve inside the package
    assert config_path("configs/mars/offline.yaml").is_file()
    assert config_path("mars/offline.yaml") == config_path("configs/mars/offline.yaml")
    own = tmp_path / "configs" / "mars" / "offline.yaml"
    own.parent.mkdir(parents=True)
    own.write_text("{}\n")
    assert config_path("configs/mars/offline.yaml").resolve() == own  # a user's own file wins
    with pytest.raises(FileNotFoundError, match="mars/offline.yaml"):
        config_path("configs/mars/nope.yaml")


def test_scoring_imports_leave_torchmetrics_and_lightning_unloaded():
    """Importing the metric packages and building a scorer's CLI module does not load torchmetrics (~4 s: it imports
    its audio/image/text modules, scipy.signal and transformers) or Lightning: every evaluate.py run and every
    --devices worker process paid that for classes scoring never uses. The torchmetrics classes still import."""
    import subprocess
    import sys

    code = ("import sys, menli, mars, sescore, nlgmetrics.cli.evaluate\n"
            "print(sorted(m for m in ('torchmetrics', 'pytorch_lightning', 'lightning') if m in sys.modules))\n"
            "from menli import MENLI, MENLIMix\nfrom mars import MARS\nfrom sescore import SEScore\n"
            "import torchmetrics\n"
            "print(all(issubclass(c, torchmetrics.Metric) for c in (MENLI, MENLIMix, MARS, SEScore)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[]", "True"], done.stdout
