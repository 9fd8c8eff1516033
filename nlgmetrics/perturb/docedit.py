"""Edit a text through its spaCy parse: replace or delete tokens, move whole sentences.

Working on token and sentence offsets keeps everything the edit does not touch (spacing, line breaks,
punctuation) byte-identical, so the noise ratio measures the intended edit only.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nlgmetrics.perturb.errors import NotApplicable


def require_doc(text: str, doc: Any) -> Any:
    """The parse must be of this very text: a stale Doc would silently edit the wrong offsets."""
    if doc is None:
        raise ValueError("this perturbation needs context 'doc' (the spaCy parse of the text)")
    if doc.text != text:
        raise ValueError("context 'doc' is the parse of a different text")
    return doc


def edit_tokens(doc: Any, edits: Mapping[int, str]) -> str:
    """The doc's text with token ``i`` replaced by ``edits[i]``; an empty string deletes the token.

    A deleted token takes its own trailing space with it; when it was glued to following punctuation
    ("of the, and") the space before it goes too, giving "of, and".
    """
    out: list[list[Any]] = []  # [text, trailing space, original token]
    for tok in doc:
        new = edits.get(tok.i)
        if new is None:
            out.append([tok.text, tok.whitespace_, tok])
        elif new == "":
            if not out:
                continue
            if not tok.whitespace_ and out[-1][1]:
                following = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
                if following is None or following.is_punct:
                    out[-1][1] = ""
            elif tok.whitespace_ and not out[-1][1] and not out[-1][2].is_left_punct:
                out[-1][1] = tok.whitespace_  # "300%" -> the space after "%" now follows "300"
        else:
            out.append([new, tok.whitespace_, tok])
    return "".join(text + space for text, space, _ in out)


def sentence_spans(doc: Any) -> list[tuple[int, int]]:
    """Character spans of the doc's sentences, without surrounding whitespace; blank sentences are skipped."""
    spans = []
    for sent in doc.sents:
        text = sent.text
        stripped = text.strip()
        if not stripped:
            continue
        start = sent.start_char + (len(text) - len(text.lstrip()))
        spans.append((start, start + len(stripped)))
    return spans


def replace_spans(text: str, spans: Sequence[tuple[int, int]], new: Sequence[str]) -> str:
    """Put ``new[k]`` in place of ``text[spans[k]]``; the text between spans stays where it was."""
    pieces, cursor = [], 0
    for (start, end), piece in zip(spans, new):
        pieces.append(text[cursor:start])
        pieces.append(piece)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def sentences_of(text: str, doc: Any) -> tuple[list[tuple[int, int]], list[str]]:
    """Spans and texts of the sentences, with a clear refusal for texts without any."""
    spans = sentence_spans(require_doc(text, doc))
    if not spans:
        raise NotApplicable("text has no sentence")
    return spans, [text[s:e] for s, e in spans]
