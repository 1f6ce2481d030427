"""The checks of what a caller sends, as src/workflows/contract.ts makes them (checkSessionId,
checkCompactRequest, the names' text rule): run before anything is sent. Pure: refusals are
InvalidInputError (or BackgroundCompactionRejectedError) naming the field. The contract
vectors (contract/vectors) keep the two clients in step."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from .errors import BackgroundCompactionRejectedError, InvalidInputError
from .text import check_text, reserved_text_in

COMPACTION_MODES = ("rotate", "in_place")
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_DERIVED_SUFFIX = re.compile(r"--g\d+$")
_REQUEST_FIELDS = {"requestId", "sessionId", "focusTopic", "force", "background", "trigger"}

CompactionMode = Literal["rotate", "in_place"]


def check_session_id(value: object, field: str = "sessionId") -> str:
    """Mirrors checkSessionId of src/workflows/contract.ts."""
    if not isinstance(value, str) or value == "":
        raise InvalidInputError(field, "must be a non-empty string")
    if len(_DERIVED_SUFFIX.sub("", value)) > 128:
        raise InvalidInputError(field, "must be at most 128 characters")
    if not _SESSION_ID.fullmatch(value):
        raise InvalidInputError(field, "may contain only letters, digits and . _ : - and must start with a letter or digit")
    return value


def check_compact_request(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Mirrors checkCompactRequest of src/workflows/contract.ts (the Update validator runs the
    same rules; the contract vectors keep the two in step). Needed before a signal, which
    the workflow cannot refuse, only drop."""
    for key in raw:
        if key not in _REQUEST_FIELDS:
            raise InvalidInputError(key, "is not a known field")
    session_id = check_session_id(raw.get("sessionId"))
    request_id = raw.get("requestId")
    if request_id is not None and (not isinstance(request_id, str) or not 1 <= len(request_id) <= 200):
        raise InvalidInputError("requestId", "must be a string of 1 to 200 characters")
    focus = raw.get("focusTopic")
    if focus is not None and (not isinstance(focus, str) or len(focus) > 1000):
        raise InvalidInputError("focusTopic", "must be a string of at most 1000 characters")
    for flag in ("force", "background"):
        if raw.get(flag) is not None and not isinstance(raw.get(flag), bool):
            raise InvalidInputError(flag, "must be a boolean")
    trigger = raw.get("trigger")
    if trigger is not None and trigger not in ("update", "signal", "threshold"):
        raise InvalidInputError("trigger", "must be one of update, signal, threshold")
    if raw.get("background") is True:
        raise BackgroundCompactionRejectedError()
    # The text rule (checkRequestText): a NUL or a lone surrogate can be stored nowhere.
    if request_id is not None:
        check_text(request_id, "requestId")
    if focus is not None:
        check_text(focus, "focusTopic")
        reserved = reserved_text_in(focus)
        if reserved:
            raise InvalidInputError("focusTopic", f"may not contain {reserved}: only the service writes a summary's structure")
    return {k: v for k, v in raw.items() if v is not None and k != "background"} | {"sessionId": session_id}


def check_name(value: object, field: str, most: int) -> None:
    """A caller's string of 1 to ``most`` code points under the text rule (source, model, append key)."""
    if value is None:
        return
    if not isinstance(value, str) or not 1 <= len(value) <= most:
        raise InvalidInputError(field, f"must be a string of 1 to {most} characters")
    check_text(value, field)
