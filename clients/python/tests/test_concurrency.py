"""Concurrency from Python: 25 concurrent compactions of one head, appends during
compactions, and one lineage used from both languages at once (TypeScript appends, Python
compacts). Ledgers are the tests' own; the project's audit is checked as well."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from typing import Any

import pytest

from .conftest import PROJECT_ROOT, conversation, run_audit, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def children_of(db, parent: str) -> list[str]:
    cursor = await db.execute("select id from sessions where parent_session_id = %s", (parent,))
    return [r[0] for r in await cursor.fetchall()]


async def expect_nothing_lost(db, lineage_id: str, acked: list[str], pattern: str) -> None:
    """Each acknowledged append is in the database exactly once as an appended row, and the
    head's rows are in append order; then the project's audit agrees."""
    cursor = await db.execute(
        """select m.body->>'content' from messages m join sessions s on s.id = m.session_id
           where s.lineage_id = %s and m.written_by_compaction is null and m.role = 'user'""",
        (lineage_id,),
    )
    markers = [str(r[0]).split(" ")[0] for r in await cursor.fetchall()]
    markers = [m for m in markers if re.fullmatch(pattern, m)]
    assert len(set(markers)) == len(markers), "an append is stored twice"
    missing = set(acked) - set(markers)
    assert not missing, f"acknowledged appends lost: {sorted(missing)[:10]}"
    cursor = await db.execute(
        """select m.lineage_seq from messages m join lineages g on g.head_session_id = m.session_id
           where g.id = %s and m.archived_at is null and m.lineage_seq is not null order by m.seq""",
        (lineage_id,),
    )
    seqs = [r[0] for r in await cursor.fetchall()]
    assert seqs == sorted(seqs)
    forks = await (await db.execute(
        "select count(*) from (select parent_session_id from sessions where lineage_id = %s and parent_session_id is not null group by 1 having count(*) > 1) f",
        (lineage_id,),
    )).fetchone()
    assert forks[0] == 0
    report = run_audit()
    for key in ("forks", "orphans", "writesAfterEnd", "lostMessages", "duplicatedMessages", "sequenceGaps"):
        assert report[key] == 0, f"audit {key}: {report[key]} ({report.get('details')})"


async def test_25_concurrent_compactions_rotate_once(client, db):
    sid = unique_id("py-25")
    await client.create_session(sid)
    await client.append(sid, conversation(12))
    before = client.update_limit_fallbacks
    results = await asyncio.gather(*(client.compact(sid, request_id=f"c{i}") for i in range(25)))
    # One rotation, and every caller answered with it: the committed result, or (a request
    # that reached the workflow after the commit, on a loaded machine) stale naming that head.
    assert {r["sessionId"] for r in results} == {f"{sid}--g1"}
    assert {r["outcome"] for r in results} <= {"compacted", "stale"}
    assert sum(r["outcome"] == "compacted" for r in results) > 10
    assert {r["requestId"] for r in results} == {f"c{i}" for i in range(25)}
    assert await children_of(db, sid) == [f"{sid}--g1"]
    # 25 at once is beyond the server's 10 in-flight Updates: some went by signal + query.
    assert client.update_limit_fallbacks > before
    state = await client.state(sid)
    assert state["compactions"] == 1


async def test_appends_during_compactions_are_all_kept(client, db):
    sid = unique_id("py-during")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    acked: list[str] = []
    writing = True

    async def writer(w: int) -> None:
        n = 0
        while writing:
            marker = f"py{w}-{n}"
            await client.append(sid, [{"role": "user", "content": f"{marker} please continue"}, {"role": "assistant", "content": f"ack {marker}"}])
            acked.append(marker)
            n += 1
            await asyncio.sleep(0)

    writers = [asyncio.create_task(writer(w)) for w in range(3)]
    committed = 0
    for _ in range(12):
        if committed >= 4:
            break
        head = (await client.transcript(sid))["sessionId"]
        if (await client.compact(head, force=True))["outcome"] == "compacted":
            committed += 1
    writing = False
    await asyncio.gather(*writers)
    assert committed == 4
    assert len(acked) > 10
    carried = await (await db.execute(
        "select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s and m.origin_message_id is not null",
        (sid,),
    )).fetchone()
    assert carried[0] > 0, "no append landed during a summary: the watermark path was not exercised"
    await expect_nothing_lost(db, sid, acked, r"py\d+-\d+")


async def test_typescript_appends_while_python_compacts(client, db):
    sid = unique_id("py-ts")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    appender = await asyncio.create_subprocess_exec(
        "node", "--import", "tsx", str(PROJECT_ROOT / "test/support/append-loop.ts"), sid,
        cwd=PROJECT_ROOT, env=os.environ, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=sys.stderr,
    )
    assert appender.stdin is not None and appender.stdout is not None
    acked: list[str] = []
    reported: list[int] = []

    async def read() -> None:
        async for line in appender.stdout:  # type: ignore[union-attr]
            text = line.decode().strip()
            if text.startswith("acked "):
                acked.append(text.removeprefix("acked "))
            elif text.startswith("done "):
                reported.append(int(text.removeprefix("done ")))

    reader = asyncio.create_task(read())
    deadline = asyncio.get_running_loop().time() + 60
    while len(acked) < 3:  # TypeScript is appending
        assert asyncio.get_running_loop().time() < deadline, "the TypeScript appender did not start"
        await asyncio.sleep(0.1)
    committed = 0
    results: list[dict[str, Any]] = []
    for _ in range(12):
        if committed >= 4:
            break
        head = (await client.transcript(sid))["sessionId"]
        # Two Python callers at once on the same head: one compaction, both answered.
        pair = await asyncio.gather(client.compact(head, force=True), client.compact(head, force=True))
        results.extend(pair)
        assert pair[0]["sessionId"] == pair[1]["sessionId"]
        if pair[0]["outcome"] == "compacted":
            committed += 1
    appender.stdin.close()
    assert await asyncio.wait_for(appender.wait(), 60) == 0
    await reader
    assert committed == 4
    assert reported == [len(acked)]
    assert len(acked) > 10
    lineage = await client.lineage(sid)
    assert len(lineage["sessions"]) == 5  # root + 4 children, one per commit: no fork
    await expect_nothing_lost(db, sid, acked, r"ts\d+-\d+")
