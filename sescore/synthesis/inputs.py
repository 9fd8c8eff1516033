"""Read the one-sentence-per-line input and decide, with counts, what happens to awkward lines.

- empty or whitespace-only lines: skipped and counted;
- bytes that are not UTF-8: ``error`` (default) raises naming the line and byte offset; ``skip`` drops the
  line and counts it;
- lines longer than a filler's ``max_tokens`` (in that model's own tokens): ``truncate`` (default, like the
  original's tokenizer truncation) cuts at the last whole word that fits; ``skip`` drops the line; both counted;
- an empty file, or one with no usable line: a clear error.
A sentence keeps its 0-based line number as its index, so limits and shards never renumber anything.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

from nlgmetrics.inputs import InputError, input_lines, read_input_bytes
from sescore.synthesis.pipeline import Sentence
from sescore.synthesis.tokens import join_tokens, normalize_whitespace, split_tokens


@dataclass
class InputReport:
    lines: int = 0
    empty_skipped: int = 0
    bad_utf8_skipped: int = 0
    long_truncated: int = 0
    long_skipped: int = 0
    used: int = 0
    sha256: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def read_sentences(path: str | Path, bad_utf8: str = "error") -> tuple[list[Sentence], InputReport]:
    """Non-empty, whitespace-normalised lines with their line numbers."""
    path = Path(path)
    if bad_utf8 not in ("error", "skip"):
        raise ValueError(f"bad_utf8 must be error or skip, got '{bad_utf8}'")
    data = read_input_bytes(path, "input", "give a text file with one sentence per line")
    report = InputReport(sha256=hashlib.sha256(data).hexdigest())
    sentences = []
    raw_lines = input_lines(data)
    for number, raw in enumerate(raw_lines):
        report.lines += 1
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if bad_utf8 == "error":
                raise InputError(
                    f"{path}:{number + 1}: not valid UTF-8 (byte 0x{raw[error.start]:02x} at column "
                    f"{error.start + 1}); "
                    "re-encode the file or set bad_utf8: skip"
                ) from None
            report.bad_utf8_skipped += 1
            continue
        text = normalize_whitespace(line)
        if not text:
            report.empty_skipped += 1
            continue
        sentences.append(Sentence(number, text))
    if not sentences:
        raise InputError(f"input file {path} has no usable lines ({report.as_dict()})")
    report.used = len(sentences)
    return sentences, report


def line_range(spec: str) -> tuple[str, tuple[int, int] | None]:
    """Split ``FILE:START-END`` (1-based, inclusive line numbers) into the file and its range.

    Why: a corpus that concatenates sources (``de_sentences.txt`` lists its sources by line) is used one source
    at a time, e.g. to leave out the parts whose licence a user cannot accept.

    Args:
        spec: an ``--input`` value; without a ``:START-END`` suffix the whole file is meant.

    Returns:
        The rest of the spec and ``(START, END)``, or ``None`` for no range.
    """
    head, sep, tail = spec.rpartition(":")
    first, dash, last = tail.partition("-")
    if not sep or not dash or not first.isdigit() or not last.isdigit():
        return spec, None
    if int(first) < 1 or int(last) < int(first):
        raise InputError(f"{spec}: a line range is START-END with 1 <= START <= END, got {tail}")
    return head, (int(first), int(last))


def judged_references(path: str | Path) -> list[str]:
    """Every reference text of a judged JSONL file (``refs``, the schema of ../shared/data), in file order, each
    once: summaries or translations people wrote, to synthesise errors on in-domain text."""
    from nlgmetrics.metaeval import read_jsonl

    rows = read_jsonl(path, "judged file")  # a missing or broken file is metaeval's one-line InputError
    seen: dict[str, None] = {}
    for number, row in enumerate(rows, 1):
        refs = row.get("refs")
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise InputError(f"{path}: row {number} has no 'refs' list of strings (the judged-data schema)")
        seen.update((r, None) for r in refs if r.strip())
    if not seen:
        raise InputError(f"{path}: no non-empty reference")
    return list(seen)


def longest_prefix_within(text: str, count_tokens: Callable[[Sequence[str]], list[int]], max_tokens: int) -> str:
    """The longest whole-token prefix of ``text`` whose model token count is <= ``max_tokens`` (binary search)."""
    tokens = split_tokens(text)[: max_tokens + 1]  # every word costs at least one model token
    low, high = 0, len(tokens)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens([join_tokens(tokens[:middle])])[0] <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return join_tokens(tokens[:low])


def cap_lengths(
    sentences: list[Sentence],
    caps: Sequence[tuple[Callable[[Sequence[str]], list[int]], int]],
    policy: str,
    report: InputReport,
) -> list[Sentence]:
    """Apply every (token counter, max tokens) cap: truncate or skip over-long sentences, counting both."""
    if policy not in ("truncate", "skip"):
        raise ValueError(f"long_lines must be truncate or skip, got '{policy}'")
    out = []
    for sentence in sentences:
        text = sentence.text
        too_long = False
        for count_tokens, max_tokens in caps:
            if text and count_tokens([text])[0] > max_tokens:
                too_long = True
                if policy == "truncate":
                    text = longest_prefix_within(text, count_tokens, max_tokens)
        if too_long and (policy == "skip" or not text):
            report.long_skipped += 1
            continue
        report.long_truncated += int(too_long)
        out.append(Sentence(sentence.index, text))
    if not out:
        raise InputError(f"no sentence fits the models' length caps ({report.as_dict()})")
    report.used = len(out)
    return out


def mix_domains(
    sources: Sequence[Sequence[str]],
    take: int | None = None,
    min_words: int = 4,
    split: Callable[[Sequence[str]], list[list[str]]] | None = None,
) -> list[str]:
    """One synthesis input from several domains: sentences interleaved round-robin across sources.

    Each source's lines are whitespace-normalised, optionally split into sentences (``split`` maps a batch of
    paragraphs to their sentences, e.g. spaCy's parser), deduplicated (first occurrence wins, also across
    sources) and kept when they have at least ``min_words`` word tokens; the first ``take`` of each source are
    used. Interleaving means any prefix of the result, e.g. what ``--limit N`` reads, is a domain mix too.
    """
    if min_words < 1:
        raise ValueError(f"min_words must be >= 1, got {min_words}")
    seen: set[str] = set()
    kept: list[list[str]] = []
    for lines in sources:
        texts = [normalize_whitespace(line) for line in lines]
        texts = [t for t in texts if t]
        pieces = [normalize_whitespace(x) for group in split(texts) for x in group] if split else texts
        mine = []
        for text in pieces:
            if text in seen or sum(any(c.isalnum() for c in t.text) for t in split_tokens(text)) < min_words:
                continue
            seen.add(text)
            mine.append(text)
            if take is not None and len(mine) >= take:
                break
        kept.append(mine)
    return [source[i] for i in range(max(map(len, kept), default=0)) for source in kept if i < len(source)]


__all__ = ["InputError", "InputReport", "cap_lengths", "longest_prefix_within", "mix_domains", "read_sentences"]
