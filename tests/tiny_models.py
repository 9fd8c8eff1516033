"""Tiny random models of every architecture a role can hold, with tokenizers trained on the fly.

No pretrained NLI, masked-LM, seq2seq or GPT-2 weights exist offline, so tests build these in seconds and save
them to folders that the model-role resolver loads exactly like a user's local model directory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_WORDS = (
    "the a an cat dog man woman child house car city river tree bank price market government minister "
    "company report week year day night music game story teacher student doctor police road train "
    "runs walks sees eats buys sells says thinks reads writes plays sings drives opens closes rises falls "
    "big small red old new happy sad quick slow bright dark cold warm high low good bad "
    "very quite never not always often today yesterday here there quickly slowly "
    "in on at with from to of by for and but or because while after before "
    "he she they we it his her their our one two three four five 2020 300 % . , ? !"
).split()


def tiny_corpus(n: int = 400, seed: int = 0) -> list[str]:
    """Deterministic pseudo-sentences covering the word list (enough for BPE/WordPiece/unigram training)."""
    rng = np.random.default_rng(seed)
    sentences = [" ".join(_WORDS[i : i + 8]) for i in range(0, len(_WORDS), 8)]
    for _ in range(n):
        length = int(rng.integers(4, 16))
        words = [_WORDS[int(i)] for i in rng.integers(0, len(_WORDS), size=length)]
        sentences.append(" ".join(words).capitalize() + ".")
    return sentences


def _wordpiece_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    # The vocabulary is built, not trained: tokenizers' WordPiece trainer breaks merge ties by hash order, so each
    # process learned a different vocabulary (8 of 314 pieces differed between two builds) and the tiny models'
    # scores changed from one test session to the next. Every corpus word is a piece; other words split into
    # characters.
    normalizer, pre_tokenizer = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    words = sorted(
        {word for text in tiny_corpus() for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))}
    )
    chars = sorted({char for word in words for char in word})
    pieces = specials + chars + [f"##{char}" for char in chars] + [word for word in words if len(word) > 1]
    tok = Tokenizer(models.WordPiece({piece: i for i, piece in enumerate(pieces)}, unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tok.decoder = decoders.WordPiece()
    fast = BertTokenizerFast(tokenizer_object=tok, model_max_length=128)
    fast.save_pretrained(out)
    return fast


def _byte_bpe_tokenizer(out: Path, specials: list[str], bos: str, eos: str, pad: str, mask: str | None):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(tiny_corpus(), trainer)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    kwargs = {"bos_token": bos, "eos_token": eos, "pad_token": pad, "unk_token": specials[0]}
    if mask:
        kwargs["mask_token"] = mask
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=128, **kwargs)
    fast.save_pretrained(out)
    return fast


def _unigram_tokenizer(out: Path):
    """XLM-R-like: a sentencepiece-style unigram model with <s> </s> <pad> <unk> <mask>."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    # Built, not trained, for the reason given in _wordpiece_tokenizer (the unigram trainer varied per process too):
    # every corpus word is one piece; other words fall back to characters, which score lower.
    normalizer, pre_tokenizer = normalizers.NFKC(), pre_tokenizers.Metaspace()
    words = sorted(
        {word for text in tiny_corpus() for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))}
    )
    chars = sorted({char for word in words for char in word})
    vocab = (
        [(piece, 0.0) for piece in specials]
        + [(char, -5.0) for char in chars]
        + [(word, -1.0) for word in words if word not in chars]
    )
    tok = Tokenizer(models.Unigram(vocab, unk_id=specials.index("<unk>"), byte_fallback=False))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer
    tok.decoder = decoders.Metaspace()
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        model_max_length=128,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
    )
    fast.save_pretrained(out)
    return fast


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def build_bert(out: Path, kind: str = "encoder", id2label: dict[int, str] | None = None, seed: int = 0) -> Path:
    """BERT-like model: ``encoder`` (AutoModel), ``masked_lm`` or ``nli`` (3-label classifier)."""
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel

    out = Path(out)
    tok = _wordpiece_tokenizer(out)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=tok.pad_token_id,
    )
    _seed(seed)
    if kind == "encoder":
        model = BertModel(config)
    elif kind == "masked_lm":
        model = BertForMaskedLM(config)
    elif kind == "nli":
        labels = id2label or {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
        config.num_labels = len(labels)
        config.id2label = labels
        config.label2id = {v: k for k, v in labels.items()}
        model = BertForSequenceClassification(config)
    else:
        raise ValueError(kind)
    model.save_pretrained(out)
    return out


def build_xlmr_masked_lm(out: Path, seed: int = 0) -> Path:
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    out = Path(out)
    tok = _unigram_tokenizer(out)
    config = XLMRobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    _seed(seed)
    XLMRobertaForMaskedLM(config).save_pretrained(out)
    return out


def build_bart(out: Path, seed: int = 0) -> Path:
    """BART-like seq2seq with a ``<mask>`` token for span infilling."""
    from transformers import BartConfig, BartForConditionalGeneration

    out = Path(out)
    tok = _byte_bpe_tokenizer(out, ["<unk>", "<s>", "</s>", "<pad>", "<mask>"], "<s>", "</s>", "<pad>", "<mask>")
    config = BartConfig(
        vocab_size=len(tok),
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=130,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.eos_token_id,
        forced_eos_token_id=tok.eos_token_id,
    )
    _seed(seed)
    BartForConditionalGeneration(config).save_pretrained(out)
    return out


def build_causal_lm(out: Path, arch: str = "gpt2", seed: int = 0) -> Path:
    """GPT-2-like or Llama-like causal LM with a byte-level BPE tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    out = Path(out)
    tok = _byte_bpe_tokenizer(out, ["<unk>", "<|endoftext|>", "<pad>"], "<|endoftext|>", "<|endoftext|>", "<pad>", None)
    _seed(seed)
    if arch == "gpt2":
        config = GPT2Config(
            vocab_size=len(tok),
            n_embd=32,
            n_layer=2,
            n_head=2,
            n_positions=256,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        GPT2LMHeadModel(config).save_pretrained(out)
    elif arch == "llama":
        config = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=256,
            tie_word_embeddings=True,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        LlamaForCausalLM(config).save_pretrained(out)
    else:
        raise ValueError(arch)
    return out


def build_gemma3_encoder(out: Path, seed: int = 0) -> Path:
    """EmbeddingGemma-like: a two-layer ``Gemma3TextModel`` (bidirectional, as EmbeddingGemma's config says) with a
    unigram tokenizer, saved the way the real folder is (config, safetensors, tokenizer)."""
    from transformers import Gemma3TextConfig, Gemma3TextModel

    out = Path(out)
    tok = _unigram_tokenizer(out)
    _seed(seed)
    config = Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=256,
        sliding_window=64,
        use_bidirectional_attention=True,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    Gemma3TextModel(config).save_pretrained(out)
    return out


def build_all(root: Path) -> dict[str, Path]:
    """Every tiny model under ``root``; names are what tests pass as role values."""
    root = Path(root)
    built = {
        "encoder": build_bert(root / "bert_encoder", "encoder"),
        "bert_mlm": build_bert(root / "bert_mlm", "masked_lm"),
        "nli": build_bert(root / "bert_nli", "nli"),
        "xlmr_mlm": build_xlmr_masked_lm(root / "xlmr_mlm"),
        "bart": build_bart(root / "bart"),
        "gpt2": build_causal_lm(root / "gpt2", "gpt2"),
        "llama": build_causal_lm(root / "llama", "llama"),
    }
    return built


__all__ = [
    "build_all",
    "build_bart",
    "build_bert",
    "build_causal_lm",
    "build_gemma3_encoder",
    "build_xlmr_masked_lm",
    "tiny_corpus",
]
