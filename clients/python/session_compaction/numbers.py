"""The numbers the client takes, checked as the TypeScript client checks them
(src/client/numbers.ts): counts that must fit a Postgres ``integer`` and positive numbers
of seconds. Pure: refusals are InvalidInputError naming the field."""

from __future__ import annotations

import math

from .errors import InvalidInputError

#: The largest count Postgres' integer columns hold (token thresholds, context windows, counts).
MAX_TOKENS = 2_147_483_647
#: The data plane's bound on one message's token count (session_append refuses more).
MAX_MESSAGE_TOKENS = 10_000_000


def positive_seconds(value: object, field: str) -> float:
    """A positive, finite number of seconds (not a bool, not a string): InvalidInputError otherwise."""
    try:
        seconds = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:
        seconds = math.inf
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidInputError(field, "must be a positive number of seconds")
    return seconds
