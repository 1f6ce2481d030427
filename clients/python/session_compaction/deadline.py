"""The bounds of the client's waits (src/client/deadline.ts): a call's deadline, and telling
a cancelled task apart from a failure to resend."""

from __future__ import annotations

import asyncio
import time

from .errors import CallTimeoutError


class CallDeadline:
    """A call's deadline, ``limit`` seconds from now: the TypeScript client's ``deadlineOf``."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.at = time.monotonic() + limit

    def left(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0

    def timed_out(self, request_id: str) -> CallTimeoutError:
        return CallTimeoutError(request_id, f"the deadline ({self.limit:g} s) passed before the answer came")


def reraise_cancellation() -> None:
    """Raises CancelledError when the running task is being cancelled: the SDK reports a
    cancelled Update as an error, which must not be taken for a failure to resend."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError
