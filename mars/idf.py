"""Inverse document frequency for MARS mask priorities, fitted on a corpus the user chooses.

Mask priority is alpha(POS) / idf: frequent words are masked first. The shipped default table is fitted on
WikiText-103 paragraphs (CC BY-SA 3.0, see ``mars/data/README.md``); research-only corpora must not be shipped,
so users who want in-domain idf fit their own with ``python -m mars.idf --corpus FILE --out FILE``.
Tables store document frequencies (integers), not idf values, so the smoothing stays a config choice.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

DEFAULT_IDF_PATH = Path(__file__).parent / "data" / "idf_wikitext103.json"


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies of (lowercased) words over ``n_documents`` documents."""

    n_documents: int
    document_frequency: Mapping[str, int]
    source: str = ""

    def idf(self, word: str, smoothing: float = 1.0) -> float:
        """-log((df + s) / (M + s)) (paper's idf for s = 0); unseen words get df = 0."""
        df = self.document_frequency.get(word, 0)
        if df == 0 and smoothing == 0:
            return math.inf
        return -math.log((df + smoothing) / (self.n_documents + smoothing))

    def digest(self) -> str:
        """Content hash, so signatures and caches change when the table does."""
        payload = json.dumps([self.n_documents, sorted(self.document_frequency.items())], separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def fit_idf(
    documents: Iterable[str],
    tokenize: Callable[[str], list[str]],
    lowercase: bool = True,
    top: int | None = None,
    source: str = "",
) -> IdfTable:
    """Count in how many documents each word occurs; keep the ``top`` most frequent words (None = all)."""
    counts: Counter[str] = Counter()
    n = 0
    for document in documents:
        if not isinstance(document, str):
            raise ValueError(f"document {n} is {type(document).__name__}, expected str")
        words = tokenize(document.lower() if lowercase else document)
        counts.update(set(w for w in words if w.strip()))
        n += 1
    if n == 0:
        raise ValueError("cannot fit idf on an empty corpus")
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if top is not None:
        items = items[:top]
    return IdfTable(n, dict(items), source)


def save_idf(table: IdfTable, path: str | Path) -> None:
    data = {
        "n_documents": table.n_documents,
        "source": table.source,
        "document_frequency": dict(table.document_frequency),
    }
    Path(path).write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def load_idf(path: str | Path | None = None) -> IdfTable:
    """Load a table; ``None`` or ``"default"`` is the shipped WikiText-103 table."""
    path = DEFAULT_IDF_PATH if path in (None, "default") else Path(path).expanduser()
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"idf table not found: {path}; fit one with `python -m mars.idf --corpus FILE --out FILE`"
        )
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        return IdfTable(
            int(data["n_documents"]),
            {str(k): int(v) for k, v in data["document_frequency"].items()},
            str(data.get("source", "")),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path} is not an idf table (needs n_documents and document_frequency): {error}") from error


def main(argv: list[str] | None = None) -> None:
    """Fit a table on a text file with one document per line, tokenised like the references (spaCy)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--corpus", required=True, help="text file, one document per line")
    parser.add_argument("--out", required=True)
    parser.add_argument("--top", type=int, default=20000, help="keep the N most frequent words (0 = all)")
    parser.add_argument("--spacy", default="packaged:en_core_web_sm")
    parser.add_argument("--source", default="", help="provenance note stored in the table")
    args = parser.parse_args(argv)
    from nlgmetrics.modelroles import load_spacy

    nlp = load_spacy(args.spacy)
    lines = [line.strip() for line in Path(args.corpus).read_text(encoding="utf-8").splitlines() if line.strip()]
    table = fit_idf(
        lines,
        lambda text: [t.text for t in nlp.tokenizer(text)],
        top=args.top or None,
        source=args.source or Path(args.corpus).name,
    )
    save_idf(table, args.out)
    print(
        json.dumps({"documents": table.n_documents, "words": len(table.document_frequency), "digest": table.digest()})
    )


if __name__ == "__main__":
    main()
