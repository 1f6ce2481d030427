"""The shared contract vectors (contract/vectors/*.json), from Python. The TypeScript tests
run the same files (test/stack/contract-vectors.test.ts, and the table tests contract/vectors/README.md
names for the pure ones)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

import session_compaction as sc
from session_compaction.client import JOIN_RUNNING_WORKFLOW, lineage_start_input, lineage_start_options
from session_compaction.errors import from_failure, from_sql_error
from session_compaction.rpc_errors import is_run_ended_error, is_transient_connection_error, is_update_limit_error, is_workflow_not_found_error

from .conftest import unique_id, vectors

pytestmark = pytest.mark.asyncio(loop_scope="session")

ERRORS = {name: getattr(sc, name) for name in ("InvalidInputError", "SessionConflictError", "SessionNotFoundError", "LineageClosedError", "BackgroundCompactionRejectedError")}


async def lineage_rows(db, lineage_id: str) -> int:
    row = await (await db.execute("select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s", (lineage_id,))).fetchone()
    return row[0]


@pytest.mark.parametrize("case", vectors("append-errors.json")["cases"], ids=lambda c: c["name"])
async def test_append_refuses(client, db, case):
    sid = unique_id("py-vec")
    await client.create_session(sid)
    with pytest.raises(sc.InvalidInputError) as error:
        await client.append(sid, case["messages"], append_key=case.get("appendKey"), token_counts=case.get("tokenCounts"))
    assert error.value.field == case["field"]
    assert str(error.value) == case["message"]
    assert await lineage_rows(db, sid) == 0


@pytest.mark.parametrize("case", vectors("create-errors.json")["cases"], ids=lambda c: c["name"])
async def test_create_refuses(client, case):
    existing = case.get("existing")
    sid = unique_id(case["sessionId"]) if existing else case["sessionId"]
    if existing:
        await client.create_session(sid, mode=existing.get("mode", "rotate"), source=existing.get("source"))
    with pytest.raises(ERRORS[case["type"]]) as error:
        await client.create_session(sid, mode=case.get("mode", "rotate"), source=case.get("source"), compact_at_tokens=case.get("compactAtTokens"), rungs=case.get("rungs"))
    assert str(error.value) == case["message"].replace(json.dumps(case["sessionId"]), json.dumps(sid))
    if "field" in case:
        assert error.value.field == case["field"]


async def test_token_estimates(client, db):
    cases = vectors("token-estimates.json")["cases"]
    sid = unique_id("py-tokens")
    await client.create_session(sid)
    await client.append(sid, [c["message"] for c in cases])
    rows = await (await db.execute("select token_estimate from messages where session_id = %s order by seq", (sid,))).fetchall()
    assert [r[0] for r in rows] == [c["tokens"] for c in cases]


async def test_append_results(client, db):
    spec = vectors("append-results.json")
    sid = unique_id("py-results")
    await client.create_session(sid, compact_at_tokens=spec["compactAtTokens"])
    ledger = 0
    for step in spec["steps"]:
        result = await client.append(sid, step["messages"], append_key=step.get("appendKey"), token_counts=step.get("tokenCounts"))
        expect = json.loads(json.dumps(step["expect"]).replace("$SESSION", sid))
        if "autoCompactionRequestId" in expect:  # the client sent it as the signal
            assert result.pop("compactionRequestId") == expect.pop("autoCompactionRequestId")
        assert result == {"sessionId": sid, "lineageId": sid, **expect}
        if not result["replayed"]:
            ledger += len(step["messages"])
        assert await lineage_rows(db, sid) == ledger
    with pytest.raises(sc.InvalidInputError) as error:
        await client.append(sid, [{"role": "user", "content": "different"}], append_key="k1")
    assert error.value.field == "appendKey"
    assert await lineage_rows(db, sid) == ledger


@pytest.mark.parametrize("case", vectors("compact-requests.json")["cases"], ids=lambda c: c["name"])
async def test_update_validator_refuses(client, case):
    head = unique_id("py-vec-compact")
    await client.create_session(head)
    await client.append(head, [{"role": "user", "content": "hello"}])
    request = {k: head if v == "$HEAD" else "x" * 1001 if v == "$1001" else v for k, v in case["request"].items()}
    # The client's own check (needed before a signal) agrees with the vector...
    with pytest.raises(ERRORS[case["type"]]) as local:
        sc.check_compact_request(request)
    if "field" in case:
        assert local.value.field == case["field"]
    # ...and so does the workflow's Update validator, reached directly.
    handle = client.temporal.get_workflow_handle(sc.lineage_workflow_id(head))
    with pytest.raises(WorkflowUpdateFailedError) as remote:
        await handle.execute_update("compact", request)
    cause = remote.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == case["type"]
    typed = from_failure(cause.type, cause.message, head)
    assert isinstance(typed, ERRORS[case["type"]])
    if "field" in case:
        assert typed.field == case["field"]
    assert (await client.state(head))["compactions"] == 0


async def test_token_counts_per_model():
    """tokens.py against token-counts.json, the counts the TypeScript client's
    tokenCounterFor produces (test/stack/contract-vectors.test.ts checks the same file)."""
    spec = vectors("token-counts.json")
    for model, tokenizer in spec["tokenizers"].items():
        assert (model, sc.tokenizer_for(model)) == (model, tokenizer)
    assert [sc.tokenizer_for(m) for m in spec["models"]] == ["o200k_base", "cl100k_base", "estimate"]
    messages = [c["message"] for c in spec["cases"]]
    for model in spec["models"][:2]:
        assert list(zip([c["name"] for c in spec["cases"]], sc.token_counts(model, messages))) == [(c["name"], c["tokens"][model]) for c in spec["cases"]]
    assert sc.token_counts(spec["models"][2], messages) is None  # session_append's estimate


@pytest.mark.parametrize("model", vectors("token-counts.json")["models"])
async def test_token_counts_stored(client, db, model):
    """An append from Python stores the vector's counts for a lineage of each model."""
    spec = vectors("token-counts.json")
    sid = unique_id("py-counts")
    await client.create_session(sid, model=model)
    await client.append(sid, [c["message"] for c in spec["cases"]])
    rows = await (await db.execute("select token_estimate from messages where session_id = %s order by seq", (sid,))).fetchall()
    assert [r[0] for r in rows] == [c["tokens"][model] for c in spec["cases"]]


def _rpc_error(layers: list[dict[str, str]]) -> BaseException:
    """The chain of layers (rpc-errors.json) as the Python SDK raises it, outermost first."""
    error: BaseException | None = None
    for layer in reversed(layers):
        made: BaseException
        if "grpc" in layer:
            made = RPCError(layer["message"], RPCStatusCode[layer["grpc"]], b"")
        elif "failure" in layer:
            made = ApplicationError(layer["message"], type=layer["failure"])
        elif layer.get("sdk") == "WorkflowNotFoundError":  # the Python SDK's is an RPCError
            made = RPCError(layer["message"], RPCStatusCode.NOT_FOUND, b"")
        elif layer.get("sdk") == "WorkflowUpdateRPCTimeoutOrCancelledError":
            made = WorkflowUpdateRPCTimeoutOrCancelledError()
        else:
            assert "sdk" not in layer, f"no SDK error {layer['sdk']}"
            made = Exception(layer["message"])
        made.__cause__ = error
        error = made
    assert error is not None
    return error


@pytest.mark.parametrize("case", vectors("rpc-errors.json")["cases"], ids=lambda c: c["name"])
async def test_rpc_error_classification(case):
    error = _rpc_error(case["error"])
    assert {
        "updateLimit": is_update_limit_error(error),
        "runEnded": is_run_ended_error(error),
        "transient": is_transient_connection_error(error),
        "workflowNotFound": is_workflow_not_found_error(error),
    } == {kind: case[kind] for kind in ("updateLimit", "runEnded", "transient", "workflowNotFound")}


def _seen(error: BaseException) -> dict[str, str]:
    """What the caller sees of a typed error: its name, field and message."""
    field = {"field": error.field} if isinstance(error, sc.InvalidInputError) else {}
    return {"error": type(error).__name__, **field, "message": str(error)}


@pytest.mark.parametrize("case", vectors("failure-errors.json")["updateFailures"], ids=lambda c: c["name"])
async def test_update_failure_mapping(case):
    typed = from_failure(case["type"], case["message"], vectors("failure-errors.json")["lineageId"])
    assert (None if typed is None else _seen(typed)) == case["expect"]


class _SqlError(Exception):
    """A psycopg error as from_sql_error reads it: ``sqlstate`` and ``diag.message_detail``."""

    def __init__(self, sqlstate: str, detail: str | None) -> None:
        super().__init__("raised by the function")
        self.sqlstate = sqlstate
        self.diag = SimpleNamespace(message_detail=detail)


@pytest.mark.parametrize("case", vectors("failure-errors.json")["sqlErrors"], ids=lambda c: c["name"])
async def test_sql_error_mapping(case):
    error = _SqlError(case["sqlstate"], case["detail"])
    mapped = from_sql_error(error)
    assert (None if mapped is error else _seen(mapped)) == case["expect"]


@pytest.mark.parametrize("case", vectors("start-options.json")["cases"], ids=lambda c: c["name"])
async def test_workflow_start_options(case):
    spec = vectors("start-options.json")
    options = lineage_start_options(case["lineage"], spec["taskQueue"])
    expect = case["expect"]
    assert {
        "workflowId": options["id"],
        "taskQueue": options["task_queue"],
        "input": lineage_start_input(case["lineage"], spec["settings"]),
        "staticSummary": options["static_summary"],
        "staticDetails": options["static_details"],
        "searchAttributes": {pair.key.name: pair.value for pair in options["search_attributes"]},
    } == expect | {"taskQueue": spec["taskQueue"], "input": expect["input"] | {"settings": spec["settings"]}}
    assert "id_reuse_policy" not in options and spec["idReusePolicy"] == "ALLOW_DUPLICATE"  # the SDK's default
    assert JOIN_RUNNING_WORKFLOW.name == spec["idConflictPolicy"]
