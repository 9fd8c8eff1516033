"""The toolkit's one on-disk cache format: an append-only JSON Lines file of keyed records.

Why: three kinds of work are kept on disk so that a killed or repeated run does not pay for them again - NLI
probabilities of (premise, hypothesis) pairs (``nlgmetrics.nli.cache``), metric scores of judged or perturbed rows
(``nlgmetrics.scorecache``) and MARS's augmented references (``mars.cache``). All three keep them in this one
format, under this one key scheme:

- the first line is a header ``{"format": ..., "kind": ..., "identity": {...}}``: what the values depend on (the
  NLI weights' hash, an augmentation config's hash). A file of another kind or identity is refused, never mixed in;
- every other line is one record ``{"k": key, "v": value}``; ``key`` is ``record_key(*parts)`` of the texts the
  value belongs to, so files stay small however long the texts are;
- records are appended, flushed and fsync'd after each batch; nothing written is ever rewritten. A last line cut
  off by a kill is dropped (and cut from the file, so the next append starts on a fresh line); any other unreadable
  line is an error naming the file and the line, since the file is then corrupt rather than interrupted.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

FORMAT = "nlgmetrics-cache/1"


def record_key(*parts: Any) -> str:
    """The key of one record: the SHA-1 of the JSON list of ``parts`` (texts, lists of texts, numbers, None).

    Args:
        parts: what the value belongs to, e.g. (hypothesis, references, source) or (premise, hypothesis).

    Returns:
        A 40-character hex digest.
    """
    return hashlib.sha1(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" or noun.startswith(("NLI", "MARS")) else "a"


class CacheFile:
    """One append-only record file of one ``kind`` of value and one ``identity``.

    Args:
        path: the file; created with its header on the first ``read``.
        kind: what the values are (``"nli-pairs"``, ``"scores"``, ...); a file of another kind is refused.
        identity: what the values depend on; a file made under another identity is refused.
        label: what the file is, in error messages (``"NLI pair cache"``).
        owner: what the identity describes, in error messages (``"NLI model"``).
    """

    def __init__(
        self,
        path: str | Path,
        kind: str,
        identity: Mapping[str, Any] | None = None,
        label: str | None = None,
        owner: str = "setting",
    ) -> None:
        self.path = Path(path)
        self.kind = kind
        self.identity = dict(identity or {})
        self.label = label or f"{kind} cache"
        self.owner = owner

    def _header(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": self.kind, "identity": self.identity}

    def read(self) -> dict[str, Any]:
        """Every stored record as ``{key: value}`` (later records of a key win); a new file gets its header.

        Returns:
            The records.

        Raises:
            ValueError: the file is not a cache file of this kind and identity, or a line other than the last is
                unreadable.
        """
        path = self.path
        if not path.exists() or path.stat().st_size == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(self._header()) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            return {}
        raw = path.read_bytes()
        complete = raw.rfind(b"\n") + 1
        try:
            lines = raw[:complete].decode("utf-8").splitlines()
            header = json.loads(lines[0]) if lines else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("kind") != self.kind:
            raise ValueError(
                f"{path}: not {_article(self.label)} {self.label} (its first line is not a {FORMAT} header of "
                f"{self.kind!r} records); pass another path or move the file away"
            )
        if header.get("identity") != self.identity:
            raise ValueError(
                f"{path} was made with another {self.owner} ({header.get('identity')}), this one is "
                f"{self.identity}; pass another path or move the file away"
            )
        if complete < len(raw):  # cut off by a kill: checked above that this is our file before changing it
            with open(path, "r+b") as handle:
                handle.truncate(complete)
        records: dict[str, Any] = {}
        for number, line in enumerate(lines[1:], start=2):
            try:
                entry = json.loads(line)
                key, value = entry["k"], entry["v"]
                if not isinstance(key, str):
                    raise TypeError(key)
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise ValueError(
                    f"{path}, line {number}: not a {{k, v}} record ({line[:80]!r}); the file is corrupt: move it "
                    "away (what it held is then computed again)"
                ) from error
            records[key] = value
        return records

    def append(self, records: Mapping[str, Any]) -> None:
        """Append ``{key: value}`` records (JSON values) and make them durable before returning.

        Args:
            records: the new records; nothing happens for none.
        """
        if not records:
            return
        text = "".join(json.dumps({"k": k, "v": v}, ensure_ascii=False) + "\n" for k, v in records.items())
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())


__all__ = ["CacheFile", "FORMAT", "record_key"]
