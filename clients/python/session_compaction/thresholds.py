"""A lineage's auto-compaction threshold and context window as create_session takes them
(src/client/thresholds.ts): tokens only here (the TypeScript client also takes a percentage
of a known model's window). Pure."""

from __future__ import annotations

from .errors import InvalidInputError
from .numbers import MAX_TOKENS


def check_count(value: object, field: str) -> None:
    """A positive whole number an integer column can hold (compactAtTokens, contextWindow)."""
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInputError(field, "must be a positive whole number")
    if value > MAX_TOKENS:
        raise InvalidInputError(field, f"must be a whole number from 1 to {MAX_TOKENS}")
