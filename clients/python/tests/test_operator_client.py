"""OperatorClient, the operator's reads and runs apart from SessionsClient's agent path (issue
34): ``sessions.operator`` on the client's own connections, and ``connect_operator()`` with
connections of its own, answering what the SessionsClient methods kept for existing callers
answer (state, ledger, retention), refusing what they refuse."""

from __future__ import annotations

import pytest

import session_compaction as sc
from session_compaction import InvalidInputError, OperatorClient, SessionNotFoundError, connect_operator
from session_compaction.client import SessionsClient

from .conftest import conversation, unique_id


async def test_the_operator_reads_a_lineage_on_the_clients_connections(client):
    assert isinstance(client.operator, OperatorClient)
    assert client.operator.temporal is client.temporal
    sid = unique_id("py-operator")
    await client.create_session(sid)
    assert await client.operator.ledger(sid) is None  # no compaction yet
    await client.append(sid, conversation(10))
    result = await client.compact(sid, force=True)
    assert result["outcome"] == "compacted"
    state = await client.operator.state(sid)
    assert state["headSessionId"] == result["sessionId"] and state["compactions"] == 1
    assert state == await client.state(sid)
    ledger = await client.operator.ledger(result["sessionId"])
    assert ledger is not None and ledger == await client.ledger(result["sessionId"])
    with pytest.raises(SessionNotFoundError):
        await client.operator.state(unique_id("py-no-such"))
    with pytest.raises(InvalidInputError) as refused:
        await client.operator.ledger("")
    assert refused.value.field == "sessionId"
    # Closing the operator of a SessionsClient leaves the client's connections open.
    await client.operator.close()
    assert (await client.lineage(sid))["lineageId"] == sid


async def test_connect_operator_has_connections_of_its_own(client):
    sid = unique_id("py-operator-own")
    await client.create_session(sid)
    await client.append(sid, conversation(2))
    async with await connect_operator() as operator:
        assert operator.temporal is not client.temporal
        state = await operator.state(sid)
        assert state["headSessionId"] == sid and state["compactions"] == 0
        assert await operator.ledger(sid) is None
        # Retention's refusals are checked before anything is started or scheduled.
        with pytest.raises(InvalidInputError) as refused:
            await operator.run_retention({"noSuchDays": 1})
        assert refused.value.field == "policy.noSuchDays"
        with pytest.raises(InvalidInputError) as refused:
            await operator.schedule_retention({"endedSessionDays": 1}, "soon")
        assert refused.value.field == "every"
    # The client's own connections are untouched by the operator's close.
    assert (await client.transcript(sid))["messages"] == conversation(2)


def test_the_split_keeps_every_name_importable():
    """The names importable before the split still are, from the package and from
    session_compaction.client; the operator's are exported beside them."""
    from session_compaction.client import (  # noqa: F401
        JOIN_RUNNING_WORKFLOW,
        check_compact_request,
        check_retention_policy,
        check_session_id,
        connect,
        lineage_start_input,
        lineage_start_options,
        lineage_workflow_id,
        manual_retention_workflow_id,
    )

    assert sc.SessionsClient is SessionsClient and sc.OperatorClient is OperatorClient and sc.connect_operator is connect_operator
    for name in ("state", "ledger", "run_retention", "schedule_retention", "unschedule_retention"):
        assert callable(getattr(SessionsClient, name)) and callable(getattr(OperatorClient, name))
    # The agent's path is SessionsClient's alone.
    for name in ("create_session", "append", "replace_tail", "compact", "transcript", "delete_lineage"):
        assert not hasattr(OperatorClient, name)
