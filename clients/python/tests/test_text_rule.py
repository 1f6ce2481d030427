"""Lossless storage and the text rule, as properties on the real stack (hypothesis):

- arbitrary JSON in unknown fields and as content (strings that look like JSON or numbers,
  every plane of Unicode, emoji sequences, empty strings, deep nesting, large values),
  appended to openai-chat and anthropic lineages, comes back JSON-equal from transcript;
- a hostile value anywhere in a batch (a lone surrogate, a NUL, in a value or a key; NaN or
  Infinity) is an InvalidInputError naming its path, raised before anything is sent: never
  a raw psycopg error, and nothing is written.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import session_compaction as sc

from .conftest import json_equal, unique_id, vectors

pytestmark = pytest.mark.asyncio(loop_scope="session")

PROPERTY = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI never meets a new one by chance
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

LARGE = "lorem ipsum 😀 𝔘 " * 1500  # 24,000 code points, astral ones among them
TRICKY = [
    "", " ", "42", "-0", "1e400", "0x1F", "NaN", "Infinity", "null", "true", "[1, 2]", '{"a":1}', '{"a": {"b": [1, "2", null]}}',
    '"quoted"', "\\u0000", "\\ud800", "😀", "👩‍👩‍👧‍👦", "🇫🇷", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "e\u0301", "\u2028\u2029", "\ufeff\u200b", "\U0010ffff", "\uffff",
    "\t\n\r\x01\x1f\x7f", "'\"\\/", "日本語のテキスト", "עברית", LARGE,
]
# Every code point but the two the text rule refuses (NUL and the surrogates).
CHARS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
TEXT = st.one_of(st.sampled_from(TRICKY), st.text(CHARS, max_size=30))
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=False, allow_infinity=False), TEXT
)
KEY = st.one_of(st.sampled_from(["", "42", "0", "10", "$ref", "a.b", "[0]", "😀", "content", "role"]), st.text(CHARS, max_size=12))
JSON = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEY, inner, max_size=4)), max_leaves=12)

CHAT_FIELDS = {"role", "content", "tool_calls", "tool_call_id", "name", "function_call", "refusal", "audio"}


def unknown_fields(known: set[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(KEY.filter(lambda k: k not in known), JSON, max_size=3)


@st.composite
def chat_message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant"]))
    if draw(st.booleans()):
        content: Any = draw(TEXT)
    else:
        part = st.builds(lambda text, extra: {**extra, "type": "text", "text": text}, TEXT, unknown_fields({"type", "text"}))
        other = st.builds(lambda kind, extra: {**extra, "type": kind}, st.sampled_from(["image_url", "input_audio", "file", "x-vendor-part"]), unknown_fields({"type", "text"}))
        content = draw(st.lists(st.one_of(part, other), min_size=1, max_size=3))
    return {**draw(unknown_fields(CHAT_FIELDS)), "role": role, "content": content}


@st.composite
def anthropic_message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant"]))
    if draw(st.booleans()):
        content: Any = draw(TEXT.filter(bool))
    else:
        text = st.builds(lambda t, extra: {**extra, "type": "text", "text": t}, TEXT, unknown_fields({"type", "text"}))
        other = st.builds(lambda kind, extra: {**extra, "type": kind}, st.sampled_from(["image", "document", "search_result", "x-vendor-block"]), unknown_fields({"type", "text"}))
        content = draw(st.lists(st.one_of(text, other), min_size=1, max_size=3))
    return {**draw(unknown_fields({"role", "content"})), "role": role, "content": content}


MESSAGES = {"openai-chat": chat_message(), "anthropic": anthropic_message()}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def lineages(client) -> AsyncIterator[dict[str, str]]:
    """One lineage per dialect for all examples (a workflow each, not one per example)."""
    ids = {"openai-chat": unique_id("py-prop-chat"), "anthropic": unique_id("py-prop-anthropic")}
    await client.create_session(ids["openai-chat"], dialect="openai-chat", model="gpt-4o")  # the client's tokenizer sees every string too
    await client.create_session(ids["anthropic"], dialect="anthropic")
    yield ids


async def stored_count(client, sid: str) -> int:
    return len((await client.transcript(sid))["messages"])


@pytest.mark.parametrize("dialect", sorted(MESSAGES))
@PROPERTY
@given(data=st.data())
async def test_arbitrary_json_comes_back_json_equal(client, lineages, dialect, data):
    sid = lineages[dialect]
    batch = data.draw(st.lists(MESSAGES[dialect], min_size=1, max_size=4), label="batch")
    appended = await client.append(sid, batch)
    transcript = await client.transcript(sid)
    positions = dict(zip(transcript["seqs"], transcript["messages"]))
    back = [positions[seq] for seq in range(appended["firstSeq"], appended["lastSeq"] + 1)]
    assert json_equal(back, batch), (back, batch)


HOSTILE_TEXT = st.one_of(
    st.integers(0xD800, 0xDBFF).map(lambda c: f"high {chr(c)} alone"),
    st.integers(0xDC00, 0xDFFF).map(lambda c: f"{chr(c)} low alone"),
    st.just("a NUL \x00 inside"),
    st.just("\x00"),
    st.just("\ud83d\ude00"),  # a UTF-16 pair as two code points: not one character in a Python str
)
HOSTILE_NUMBER = st.sampled_from([math.nan, math.inf, -math.inf])


def expected_key(key: str) -> str:
    return json.dumps(key)  # the hostile keys are ASCII around the bad character: JSON.stringify's form


@pytest.mark.parametrize("dialect", sorted(MESSAGES))
@PROPERTY
@given(data=st.data())
async def test_hostile_values_are_refused_before_anything_is_sent(client, lineages, dialect, data):
    sid = lineages[dialect]
    batch = data.draw(st.lists(MESSAGES[dialect], min_size=1, max_size=3), label="batch")
    at = data.draw(st.integers(0, len(batch) - 1), label="at")
    where = data.draw(st.sampled_from(["content", "field", "nested", "key", "number"]), label="where")
    rest = {k: v for k, v in batch[at].items() if k != "x_hostile"}
    # Planted first in the message's order, so it is the first violation the walk meets.
    if where == "content":
        message = {"content": data.draw(HOSTILE_TEXT), **{k: v for k, v in rest.items() if k != "content"}}
        field = f"messages[{at}].content"
    elif where == "field":
        message = {"x_hostile": data.draw(HOSTILE_TEXT), **rest}
        field = f"messages[{at}].x_hostile"
    elif where == "nested":
        message = {"x_hostile": {"deep": [1, "fine", {"deeper": data.draw(HOSTILE_TEXT)}]}, **rest}
        field = f"messages[{at}].x_hostile.deep[2].deeper"
    elif where == "key":
        key = data.draw(HOSTILE_TEXT)
        message = {"x_hostile": {key: "value"}, **rest}
        field = f"messages[{at}].x_hostile[{expected_key(key)}]"
    else:
        message = {"x_hostile": [0.5, data.draw(HOSTILE_NUMBER)], **rest}
        field = f"messages[{at}].x_hostile[1]"
    batch = [*batch[:at], message, *batch[at + 1 :]]
    # The valid messages before it break nothing: the first violation is the planted one.
    before = await stored_count(client, sid)
    with pytest.raises(sc.InvalidInputError) as error:
        await client.append(sid, batch)
    assert error.value.field == field
    assert type(error.value) is sc.InvalidInputError and error.value.__cause__ is None  # ours, not a wrapped psycopg error
    assert await stored_count(client, sid) == before


@pytest.mark.parametrize("case", vectors("text-rule.json")["cases"], ids=lambda c: c["name"])
async def test_text_rule_vectors(client, case):
    sid = unique_id("py-text")
    await client.create_session(sid, dialect=case.get("dialect", "openai-chat"))
    with pytest.raises(sc.InvalidInputError) as error:
        await client.append(sid, case["messages"])
    assert (error.value.field, str(error.value)) == (case["field"], case["message"])
    assert await stored_count(client, sid) == 0


BAD = ["nul \x00", "lone \ud800", "low \udc00"]


@pytest.mark.parametrize("bad", BAD, ids=["nul", "high-surrogate", "low-surrogate"])
async def test_hostile_strings_outside_messages(client, bad):
    """Source, model, append key, focus topic and request ids: refused by name, nothing written."""
    sid = unique_id("py-hostile")
    for kwargs, field in (({"source": bad}, "source"), ({"model": bad}, "model")):
        with pytest.raises(sc.InvalidInputError) as error:
            await client.create_session(sid, **kwargs)
        assert error.value.field == field
    with pytest.raises(sc.SessionNotFoundError):
        await client.lineage(sid)  # nothing was created
    await client.create_session(sid)
    with pytest.raises(sc.InvalidInputError) as error:
        await client.append(sid, [{"role": "user", "content": "hi"}], append_key=f"key {bad}")
    assert error.value.field == "appendKey"
    assert await stored_count(client, sid) == 0
    with pytest.raises(sc.InvalidInputError) as error:
        await client.append(sid, [{"role": "user", "content": "hi"}], token_counts=[math.nan])  # type: ignore[list-item]
    assert error.value.field == "tokenCounts"
    await client.append(sid, [{"role": "user", "content": "hi"}])
    for call, field in (
        (lambda: client.compact(sid, focus_topic=bad), "focusTopic"),
        (lambda: client.compact(sid, request_id=bad), "requestId"),
        (lambda: client.request_compaction(sid, focus_topic=bad), "focusTopic"),
        (lambda: client.request_compaction(sid, request_id=bad), "requestId"),
        (lambda: client.wait_for_result(sid, bad, timeout=5), "requestId"),
        (lambda: client.recorded_answer(sid, bad), "requestId"),
    ):
        with pytest.raises(sc.InvalidInputError) as error:
            await call()
        assert error.value.field == field
    assert (await client.state(sid))["compactions"] == 0 and (await client.state(sid))["queue"] == []


async def test_sizes_are_code_points(client):
    """A source of 100 astral characters (200 UTF-16 units) is 100 characters, as in SQL."""
    sid = unique_id("py-codepoints")
    created = await client.create_session(sid, source="😀" * 100)
    assert created["source"] == "😀" * 100
    with pytest.raises(sc.InvalidInputError) as error:
        await client.create_session(unique_id("py-codepoints"), source="😀" * 101)
    assert error.value.field == "source"
