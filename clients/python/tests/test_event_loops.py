"""The client used from several event loops (issue 32, point 5): a thread with a loop of its
own, a second ``asyncio.run``, the Agents SDK's ``Runner.run_sync``. A call that times out or
is cancelled on one loop releases what it holds, and every later call, on any loop, works.

The test's own ledger is the head read by its own connection (``db``), not the client's answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest

from session_compaction import connect, load_config

from .conftest import conversation, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


def msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def stored_texts(db: Any, sid: str) -> list[str]:
    """The head's user texts, read by the test's own connection."""
    cursor = await db.execute(
        "SELECT m.body->>'content' FROM messages m JOIN lineages l ON l.head_session_id = m.session_id"
        " JOIN sessions s ON s.lineage_id = l.id WHERE s.id = %s AND m.archived_at IS NULL AND m.retracted_by IS NULL ORDER BY m.seq",
        [sid],
    )
    return [row[0] for row in await cursor.fetchall()]


def on_another_loop(coroutine_factory: Any) -> Any:
    """Runs a coroutine in a fresh event loop (``asyncio.run``) in the calling thread."""
    return asyncio.run(coroutine_factory())


async def test_a_call_timed_out_on_another_loop_leaves_the_client_working_on_every_loop(db: Any) -> None:
    # One pooled connection, so the calls below contend for it.
    client = await connect(config=dataclasses.replace(load_config(), database_pool_size=1), settings={"retryInitialIntervalMs": 200})
    try:
        sid = unique_id("py-loops")
        await client.create_session(sid)
        # The test holds the lineage's row lock: an append from this loop waits on it, holding
        # the pool's one connection.
        await db.execute("BEGIN")
        await db.execute("SELECT 1 FROM lineages l JOIN sessions s ON s.lineage_id = l.id WHERE s.id = %s FOR UPDATE OF l", [sid])
        held = asyncio.create_task(client.append(sid, [msg("held")]))
        deadline = time.monotonic() + 10
        while True:  # until the append waits on the lock (a condition, not a sleep)
            await db.execute("SELECT pg_stat_clear_snapshot()")  # inside a transaction the view is a snapshot
            cursor = await db.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%%session_append%%'")
            if (await cursor.fetchone())[0] >= 1:
                break
            assert time.monotonic() < deadline and not held.done()
            await asyncio.sleep(0.02)

        # Another loop's call times out while this loop's call holds what it needs.
        def timed_out() -> str:
            async def call() -> None:
                await asyncio.wait_for(client.append(sid, [msg("timed out")]), 0.5)

            try:
                on_another_loop(call)
            except (asyncio.TimeoutError, TimeoutError):
                return "timed out"
            return "answered"

        assert await asyncio.to_thread(timed_out) == "timed out"
        await db.execute("ROLLBACK")
        await asyncio.wait_for(held, 10)

        # Every later call works: several at once on this loop (contending for the one
        # connection), on two other loops at once, and on this loop again.
        await asyncio.wait_for(asyncio.gather(*(client.append(sid, [msg(f"here {i}")]) for i in range(4))), 20)

        def elsewhere(tag: str) -> None:
            async def calls() -> None:
                await asyncio.gather(*(client.append(sid, [msg(f"{tag} {i}")]) for i in range(4)))
                await client.transcript(sid)

            on_another_loop(calls)

        await asyncio.wait_for(asyncio.gather(asyncio.to_thread(elsewhere, "a"), asyncio.to_thread(elsewhere, "b")), 30)
        await asyncio.wait_for(client.append(sid, [msg("last")]), 10)
        texts = await stored_texts(db, sid)
        expected = {"held", "last", *(f"{t} {i}" for t in ("here", "a", "b") for i in range(4))}
        # The timed-out append was cancelled in the server too: it is not stored.
        assert sorted(texts) == sorted(expected) and texts[0] == "held" and texts[-1] == "last"
    finally:
        await client.close()


async def test_a_cancelled_call_on_this_loop_releases_its_connection(db: Any) -> None:
    client = await connect(config=dataclasses.replace(load_config(), database_pool_size=1))
    try:
        sid = unique_id("py-loops-cancel")
        await client.create_session(sid)
        await db.execute("BEGIN")
        await db.execute("SELECT 1 FROM lineages l JOIN sessions s ON s.lineage_id = l.id WHERE s.id = %s FOR UPDATE OF l", [sid])
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.append(sid, [msg("cancelled")]), 0.5)
        await db.execute("ROLLBACK")
        # The pool's one connection came back: the next call gets it at once.
        await asyncio.wait_for(client.append(sid, [msg("next")]), 5)
        assert await stored_texts(db, sid) == ["next"]
    finally:
        await client.close()


async def test_workflow_calls_from_another_loop(client: Any, db: Any) -> None:
    """A compaction asked for from a thread's own loop (Runner.run_sync's case), then reads on this loop."""
    sid = unique_id("py-loops-compact")
    await client.create_session(sid)
    await client.append(sid, conversation(12))

    def compact_elsewhere() -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            return await asyncio.wait_for(client.compact(sid, force=True), 60)

        return on_another_loop(call)

    result = await asyncio.to_thread(compact_elsewhere)
    assert result["outcome"] == "compacted", result
    # By the test's own reading: the lineage moved to a new head, whose rows are fewer.
    cursor = await db.execute("SELECT l.generation, count(m.id) FROM lineages l JOIN messages m ON m.session_id = l.head_session_id WHERE l.id = %s GROUP BY 1", [sid])
    generation, rows = await cursor.fetchone()
    assert generation == 1 and rows < len(conversation(12))
