"""The Python client's copy of what it needs of the dialects, against the TypeScript code
itself (run with tsx): the texts a provider counts (size limits and token counts), the
token counts of OpenAI models in every dialect, the provider view, and the text rule's
vectors (contract/vectors/text-rule.json)."""

from __future__ import annotations

import copy

import pytest

import session_compaction as sc
from session_compaction.dialects import message_texts
from session_compaction.text import check_messages
from session_compaction.tokens import count_tokens

from .conftest import json_equal, run_typescript, vectors
from .dialect_fixtures import BY_DIALECT

TS_DIALECTS = """
const { dialectOf } = require('./src/compaction/dialects');
const { tokenCounterFor } = require('./src/compaction/token-counter');
const out = {};
for (const [name, messages] of Object.entries(input)) {
  const d = dialectOf(name);
  out[name] = {
    texts: messages.map((m) => d.texts(m)),
    o200k: messages.map((m) => tokenCounterFor('gpt-4o', d).count(m)),
    cl100k: messages.map((m) => tokenCounterFor('gpt-4', d).count(m)),
    provider: d.forProvider(messages),
  };
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def typescript() -> dict:
    return run_typescript(TS_DIALECTS, BY_DIALECT)


@pytest.mark.parametrize("dialect", sorted(BY_DIALECT))
def test_texts_and_token_counts_match_typescript(typescript, dialect):
    messages = BY_DIALECT[dialect]
    ts = typescript[dialect]
    assert [message_texts(m, dialect) for m in messages] == ts["texts"]
    assert [count_tokens("o200k_base", m, dialect) for m in messages] == ts["o200k"]
    assert [count_tokens("cl100k_base", m, dialect) for m in messages] == ts["cl100k"]
    assert sc.token_counts("gpt-4o", messages, dialect) == ts["o200k"]


@pytest.mark.parametrize("dialect", sorted(BY_DIALECT))
def test_provider_view_matches_typescript(typescript, dialect):
    messages = copy.deepcopy(BY_DIALECT[dialect])
    view = sc.for_provider(dialect, messages)
    assert json_equal(view, typescript[dialect]["provider"])
    assert messages == BY_DIALECT[dialect]  # the stored messages are never changed in place


def test_provider_view_of_openai_chat():
    stored = BY_DIALECT["openai-chat"]
    view = sc.for_provider("openai-chat", stored)
    calls = view[2]
    assert "annotations" not in calls and "function_call" not in calls and "audio" not in calls
    assert [("index" in c) for c in calls["tool_calls"]] == [False, False]
    assert calls["refusal"] is None  # not one of the fields the view changes
    assert view[5]["audio"] == {"id": "audio_1"} and "annotations" not in view[5]
    assert view[6] is stored[6]  # user messages are passed through


def test_provider_view_of_openai_responses():
    stored = BY_DIALECT["openai-responses"]
    view = sc.for_provider("openai-responses", stored)
    # A model turn (a run of model items up to the next input or output) that has its
    # reasoning keeps its ids; the later turns (no reasoning) lose them.
    assert view[3]["id"] == "fc_01"
    assert [("id" in view[i]) for i in (5, 7, 8)] == [False, False, False]
    assert json_equal({**view[8], "id": "fc_02"}, stored[8]) and json_equal({**view[7], "id": "msg_01"}, stored[7])
    assert view[11] == stored[11]  # a web search call has no strippable id
    without_reasoning = [m for m in stored if m.get("type") != "reasoning"]
    stripped = sc.for_provider("openai-responses", without_reasoning)
    assert [m.get("id") for m in stripped if m.get("type") in ("function_call", "custom_tool_call")] == [None, None, None]


def test_text_rule_vectors_match_typescript():
    """The vectors are what the TypeScript client's parseMessages raises, and what this client raises."""
    cases = vectors("text-rule.json")["cases"]
    ts = run_typescript(
        """
const { parseMessages, DEFAULT_MESSAGE_LIMITS } = require('./src/compaction/message-schema');
const { dialectOf } = require('./src/compaction/dialects');
console.log(JSON.stringify(input.map((c) => {
  try { parseMessages(c.messages, DEFAULT_MESSAGE_LIMITS, dialectOf(c.dialect)); return null; }
  catch (e) { return { field: e.field, message: e.message }; }
})));
""",
        cases,
    )
    assert ts == [{"field": c["field"], "message": c["message"]} for c in cases]
    for case in cases:
        with pytest.raises(sc.InvalidInputError) as error:
            check_messages(case["messages"])
        assert (error.value.field, str(error.value)) == (case["field"], case["message"]), case["name"]
