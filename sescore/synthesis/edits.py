"""Apply one planned edit to a token list: pure, so the budget bookkeeping and the text never disagree.

Spacing rule for new or moved material: a word is written with a space before it, closing punctuation is
attached to what precedes it; untouched tokens keep their own spacing except the one right after new material.
"""

from __future__ import annotations

from sescore.synthesis.tokens import Token, is_closing_punctuation


def _spaced(token: Token) -> Token:
    return Token(token.text, not is_closing_punctuation(token.text))


def _respace(tokens: list[Token], index: int) -> list[Token]:
    """The token at ``index`` follows different material now: give it a space unless it is closing punctuation."""
    if 0 < index < len(tokens):
        token = tokens[index]
        tokens[index] = Token(token.text, token.space_before or not is_closing_punctuation(token.text))
    return tokens


def apply_edit(
    tokens: list[Token], operation: str, start: int, length: int, fill: list[Token] | None = None
) -> list[Token]:
    """Tokens after ``operation``; ``fill`` holds the new tokens of an insert/replace (from a filler)."""
    fill = list(fill or [])
    if operation in ("insert", "replace", "delete"):
        end = start + (length if operation in ("replace", "delete") else 0)
        if operation == "delete":
            fill = []
        elif fill:
            fill[0] = _spaced(fill[0])
        return _respace(tokens[:start] + fill + tokens[end:], start + len(fill))
    if operation == "swap":
        out = list(tokens)
        out[start], out[start + length] = _spaced(tokens[start + length]), _spaced(tokens[start])
        out = _respace(out, start + 1)
        return _respace(out, start + length + 1)
    raise ValueError(f"unknown operation '{operation}'")


__all__ = ["apply_edit"]
