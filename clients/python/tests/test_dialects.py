"""Lineages in every dialect from Python, on the real stack: created with their dialect,
messages stored and read back exactly as appended (JSON-equal, every field kept), the SQL's
structure checks mapped to InvalidInputError, and force-compacted anthropic and
openai-responses transcripts whose heads keep the latest request and only messages that
were appended (besides the summary)."""

from __future__ import annotations

from typing import Any

import pytest

from session_compaction import InvalidInputError, LineageClosedError, SessionConflictError
from session_compaction.dialects import DIALECTS

from .conftest import SUMMARY_PREFIX, json_equal, unique_id
from .dialect_fixtures import BY_DIALECT

pytestmark = pytest.mark.asyncio(loop_scope="session")


def first_text(message: dict[str, Any]) -> str:
    """The text a summary starts with: string content, or the first part/block with text."""
    content = message.get("content", message.get("parts"))
    if isinstance(content, str):
        return content
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            return part["text"]
    return ""


def is_summary(message: dict[str, Any]) -> bool:
    return first_text(message).lstrip().startswith(SUMMARY_PREFIX)


async def check_head(client, result: dict[str, Any], dialect: str, appended: list[dict[str, Any]], latest_request: dict[str, Any]) -> dict[str, Any]:
    """The compacted head: in its dialect, as compact answered it, the latest request
    verbatim, and every message but the summary JSON-equal to one that was appended."""
    assert result["outcome"] == "compacted", result
    head = await client.transcript(result["sessionId"])
    assert head["sessionId"] == result["sessionId"] and head["dialect"] == dialect
    assert set(head) == {"sessionId", "dialect", "messages", "seqs"}
    assert len(head["seqs"]) == len(head["messages"]) and head["seqs"] == sorted(set(head["seqs"]))
    assert json_equal(result["messages"], head["messages"])
    messages = head["messages"]
    assert len(messages) < len(appended)
    summaries = [m for m in messages if is_summary(m)]
    assert summaries, "the head holds no summary"
    for m in messages:
        assert is_summary(m) or any(json_equal(m, a) for a in appended), f"a kept message is not one that was appended: {m}"
    assert any(json_equal(m, latest_request) for m in messages), "the latest user request is not in the head verbatim"
    return head


async def test_create_in_a_dialect(client):
    sid = unique_id("py-dialect")
    created = await client.create_session(sid, dialect="anthropic", model="claude-sonnet-4-5")
    assert created == {"sessionId": sid, "lineageId": sid, "mode": "rotate", "dialect": "anthropic", "model": "claude-sonnet-4-5"}
    assert await client.create_session(sid, dialect="anthropic", model="claude-sonnet-4-5") == created  # idempotent
    with pytest.raises(SessionConflictError, match="with dialect anthropic"):
        await client.create_session(sid, model="claude-sonnet-4-5")  # openai-chat, the default
    assert (await client.lineage(sid))["dialect"] == "anthropic"
    assert (await client.transcript(sid)) == {"sessionId": sid, "dialect": "anthropic", "messages": [], "seqs": []}
    with pytest.raises(InvalidInputError) as bad:
        await client.create_session(unique_id("py-dialect"), dialect="klingon")  # type: ignore[arg-type]
    assert (bad.value.field, bad.value.detail) == ("dialect", f"must be one of {', '.join(DIALECTS)}")


async def test_a_closed_lineage_is_not_created_again(client):
    sid = unique_id("py-closed")
    await client.create_session(sid, dialect="openai-responses")
    await client.close_session(sid)
    with pytest.raises(LineageClosedError):
        await client.create_session(sid, dialect="openai-responses")


@pytest.mark.parametrize("dialect", sorted(BY_DIALECT))
async def test_messages_come_back_exactly_as_appended(client, dialect):
    sid = unique_id(f"py-rt-{dialect}")
    await client.create_session(sid, dialect=dialect, model="gpt-4o")  # an OpenAI model: the client counts every dialect's texts
    messages = BY_DIALECT[dialect]
    appended = await client.append(sid, messages)
    assert appended["count"] == len(messages)
    transcript = await client.transcript(sid)
    assert transcript["dialect"] == dialect and transcript["seqs"] == list(range(1, len(messages) + 1))
    assert json_equal(transcript["messages"], messages)
    assert not any("seq" in m for m in transcript["messages"])  # positions are in seqs, never added to a message
    provider = await client.transcript(sid, for_provider=True)
    assert provider["seqs"] == transcript["seqs"] and len(provider["messages"]) == len(messages)


@pytest.mark.parametrize(
    ("dialect", "messages", "field", "detail"),
    [
        ("anthropic", [{"role": "system", "content": "be brief"}], "messages[0].role", "must be one of user, assistant"),
        ("anthropic", [{"role": "user", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}], "messages[0].content[0]", "a tool_use block belongs in an assistant turn"),
        ("openai-responses", [{"type": "function_call", "call_id": "c1", "name": "x"}], "messages[0].arguments", "must be a string"),
        ("gemini", [{"role": "model", "parts": []}], "messages[0].parts", "must be a non-empty array of parts"),
        ("openai-agents", [{"type": "function_call_result", "name": "x", "output": "1"}], "messages[0].callId", "must be a string that is not empty"),
        ("openai-agents", [{"type": "function_call_output", "call_id": "c1"}], "messages[0].output", "is required"),
        ("openai-chat", [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}], "messages[1].role", "must be one of system, developer, user, assistant, tool, function"),
    ],
)
async def test_the_dialects_structure_is_checked(client, dialect, messages, field, detail):
    sid = unique_id("py-structure")
    await client.create_session(sid, dialect=dialect)
    with pytest.raises(InvalidInputError) as error:
        await client.append(sid, messages)
    assert (error.value.field, error.value.detail) == (field, detail)
    assert (await client.transcript(sid))["messages"] == []


def anthropic_transcript(turns: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A coding agent's Anthropic Messages transcript: tool_use / tool_result turns with
    thinking signatures, cache_control and JSON text tool outputs."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"Task {i}: the parser fails on input case {i}; find out why and fix it without changing the public API."},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"Case {i} probably hits the tokenizer's end-of-input branch.", "signature": f"EqQBCkYIBRgCKkB{i}sig=="},
                    {"type": "text", "text": f"Let me read src/parser{i}.ts first."},
                    {"type": "tool_use", "id": f"toolu_{i:02}A", "name": "read_file", "input": {"path": f"src/parser{i}.ts", "limit": 400}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i:02}A",
                        "content": f'{{"lines": {120 + i}, "first": "export function parse(input: string) {{", "ok": true}}',
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Found it: module {i}'s tokenizer skipped the last character. Patched it and re-ran the tests."},
                    {"type": "tool_use", "id": f"toolu_{i:02}B", "name": "run_tests", "input": {"filter": f"parser{i}"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:02}B", "content": [{"type": "text", "text": str(i + 40)}], "is_error": False}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"All {i + 40} tests of parser {i} pass now.", "citations": None}]},
        ]
    latest = {"role": "user", "content": [{"type": "text", "text": "Now add a test for empty input and for unicode names like 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀, please."}]}
    return messages + [latest], latest


def responses_transcript(turns: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A Codex-style Responses API input: reasoning with encrypted content, function_call /
    function_call_output pairs whose outputs are JSON text (and plain numbers as text)."""
    messages: list[dict[str, Any]] = [{"type": "message", "role": "developer", "content": "You are Codex, a coding agent. Keep changes small."}]
    for i in range(turns):
        messages += [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Step {i}: rename loadConfig{i} to readConfig{i} everywhere and keep the tests green."}]},
            {"type": "reasoning", "id": f"rs_{i:03}", "summary": [{"type": "summary_text", "text": f"Find every use of loadConfig{i}."}], "encrypted_content": f"gAAAAABo{i}xyzEncrypted=="},
            {"type": "function_call", "id": f"fc_{i:03}", "call_id": f"call_{i:03}", "name": "shell", "arguments": f'{{"cmd":["rg","-n","loadConfig{i}"]}}', "status": "completed"},
            {"type": "function_call_output", "call_id": f"call_{i:03}", "output": f'{{"output":"src/config{i}.ts:12: export function loadConfig{i}()","metadata":{{"exit_code":0,"duration_seconds":0.1}}}}'},
            {"type": "function_call", "id": f"fc_{i:03}b", "call_id": f"call_{i:03}b", "name": "count_uses", "arguments": "{}", "status": "completed"},
            {"type": "function_call_output", "call_id": f"call_{i:03}b", "output": str(i + 42)},
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{i:03}",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"Renamed loadConfig{i} in {i + 42} places; the tests pass.", "annotations": [], "logprobs": []}],
            },
        ]
    latest = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now update the docs for readConfig 📚 and show me the diff."}]}
    return messages + [latest], latest


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
async def test_anthropic_transcript_compacts(client, mode):
    sid = unique_id("py-anthropic")
    await client.create_session(sid, dialect="anthropic", mode=mode)
    messages, latest = anthropic_transcript(6)
    await client.append(sid, messages)
    result = await client.compact(sid, force=True, focus_topic="the parser fixes")
    await check_head(client, result, "anthropic", messages, latest)
    if mode == "in_place":
        archived = (await client.transcript(sid, include_archived=True))["archived"]
        assert archived and all(set(a) == {"seq", "archivedAt", "message"} for a in archived)
        assert all(any(json_equal(a["message"], m) for m in messages) for a in archived)


async def test_openai_responses_transcript_compacts(client):
    sid = unique_id("py-responses")
    await client.create_session(sid, dialect="openai-responses", model="gpt-4o")
    messages, latest = responses_transcript(6)
    await client.append(sid, messages)
    result = await client.compact(sid, force=True)
    head = await check_head(client, result, "openai-responses", messages, latest)
    # Tool outputs are the JSON text that was appended, never parsed into objects or numbers.
    outputs = [m["output"] for m in head["messages"] if m.get("type") == "function_call_output"]
    assert all(isinstance(o, str) for o in outputs)
    # The provider view drops only ids (of model turns whose reasoning was summarised away).
    provider = await client.transcript(result["sessionId"], for_provider=True)
    for stored, sent in zip(head["messages"], provider["messages"]):
        assert json_equal(sent, stored) or json_equal(sent, {k: v for k, v in stored.items() if k != "id"})
