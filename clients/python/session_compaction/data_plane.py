"""The client's calls to the data plane: Postgres' SQL functions (``session_create``,
``session_append``, ``session_transcript``, ``session_lineage``, ...; src/db/data-plane.ts
and docs/wire-contract.md), one implementation for every language. Each call is one
statement answering one value, its own transaction (autocommit); a refusal is the typed
error it stands for (errors.from_sql_error) or DatabaseQueryError, never the driver's."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from .checks import check_session_id
from .config import Config
from .errors import database_query_error, from_sql_error


class DataPlane:
    """The pool of connections to Postgres, and the loops it serves."""

    def __init__(self, config: Config, db: AsyncConnectionPool) -> None:
        self.config = config
        self.db = db
        # The pool belongs to the event loop it was opened on (its locks and workers do). A
        # call from any other loop (a thread with its own loop, a later asyncio.run) opens a
        # connection of its own and closes it when it ends, cancelled or timed out included,
        # at most `database_pool_size` at once per loop: no loop ever waits on another's lock.
        try:
            self._db_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._db_loop = None
        self._loop_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
        self._loop_slots_lock = threading.Lock()

    async def call(self, query: str, params: Sequence[Any]) -> Any:
        failure: BaseException | None = None
        try:
            loop = asyncio.get_running_loop()
            if loop is self._db_loop:
                async with self.db.connection() as conn:
                    cursor = await conn.execute(query, params)
                    row = await cursor.fetchone()
            else:
                row = await self._call_on_own_connection(loop, query, params)
        except psycopg.Error as error:
            failure = from_sql_error(error)
            if failure is error:
                failure = database_query_error(error, query)
            if failure is error:
                raise
        if failure is not None:
            # Raised outside the handler: the driver's error (its DETAIL and CONTEXT may quote
            # the statement's values, a refused row whole) is neither its cause nor its context.
            raise failure
        assert row is not None
        return row[0]

    async def _call_on_own_connection(self, loop: asyncio.AbstractEventLoop, query: str, params: Sequence[Any]) -> Any:
        """A call from a loop other than the pool's: its own connection, closed however the call
        ends (a cancelled or timed-out call leaves nothing open, and nothing bound to its loop)."""
        with self._loop_slots_lock:
            slots = self._loop_slots.get(loop)
            if slots is None:
                slots = self._loop_slots[loop] = asyncio.Semaphore(self.config.database_pool_size)
        async with slots:
            conn = await psycopg.AsyncConnection.connect(self.config.database_url, autocommit=True)
            try:
                cursor = await conn.execute(query, params)
                return await cursor.fetchone()
            finally:
                await asyncio.shield(conn.close())

    async def lineage(self, session_id: str) -> dict[str, Any]:
        """The lineage's state and its sessions, root first (SQL ``session_lineage``)."""
        check_session_id(session_id)
        return await self.call("select session_lineage(%s)", (session_id,))

    async def messages_under_append_key(self, session_id: str, append_key: str) -> list[Any] | None:
        """The batch stored under ``append_key`` in the lineage of ``session_id`` (any of its
        session ids), its messages in order exactly as appended, wherever they are now (the
        head, a session a compaction ended, archived), copies a compaction made left out; None
        when the key stored nothing. Read only: how a retried step learns what its first
        attempt stored (SQL ``session_appended_under``, as ``messagesUnderAppendKey`` of src/db/data-plane.ts)."""
        stored: list[Any] | None = await self.call(
            "select session_appended_under(%s, %s)",
            (session_id, append_key),
        )
        return stored

    async def close(self) -> None:
        await self.db.close()


async def open_pool(config: Config) -> AsyncConnectionPool:
    """A pool, so concurrent calls (25 compactions at once read their lineage first) do not
    queue behind one connection. Each function call is its own transaction (autocommit)."""
    db = AsyncConnectionPool(config.database_url, min_size=1, max_size=config.database_pool_size, kwargs={"autocommit": True}, open=False)
    await db.open(wait=True, timeout=30)
    return db
