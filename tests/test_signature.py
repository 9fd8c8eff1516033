"""nlgmetrics.signature: every metric's signature is written by one type, byte for byte as before."""

from __future__ import annotations

from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.signature import Signature, signature_fields


def test_parts_precision_and_version_in_the_established_order():
    v = toolkit_version()
    parts = (("encoder", "packaged:mpnet@abc"), ("layer", None), ("idf", "no"))
    assert str(Signature("bertscore", parts)) == f"bertscore|encoder:packaged:mpnet@abc|layer:None|idf:no|version:{v}"
    assert str(Signature("bertscore", parts, precision="float32")).endswith(f"|idf:no|version:{v}")
    assert str(Signature("bertscore", parts, precision="bfloat16")).endswith(f"|idf:no|precision:bfloat16|version:{v}")
    nested = Signature("chrf", ("nrefs:var|case:mixed|version:2.6.0",), version_key="nlgmetrics")
    assert str(nested) == f"chrf|nrefs:var|case:mixed|version:2.6.0|nlgmetrics:{v}"
    assert str(Signature("combo", ("a=[x]",), version_key=None)) == "combo|a=[x]"


def test_fields_read_back_what_was_written():
    text = str(Signature("menli", (("nli", "packaged:nli-mpnet@0a98"), ("formula", "e"), ("lang", "de"))))
    assert signature_fields(text, drop=["version"]) == {"nli": "packaged:nli-mpnet@0a98", "formula": "e", "lang": "de"}
    assert signature_fields("m|k:a:b|bare")["k"] == "a:b"


def test_the_metrics_signatures_keep_their_recorded_form(tiny):
    """The shapes score caches and stored ranges are keyed by (tests/test_regression_scores.py holds the values)."""
    from nlgmetrics import load_metric

    v = toolkit_version()
    bert = load_metric("bertscore", encoder=str(tiny["encoder"])).signature()
    assert bert.startswith(f"bertscore|encoder:{tiny['encoder']}@") and bert.endswith(f"|layer:None|idf:no|version:{v}")
    menli = load_metric("menli", nli_model=str(tiny["nli"])).signature()
    assert "|formula:e|direction:<->|anchor:ref|refs:max|granularity:" in menli
    assert menli.endswith(f"|lang:auto|version:{v}")
    chrf = load_metric("chrf").signature()
    assert chrf.startswith("chrf|nrefs:var|") and chrf.endswith(f"|nlgmetrics:{v}")
