"""The text rule of src/compaction/text.ts, in Python: every string a caller controls
(message values and keys, ids, focus topic, source, model, append keys) holds no NUL
(U+0000) and is well-formed Unicode (no surrogate code point: a Python ``str`` holding one
cannot be encoded as UTF-8). Postgres text and jsonb can hold neither, and psycopg would
fail with a raw encoding error, so the client checks before anything is sent. Sizes are
measured in Unicode code points (Python's ``len()``), as in every client.

Messages must also be JSON: dicts with string keys, lists (or tuples), strings, finite
numbers, booleans and ``None``. NaN and Infinity have no JSON form and are refused too.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidInputError

_SURROGATE = re.compile("[\ud800-\udfff]")


def text_rule_violation(value: str) -> str | None:
    """Why a string breaks the text rule, or None when it is fine (textRuleViolation)."""
    if "\x00" in value:
        return "contains a NUL character (U+0000)"
    if _SURROGATE.search(value):
        return "contains an unpaired surrogate (not well-formed Unicode)"
    return None


def check_text(value: str, field: str) -> str:
    """Checks one string against the text rule; raises InvalidInputError naming the field."""
    violation = text_rule_violation(value)
    if violation:
        raise InvalidInputError(field, violation)
    return value


def json_key(key: str) -> str:
    """A key as JavaScript's JSON.stringify writes it (non-ASCII kept, lone surrogates
    escaped), for naming a bad key in a field path: ``messages[0]["bad\\u0000key"]``."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(key, ensure_ascii=False))


_INDEX_KEY = re.compile(r"(0|[1-9][0-9]*)")


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """JavaScript's property order (what JSON.parse gives the TypeScript client): array-index
    keys ascending first, then the rest as inserted, so both clients name the same first
    violation and count texts in the same order."""
    index = sorted((k for k in obj if _INDEX_KEY.fullmatch(k) and int(k) < 2**32 - 1), key=int)
    if not index:
        return list(obj)
    taken = set(index)
    return index + [k for k in obj if k not in taken]


def _path(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def find_json_violation(value: Any, root: str) -> tuple[str, str] | None:
    """The first string (value or key) inside a JSON value that breaks the text rule, or the
    first value JSON cannot hold (NaN, Infinity, a non-string key, an object of another type),
    as (field path, detail), or None. Paths are the TypeScript client's: ``messages[2].content[0].text``,
    and ``messages[0]["bad key"]`` for a key (findTextRuleViolation)."""
    parts: list[str | int] = []

    def walk(v: Any) -> tuple[str, str] | None:
        if isinstance(v, str):
            violation = text_rule_violation(v)
            return (root + _path(parts), violation) if violation else None
        if v is None or isinstance(v, bool):
            return None
        if isinstance(v, int):
            # Python refuses to write integers of more than 4300 digits as text (sys.set_int_max_str_digits).
            return None if v.bit_length() <= 14_000 else (root + _path(parts), "is a number too large to send as JSON (more than 4000 digits)")
        if isinstance(v, float):
            return None if math.isfinite(v) else (root + _path(parts), "must be a finite number (JSON has no NaN or Infinity)")
        if isinstance(v, dict):
            for key in v:
                if not isinstance(key, str):
                    return (f"{root}{_path(parts)}[{key!r}]", "has a key that is not a string")
            for key in js_key_order(v):
                inner = v[key]
                violation = text_rule_violation(key)
                if violation:
                    return (f"{root}{_path(parts)}[{json_key(key)}]", f"has a key that {violation}")
                parts.append(key)
                found = walk(inner)
                parts.pop()
                if found:
                    return found
            return None
        if isinstance(v, (list, tuple)):
            for i, inner in enumerate(v):
                parts.append(i)
                found = walk(inner)
                parts.pop()
                if found:
                    return found
            return None
        return (root + _path(parts), f"is not a JSON value (a {type(v).__name__})")

    try:
        return walk(value)
    except RecursionError:
        return (root, f"is nested too deeply (more than about {sys.getrecursionlimit()} levels)")


def check_json(value: Any, field: str) -> Any:
    """Raises InvalidInputError for the first violation find_json_violation finds."""
    found = find_json_violation(value, field)
    if found:
        raise InvalidInputError(*found)
    return value


def check_messages(messages: Any) -> Sequence[Any]:
    """The batch as an array, every message's strings and keys under the text rule and every
    value JSON (the structure is session_append's to check, in the lineage's dialect)."""
    if not isinstance(messages, (list, tuple)):
        raise InvalidInputError("messages", "must be an array of messages")
    if len(messages) == 0:
        raise InvalidInputError("messages", "must hold at least one message")
    for i, m in enumerate(messages):
        check_json(m, f"messages[{i}]")
    return messages


# The text that gives a summary message its structure (src/compaction/summary-structure.ts):
# the summary marker, the ledger's heading, its closing line anywhere, and a section heading
# where it opens a line. Only the service writes them: a focus topic holding one is refused.
_GAP = r"[\s\u00AD\u180E\u200B-\u200F\u2060-\u2064\uFEFF]"


def _phrase(text: str) -> str:
    return (_GAP + "+").join(re.escape(word) for word in text.split())


_SECTION_STEMS = (
    "User requests, oldest first",
    "Files (last action)",
    "Commands (last outcome)",
    "Errors not yet resolved",
    "Plan, latest, verbatim",
    "Background work still running",
    "User turns not yet answered",
    "Standing instructions, verbatim",
    "Identifiers the user named",
    "Folded into counts to fit",
)
_RESERVED = (
    ("the summary marker", re.compile(_phrase("[CONTEXT SUMMARY: reference only, written by session-compaction]"), re.IGNORECASE)),
    ("the ledger heading", re.compile(_phrase("Ledger (kept by session-compaction"), re.IGNORECASE)),
    ("the ledger's closing line", re.compile(_phrase("(end of ledger)"), re.IGNORECASE)),
    *(
        (f'the ledger heading "{stem}"', re.compile(r"(?:^|(?<=[\n\r\v\f\u0085\u2028\u2029]))(?:" + _GAP + r"|[#*_>-])*" + _phrase(stem), re.IGNORECASE))
        for stem in _SECTION_STEMS
    ),
)


def reserved_text_in(value: str) -> str | None:
    """What of a summary's structure a text holds, or None (reservedTextIn)."""
    for what, pattern in _RESERVED:
        if pattern.search(value):
            return what
    return None
