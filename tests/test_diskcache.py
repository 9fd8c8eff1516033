"""The one on-disk cache format (nlgmetrics.diskcache) and the three caches written in it."""

import hashlib
import json

import pytest

from nlgmetrics.diskcache import FORMAT, CacheFile, record_key


def test_record_keys_hash_the_json_of_the_parts():
    assert record_key("a", ["b", "c"]) == hashlib.sha1(json.dumps(["a", ["b", "c"]]).encode()).hexdigest()
    assert record_key("a", "b") != record_key("b", "a") and record_key("a b") != record_key("a", "b")
    assert record_key("é") == hashlib.sha1('["é"]'.encode()).hexdigest()  # texts as they are, not escaped


def test_records_are_appended_and_read_back_with_their_header(tmp_path):
    path = tmp_path / "deep" / "c.jsonl"
    cache = CacheFile(path, "things", {"model": "abc"})
    assert cache.read() == {} and json.loads(path.read_text()) == {
        "format": FORMAT,
        "kind": "things",
        "identity": {"model": "abc"},
    }
    cache.append({"k1": [0.1, 0.2, 0.7], "k2": "text"})
    written = path.read_bytes()
    cache.append({})  # nothing: the file is untouched
    cache.append({"k1": [1.0, 0.0, 0.0]})  # a later record of a key wins
    assert path.read_bytes().startswith(written)  # appended, nothing rewritten
    assert CacheFile(path, "things", {"model": "abc"}).read() == {"k1": [1.0, 0.0, 0.0], "k2": "text"}


def test_a_cut_off_last_line_is_dropped_and_the_next_append_starts_clean(tmp_path):
    path = tmp_path / "c.jsonl"
    cache = CacheFile(path, "things")
    cache.read()
    cache.append({"a": 1})
    whole = path.read_text()
    path.write_text(whole + '{"k": "b", "v"')  # killed in the middle of an append
    again = CacheFile(path, "things")
    assert again.read() == {"a": 1} and path.read_text() == whole
    again.append({"b": 2})
    assert CacheFile(path, "things").read() == {"a": 1, "b": 2}


def test_other_kinds_identities_and_corrupt_lines_are_refused_before_anything_changes(tmp_path):
    path = tmp_path / "c.jsonl"
    CacheFile(path, "things", {"model": "abc"}).read()
    with pytest.raises(ValueError, match="not a score store"):
        CacheFile(path, "scores", {"model": "abc"}, label="score store").read()
    with pytest.raises(ValueError, match=r"made with another NLI model \(\{'model': 'abc'\}\)"):
        CacheFile(path, "things", {"model": "xyz"}, owner="NLI model").read()
    header = path.read_text()
    path.write_text(header + "not json\n" + '{"k": "a", "v": 1}\n')
    with pytest.raises(ValueError, match="c.jsonl, line 2: not a .k, v. record"):
        CacheFile(path, "things", {"model": "abc"}).read()
    for other in ('{"rows": []}\n', "[1, 2]", '{"k": "a", "v": 1}\n'):  # the second has no newline at all
        path.write_text(other)
        with pytest.raises(ValueError, match="not an? things cache"):
            CacheFile(path, "things", {"model": "abc"}).read()
        assert path.read_text() == other  # refused before anything was cut


def test_the_three_caches_share_the_format_and_the_key_scheme(tmp_path):
    from mars.cache import AugmentationCache, entry_key
    from nlgmetrics.nli.cache import pair_file, pair_key
    from nlgmetrics.scorecache import ScoreCache, row_key

    assert pair_key("p", "h") == record_key("p", "h") and row_key("h", ["r"]) == record_key("h", ["r"])
    assert entry_key("ref", "ctx", 0.1000000001) == record_key("ref", "ctx", 0.1)
    AugmentationCache(tmp_path, "ns").put([("ref", "ctx", 0.1, "aug")])
    ScoreCache(tmp_path / "s.jsonl").store("sig", {row_key("h", ["r"]): 0.5})
    kinds = {json.loads(p.read_text().splitlines()[0])["kind"] for p in tmp_path.glob("*.jsonl")}
    assert kinds == {"mars-augmentations", "scores"} and pair_file(tmp_path, "f" * 64).name == "f" * 16 + ".pairs.jsonl"
