"""A drop-in ``Session`` for the OpenAI Agents SDK (``openai-agents``): the SDK's Runner keeps
its conversation in a session-compaction lineage, so a long conversation is compacted by the
service (at its threshold, on append) without forks, whatever number of runners share it.

```python
from agents import Agent, Runner
from session_compaction import connect
from session_compaction.agents import CompactingSession

client = await connect()
session = await CompactingSession.open(client, "chat-42", compact_at_tokens=50_000, model="gpt-4o")
result = await Runner.run(agent, "Fix the parser.", session=session)
```

``CompactingSession`` satisfies the SDK's ``Session`` protocol (``session_id``,
``session_settings``, ``get_items``, ``add_items``, ``pop_item``, ``clear_session``) and its
``OpenAIResponsesCompactionAwareSession`` protocol (``run_compaction``) structurally. Its
``session_settings`` are the SDK's ``SessionSettings``, coerced as the SDK's own sessions
coerce them (an unknown key is a ``TypeError``), an empty ``SessionSettings()`` by default;
without the SDK installed (the ``agents`` extra) the client works and the settings stay None.

``get_items`` returns the items exactly as stored (ids included), as the SDK's own sessions
do. After a compaction a model turn can have lost its reasoning item (summarised away), and
the Responses API refuses the ids of such a turn (RS-4): pass
``RunConfig(call_model_input_filter=call_model_input_filter)`` and those ids are dropped from
what the model is sent, where the SDK prepares each model call's input.

The SDK's items (``TResponseInputItem``) are Responses API input items as dicts, so a lineage
is ``openai-responses`` by default; ``openai-agents`` (the SDK dialect, which also reads the
TypeScript SDK's spelling) works the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .dialects import SUMMARY_PREFIX, _rs_is_message, _rs_kind, _rs_text, for_provider
from .errors import InvalidInputError, SessionNotFoundError

if TYPE_CHECKING:
    from .client import CompactionMode, SessionsClient
    from .dialects import DialectName

__all__ = ["CompactingSession", "call_model_input_filter"]

_T = TypeVar("_T")


async def _settle(awaitable: Awaitable[_T]) -> _T:
    """Waits for a write's outcome even when the caller is cancelled meanwhile (as the SDK's
    own sessions do), then re-raises the cancellation: a cancelled run never leaves the caller
    unsure whether its items were stored."""
    task = asyncio.ensure_future(awaitable)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            cancelled = cancelled or error
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller gets
        raise cancelled
    return task.result()


def _as_item(item: Any, index: int) -> Mapping[str, Any]:
    """An item as the JSON object to store: a dict as it is; a pydantic model (the SDK's and
    openai's item types) dumped the way the SDK itself turns one into input
    (``model_dump(exclude_unset=True)``, JSON mode so every value is JSON)."""
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump(exclude_unset=True, mode="json", warnings=False)
        except TypeError:
            dumped = dump(exclude_unset=True)
        if isinstance(dumped, Mapping):
            return dumped
    raise InvalidInputError(f"items[{index}]", "must be a JSON object (a dict or a pydantic model)")


def _coerce_settings(settings: Any) -> Any:
    """The SDK's own coercion (``coerce_session_settings``, as its SQLiteSession does): a dict
    with an unknown key is a ``TypeError`` ("Unknown session settings: limitt"), None is an
    empty ``SessionSettings()``. Without the SDK installed, None stays None (a dict needs it)."""
    try:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings
    except ImportError:
        if settings is None:
            return None
        raise
    return SessionSettings() if settings is None else coerce_session_settings(settings)


def _cut_from_reasoning(items: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The items with the provider ids of every model turn cut off from its reasoning item
    dropped (RS-4): a turn without reasoning (the provider view strips it) that follows the
    service's summary (its beginning, reasoning included, was summarised away) or starts the
    input (a session limit can leave its beginning out). A whole turn without reasoning is a
    non-reasoning model's: its ids go as stored."""
    ready = for_provider("openai-responses", items)
    out: list[Any] = list(items)
    for i, item in enumerate(items):
        if ready[i] is item or "id" in ready[i]:
            continue
        start = i
        while start > 0 and _rs_kind(items[start - 1]) in ("model", "other"):
            start -= 1
        before = items[start - 1] if start > 0 else None
        if before is None or (_rs_is_message(before) and _rs_text(before.get("content")).startswith(SUMMARY_PREFIX)):
            out[i] = ready[i]
    return out


def call_model_input_filter(data: Any) -> Any:
    """The SDK's ``RunConfig.call_model_input_filter`` for a run on a :class:`CompactingSession`:
    the model's input with the provider ids of every model turn cut off from its reasoning
    item dropped (after the service's summary, or at the start of a limited history: RS-4),
    so such a turn is still accepted. Every other item goes as it is, ids included.
    ``get_items`` itself returns the items as stored."""
    from agents.run_config import ModelInputData

    items = [_as_item(item, i) for i, item in enumerate(data.model_data.input)]
    return ModelInputData(input=_cut_from_reasoning(items), instructions=data.model_data.instructions)


class CompactingSession:
    """The OpenAI Agents SDK's ``Session`` over a session-compaction lineage. Open it with
    :meth:`open`. ``session_id`` is the lineage's root id: it stays the same across
    compactions (rotations make new head sessions; reads and appends by the root id reach the
    head). Any number of these objects, in any number of processes, may share one lineage."""

    #: The SDK's per-session settings (``SessionSettings``; ``limit`` bounds what the Runner
    #: reads); an empty ``SessionSettings()`` unless given (None without the SDK installed).
    session_settings: Any = None

    def __init__(self, client: SessionsClient, session_id: str, *, dialect: DialectName = "openai-responses", session_settings: Any = None) -> None:
        """Wraps a lineage that exists (see :meth:`open`, which creates it)."""
        self.client = client
        self.session_id = session_id
        self.dialect = dialect
        self.session_settings = _coerce_settings(session_settings)
        #: The answer of the last append (``append``'s: the head it landed in, its ranges, and
        #: ``compactionRequestId`` when it requested a compaction), or None.
        self.last_append: dict[str, Any] | None = None
        #: The answer of the last compaction :meth:`run_compaction` asked for (``outcome``, ``sessionId``, ...).
        self.last_compaction: dict[str, Any] | None = None
        #: How :meth:`clear_session` creates the lineage again (``create_session``'s keyword
        #: arguments): those :meth:`open` was given, else read from the lineage before its erase.
        self._create_options: dict[str, Any] | None = None

    @classmethod
    async def open(
        cls,
        client: SessionsClient,
        session_id: str,
        *,
        dialect: DialectName = "openai-responses",
        compact_at_tokens: int | None = None,
        model: str | None = None,
        mode: CompactionMode = "rotate",
        source: str | None = None,
        context_window: int | None = None,
        session_settings: Any = None,
    ) -> CompactingSession:
        """Creates the lineage if it does not exist (``create_session``: idempotent for the same
        parameters, a SessionConflictError for others) and answers its session. With
        ``compact_at_tokens`` every append that leaves the head at or above that many tokens
        requests a compaction; ``model`` chooses the tokenizer (an OpenAI model: its real
        counts) and, when known, the context window."""
        options: dict[str, Any] = {
            "source": source, "mode": mode, "compact_at_tokens": compact_at_tokens, "model": model, "context_window": context_window, "dialect": dialect,
        }
        created = await client.create_session(session_id, **options)
        session = cls(client, created["lineageId"], dialect=created["dialect"], session_settings=session_settings)
        session._create_options = options
        return session

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The head's items exactly as stored (``transcript``): the latest ``limit`` items
        (``session_settings.limit`` when None), in chronological order. After a compaction the
        head starts with the opening items and the summary (a user message item), then the
        kept recent items. What the model is sent of them is the SDK's to prepare (see
        :func:`call_model_input_filter`)."""
        if limit is None:
            limit = getattr(self.session_settings, "limit", None)
        items: list[Any] = (await self.client.transcript(self.session_id))["messages"]
        if limit is None or limit < 0:  # a negative limit is no limit, as in the SDK's SQLiteSession
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: Sequence[Any]) -> None:
        """Appends the items, in order, exactly as given (one batch: all or nothing), to the
        lineage's head; an empty list sends nothing. The append may request a compaction (the
        lineage's threshold); it runs in the lineage's workflow while the agent goes on, and
        items appended meanwhile are carried into the new head."""
        if not items:
            return
        batch = [_as_item(item, i) for i, item in enumerate(items)]
        self.last_append = await _settle(self.client.append(self.session_id, batch))

    async def pop_item(self) -> Any | None:
        """Takes back the head's most recent item and answers it (as stored), or None when the
        head is empty. The item stays archived in Postgres; a compaction that read it does not
        commit, so it never comes back."""
        result = await _settle(self.client.replace_tail(self.session_id, 1))
        removed = result["removed"]
        return removed[0] if removed else None

    async def clear_session(self) -> None:
        """Forgets the conversation, as the SDK's own sessions do: the lineage is erased
        (``delete_lineage``: every row of it, every run of its workflow) and created again under
        the same id, empty, with the options it was opened with. Its append keys go with it, so
        a key used before the clear stores again after it. A lineage already erased (by another
        process, or a clear that stopped before creating it again) is created again all the
        same. A compaction running meanwhile is answered with a typed error and writes nothing.
        To take back every item but keep the lineage and its history, call
        ``client.replace_tail(session_id, None)`` instead."""
        await _settle(self._erase_and_create())

    async def _erase_and_create(self) -> None:
        options = self._create_options
        if options is None:  # wrapped, not opened: the lineage's own settings, read before they go
            try:
                lineage = await self.client.lineage(self.session_id)
            except SessionNotFoundError:
                lineage = {"mode": "rotate", "dialect": self.dialect}
            options = {
                "source": lineage.get("source"),
                "mode": lineage.get("mode") or "rotate",
                "compact_at_tokens": lineage.get("compactAtTokens"),
                "model": lineage.get("model"),
                "context_window": lineage.get("contextWindow"),
                "dialect": lineage.get("dialect") or self.dialect,
            }
            self._create_options = options
        try:
            await self.client.delete_lineage(self.session_id)
        except SessionNotFoundError:
            pass
        await self.client.create_session(self.session_id, **options)

    async def run_compaction(self, args: Mapping[str, Any] | None = None) -> None:
        """The SDK's compaction hook (``OpenAIResponsesCompactionAwareSession``). The Runner
        calls it after each turn it stores: nothing to do, the service compacts at the
        lineage's threshold when items are appended. With ``force`` (``{"force": True}``) the
        head is compacted now, by the lineage's workflow (``compact(..., force=True)``); the
        answer is in :attr:`last_compaction`."""
        if not (args and args.get("force")):
            return
        result: dict[str, Any] = {}
        for _ in range(5):  # a head that rotated between the read and the request answers `stale`
            head = (await self.client.lineage(self.session_id))["headSessionId"]
            result = await self.client.compact(head, force=True)
            if result.get("outcome") != "stale":
                break
        self.last_compaction = {k: v for k, v in result.items() if k != "messages"}

    def __repr__(self) -> str:
        return f"CompactingSession({self.session_id!r}, dialect={self.dialect!r})"
