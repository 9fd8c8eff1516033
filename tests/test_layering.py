"""The package layering the README promises, checked on the source: a rule that is only written down drifts.

Layers point one way: the shared core (``nlgmetrics``) <- the metric packages (``sescore``, ``menli``, ``mars``)
<- the command line (``nlgmetrics.cli``). Every import counts, at module level or inside a function:

- no module of ``nlgmetrics`` imports a metric package, the command line included (it composes metrics only
  through the registry's entry points);
- no module of ``nlgmetrics`` outside ``nlgmetrics.cli`` imports the command line;
- ``sescore``, ``menli`` and ``mars`` are siblings: none imports another, nor the command line;
- no import cycle between modules;
- nothing imports the old top-level names that moved under ``nlgmetrics``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
METRIC_PACKAGES = ("sescore", "menli", "mars")
PACKAGES = ("nlgmetrics", *METRIC_PACKAGES)
CLI = "nlgmetrics.cli"
MOVED = ("modelroles", "nli", "baselines", "metaeval", "perturb", "stress")


def import_statements(path: Path) -> list[tuple[str, list[str]]]:
    """Every absolute import of a file, module- and function-level: ``(module, names)``; ``import a.b`` gives
    ``("a.b", [])``, ``from a.b import c, d`` gives ``("a.b", ["c", "d"])``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, [alias.name for alias in node.names]))
    return out


def imported_names(path: Path) -> set[str]:
    """The imported modules, and ``a.b.c`` for ``from a.b import c`` (``c`` may be a module)."""
    return {name for module, names in import_statements(path) for name in [module, *(f"{module}.{n}" for n in names)]}


def imported_top_levels(path: Path) -> set[str]:
    """The imported modules themselves (``from a.b import c`` gives ``a.b``)."""
    return {module for module, _ in import_statements(path)}


def _sources(package: str, root: Path = REPO) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def _module(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in files:
        for name in imported_top_levels(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(REPO)} imports {name}")
    return out


def import_cycles(root: Path, packages: tuple[str, ...]) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a circle (Tarjan's strongly connected
    components). A package's ``__init__`` is its facade, not a node: ``from pkg import x`` inside ``pkg`` goes to
    the module ``pkg.x`` where there is one."""
    files = {_module(p, root): p for package in packages for p in _sources(package, root)}
    modules = {name for name, path in files.items() if path.name != "__init__.py"}
    graph = {name: sorted(n for n in imported_names(files[name]) if n in modules and n != name) for name in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return cycles


@pytest.mark.parametrize("package", METRIC_PACKAGES)
def test_metric_packages_import_neither_siblings_nor_the_command_line(package):
    others = tuple(p for p in METRIC_PACKAGES if p != package) + (CLI,)
    assert _violations(_sources(package), others) == []


def test_no_module_of_the_shared_package_imports_a_metric_package_not_even_the_command_line():
    files = _sources("nlgmetrics")
    assert any(_module(p).startswith(CLI) for p in files), "the command line's sources were not found"
    assert _violations(files, METRIC_PACKAGES) == []


def test_the_shared_core_does_not_import_the_command_line():
    core = [p for p in _sources("nlgmetrics") if not _module(p).startswith(CLI)]
    assert _violations(core, (CLI,)) == []


def test_no_import_cycles():
    assert import_cycles(REPO, PACKAGES) == []


def test_no_code_imports_the_old_top_level_names():
    files = [p for p in REPO.rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts]
    assert _violations(files, MOVED) == []


def private_toolkit_imports(path: Path) -> list[str]:
    """Imports of an underscore name (or module) of the toolkit, or of its command line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules, names = [node.module], [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [alias.name for alias in node.names], []
        else:
            continue
        for module in modules:
            if module.split(".")[0] not in PACKAGES:
                continue
            private = [part for part in module.split(".") if part.startswith("_")]
            private += [name for name in names if name.startswith("_")]
            if private or module == CLI or module.startswith(CLI + "."):
                out.append(f"{path.name}:{node.lineno} {module} {', '.join(private)}".strip())
    return out


def test_bench_uses_the_public_api_only():
    """Benchmarks are the toolkit's first users: what they need must be public, not reached for."""
    scripts = sorted((REPO / "bench").glob("*.py"))
    assert scripts
    assert [hit for path in scripts for hit in private_toolkit_imports(path)] == []


def test_the_private_import_checker_sees_one(tmp_path):
    bad = tmp_path / "bench.py"
    bad.write_text("from nlgmetrics.scorecache import _key\nfrom nlgmetrics.cli.evaluate import main\nimport os\n")
    assert private_toolkit_imports(bad) == [
        "bench.py:1 nlgmetrics.scorecache _key",
        "bench.py:2 nlgmetrics.cli.evaluate",
    ]


def test_the_checker_sees_a_violation(tmp_path):
    """The rules above are only as good as the import scanner: feed it each import form it must catch."""
    bad = tmp_path / "bad.py"
    bad.write_text("import menli.functional\nfrom mars import build\n\ndef f():\n    from sescore.regressor import x\n")
    assert imported_top_levels(bad) == {"menli.functional", "mars", "sescore.regressor"}


def test_the_cycle_finder_sees_a_cycle_through_function_level_imports(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.a import f\n")
    (package / "a.py").write_text("def f():\n    from pkg.b import g\n    return g\n")
    (package / "b.py").write_text("from pkg import c\n")
    (package / "c.py").write_text("def h():\n    import pkg.a\n")
    assert import_cycles(tmp_path, ("pkg",)) == [["pkg.a", "pkg.b", "pkg.c"]]
    (package / "c.py").write_text("def h():\n    return 1\n")
    assert import_cycles(tmp_path, ("pkg",)) == []


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

    code = (
        "import sys, menli, mars, sescore, nlgmetrics.cli.evaluate\n"
        "print(sorted(m for m in ('torchmetrics', 'pytorch_lightning', 'lightning') if m in sys.modules))\n"
        "from menli import MENLI, MENLIMix\nfrom mars import MARS\nfrom sescore import SEScore\n"
        "import torchmetrics\n"
        "print(all(issubclass(c, torchmetrics.Metric) for c in (MENLI, MENLIMix, MARS, SEScore)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[]", "True"], done.stdout
