"""The rung setting at create from Python, on the real stack: stored on the lineage and answered,
idempotent for the same setting and a conflict for another, and a bad setting (an unknown name,
an empty list, the trim alone, not a list) an InvalidInputError with nothing written."""

from __future__ import annotations

import pytest

from session_compaction import InvalidInputError, SessionConflictError

from .conftest import unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_create_with_rungs(client, db):
    sid = unique_id("py-rungs")
    created = await client.create_session(sid, rungs=["trim", "summary"])
    # Stored in the rungs' order, whatever order they were named in.
    assert created["rungs"] == ["summary", "trim"]
    assert await client.create_session(sid, rungs=["summary", "trim"]) == created
    with pytest.raises(SessionConflictError):
        await client.create_session(sid, rungs=["summary"])
    async with db.cursor() as cur:
        await cur.execute("select rungs from lineages where id = %s", (sid,))
        assert (await cur.fetchone())[0] == ["summary", "trim"]
    # Without a setting: the worker's default, nothing stored.
    plain = unique_id("py-rungs-default")
    assert "rungs" not in await client.create_session(plain)


@pytest.mark.parametrize("rungs", [["summary", "bogus"], [], ["trim"], "summary"])
async def test_a_bad_setting_is_refused_and_nothing_written(client, db, rungs):
    sid = unique_id("py-rungs-bad")
    with pytest.raises(InvalidInputError):
        await client.create_session(sid, rungs=rungs)
    async with db.cursor() as cur:
        await cur.execute("select count(*) from lineages where id = %s", (sid,))
        assert (await cur.fetchone())[0] == 0
