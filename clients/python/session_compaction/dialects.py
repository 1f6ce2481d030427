"""What the Python client needs of the dialects (src/compaction/dialects): their names, the
texts of a message a provider counts (for token counts and size limits, the same strings as
each dialect's ``texts``), and the provider view of a head (``forProvider``). The structure
of messages is checked by ``session_append`` in SQL (``sc_check_batch``), for every client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from dataclasses import dataclass
from typing import Any, Callable, Literal, TypeGuard, cast

from .text import js_key_order

DialectName = Literal["openai-chat", "openai-responses", "openai-agents", "anthropic", "gemini", "ai-sdk"]

_MISSING: Any = object()


# ---- JSON text as JavaScript's JSON.stringify writes it -----------------------------------


def _js_number(value: float) -> str:
    """A float as JavaScript prints a number (Number::toString): ``1`` not ``1.0``, ``1e+21``,
    ``1e-7``, ``0.000001``."""
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    s = "".join(map(str, digits)).rstrip("0") or "0"
    k = len(s)
    n = len(digits) + int(exponent)  # the value is 0.s x 10^n
    minus = "-" if sign else ""
    if k <= n <= 21:
        return minus + s + "0" * (n - k)
    if 0 < n <= 21:
        return minus + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return minus + "0." + "0" * (-n) + s
    e = n - 1
    mantissa = s if k == 1 else s[0] + "." + s[1:]
    return f"{minus}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` of the TypeScript client, so both count the same texts."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{js_json(value[k])}" for k in js_key_order(value)) + "}"
    if isinstance(value, Sequence):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    return "null"


def _as_text(value: Any) -> str:
    """asText of src/compaction/dialects/common.ts: strings as they are, anything else as JSON (missing: '')."""
    if value is _MISSING:
        return ""
    return value if isinstance(value, str) else js_json(value)


def _is_list(value: Any) -> TypeGuard[Sequence[Any]]:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _string_leaves(value: Any, out: list[str], skip: frozenset[str] = frozenset()) -> list[str]:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for k in js_key_order(value):
            if k not in skip:
                _string_leaves(value[k], out, skip)
    elif _is_list(value):
        for v in value:
            _string_leaves(v, out, skip)
    return out


# ---- openai-chat --------------------------------------------------------------------------


def _chat_content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not _is_list(content):
        return ""
    return "".join(p["text"] for p in content if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str))


def _chat_texts(m: Mapping[str, Any]) -> list[str]:
    texts = [_chat_content_text(m.get("content"))]
    calls = m.get("tool_calls")
    for c in calls if _is_list(calls) else []:
        if not isinstance(c, Mapping):
            continue
        fn: Mapping[str, Any] = {}
        for kind in ("function", "custom"):  # a function call, else a custom one
            if isinstance(c.get(kind), Mapping):
                fn = c[kind]
                break
        name = fn.get("name")
        arguments = fn.get("arguments")
        call_input = arguments if arguments is not None else fn.get("input", _MISSING)
        call_id = c.get("id")
        texts += [
            "" if name is None else _as_text(name),
            _as_text(call_input),
            "" if call_id is None else _as_text(call_id),
        ]
    if isinstance(m.get("tool_call_id"), str):
        texts.append(m["tool_call_id"])
    if isinstance(m.get("name"), str):
        texts.append(m["name"])
    return texts


def _chat_for_provider(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for m in messages:
        if not isinstance(m, Mapping) or m.get("role") != "assistant":
            out.append(m)
            continue
        message = {k: v for k, v in m.items() if k != "annotations"}
        if "function_call" in message and message["function_call"] is None:
            del message["function_call"]
        if isinstance(message.get("audio"), Mapping):
            message["audio"] = {"id": message["audio"].get("id")}
        elif "audio" in message and message["audio"] is None:
            del message["audio"]
        if _is_list(message.get("tool_calls")):
            message["tool_calls"] = [
                {k: v for k, v in c.items() if k != "index"} if isinstance(c, Mapping) and "index" in c else c for c in message["tool_calls"]
            ]
        out.append(message)
    return out


# ---- openai-responses ---------------------------------------------------------------------

_RS_TEXT_PARTS = {"input_text", "output_text", "text"}
_RS_MEDIA_PARTS = {"input_image", "input_file", "input_audio", "computer_screenshot", "image"}
_RS_OTHER_MODEL_TYPES = {"mcp_list_tools", "mcp_approval_request"}
_RS_STRIPPABLE_TYPES = {"function_call", "custom_tool_call"}
_RS_NON_TEXT_KEYS = frozenset({"type", "id", "status", "encrypted_content", "result"})


def _rs_type(m: Mapping[str, Any]) -> str | None:
    t = m.get("type")
    return t if isinstance(t, str) else None


def _rs_is_message(m: Mapping[str, Any]) -> bool:
    return m.get("type") == "message" or ("type" not in m and isinstance(m.get("role"), str))


def _rs_is_output(m: Mapping[str, Any]) -> bool:
    t = _rs_type(m)
    return t is not None and (t.endswith("_output") or t == "mcp_approval_response")


def _rs_kind(m: Mapping[str, Any]) -> str:
    if _rs_is_message(m):
        return "model" if m.get("role") == "assistant" else "input"
    t = _rs_type(m)
    if t is None:
        return "other"
    if _rs_is_output(m):
        return "output"
    if t == "reasoning" or t.endswith("_call") or t in _RS_OTHER_MODEL_TYPES:
        return "model"
    if t == "compaction":
        return "input"
    return "other"


def _rs_model_runs(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    start = end = -1
    for i, m in enumerate(messages):
        kind = _rs_kind(m)
        if kind == "model":
            if start < 0:
                start = i
            end = i
        elif kind != "other" and start >= 0:
            runs.append((start, end))
            start = -1
    if start >= 0:
        runs.append((start, end))
    return runs


def _rs_output_texts(value: Any) -> list[str]:
    if value is _MISSING or value is None:
        return []
    if isinstance(value, str):
        return [value]
    if _is_list(value):
        return [t for v in value for t in _rs_output_texts(v)]
    if isinstance(value, Mapping) and isinstance(value.get("type"), str):
        if value["type"] in _RS_MEDIA_PARTS:
            return []
        if value["type"] in _RS_TEXT_PARTS and isinstance(value.get("text"), str):
            return [value["text"]]
    return [js_json(value)]


def _responses_texts(m: Mapping[str, Any]) -> list[str]:
    if _rs_is_message(m):
        content = m.get("content")
        if isinstance(content, str):
            return [content]
        if not _is_list(content):
            return []
        out: list[str] = []
        for p in content:
            if not isinstance(p, Mapping):
                continue
            if isinstance(p.get("text"), str):
                out.append(p["text"])
            elif isinstance(p.get("refusal"), str):
                out.append(p["refusal"])
        return out
    t = _rs_type(m)
    if t == "reasoning":
        pieces: list[str] = []
        for field in (m.get("summary"), m.get("content")):
            if _is_list(field):
                pieces += [p["text"] for p in field if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return pieces
    if t == "function_call":
        return [_as_text(m.get("name", _MISSING)), _as_text(m.get("arguments", _MISSING)), _as_text(m.get("call_id", _MISSING))]
    if t == "custom_tool_call":
        return [_as_text(m.get("name", _MISSING)), _as_text(m.get("input", _MISSING)), _as_text(m.get("call_id", _MISSING))]
    if _rs_is_output(m):
        return ([m["call_id"]] if isinstance(m.get("call_id"), str) else []) + _rs_output_texts(m.get("output", _MISSING))
    out = []
    for key in js_key_order(m):
        if key not in _RS_NON_TEXT_KEYS:
            _string_leaves(m[key], out)
    return out


def _responses_for_provider(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """RS-4: in a model turn whose reasoning is gone, the ids of assistant messages, function
    calls and custom tool calls are dropped; everything else is returned as stored."""
    out: list[Any] = list(messages)
    for start, end in _rs_model_runs(messages):
        if any(messages[i].get("type") == "reasoning" for i in range(start, end + 1)):
            continue
        for i in range(start, end + 1):
            m = messages[i]
            if "id" in m and ((_rs_is_message(m) and m.get("role") == "assistant") or (_rs_type(m) or "") in _RS_STRIPPABLE_TYPES):
                out[i] = {k: v for k, v in m.items() if k != "id"}
    return out


# ---- openai-agents ------------------------------------------------------------------------
# The OpenAI Agents SDK's history items (src/compaction/dialects/openai-agents.ts): Responses
# items in the SDK's spelling (TypeScript: ``callId``, ``function_call_result``, reasoning
# ``content``; Python: the Responses spelling itself). Every rule reads an item through
# ``as_responses_item``; items are stored and returned exactly as the SDK wrote them.

#: SDK item types spelled differently in the Responses API (RESPONSES_TYPE).
_AGENTS_RESPONSES_TYPE = {
    "function_call_result": "function_call_output",
    "computer_call_result": "computer_call_output",
    "program": "program_call",
    "program_output": "program_call_output",
}


def as_responses_item(m: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Responses item an Agents SDK item becomes on the wire, as far as the rules read it
    (asResponsesItem): call ids as ``call_id``, result types renamed, a TypeScript reasoning
    item's ``content`` as its ``summary``, a single output part as a list. Messages are the
    same item; the item itself is never changed."""
    t = m.get("type")
    if not isinstance(t, str) or t == "message":
        return m
    view: dict[str, Any] = {k: v for k, v in m.items() if k != "callId"}
    if t in _AGENTS_RESPONSES_TYPE:
        view["type"] = _AGENTS_RESPONSES_TYPE[t]
    if isinstance(m.get("callId"), str):
        view["call_id"] = m["callId"]
    if t == "reasoning" and "summary" not in view:
        parts = m.get("content")
        view["summary"] = [
            {"type": "summary_text", "text": p["text"]} if isinstance(p, Mapping) and isinstance(p.get("text"), str) else p
            for p in (parts if _is_list(parts) else [])
        ]
        view.pop("content", None)
    if isinstance(view.get("output"), Mapping) and t in ("function_call_result", "function_call_output"):
        view["output"] = [view["output"]]
    return view


def _agents_texts(m: Mapping[str, Any]) -> list[str]:
    return _responses_texts(as_responses_item(m))


def _agents_for_provider(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The Responses view drops RS-4's ids; the same ids are dropped from the SDK's own items."""
    seen = [as_responses_item(m) if isinstance(m, Mapping) else m for m in messages]
    ready = _responses_for_provider(seen)
    return [m if ready[i] is seen[i] else {k: v for k, v in m.items() if k != "id"} for i, m in enumerate(messages)]


# ---- anthropic ----------------------------------------------------------------------------

_AN_SERVER_CALLS = {"server_tool_use", "mcp_tool_use"}
_AN_OPAQUE_KEYS = frozenset({"encrypted_content", "encrypted_index", "signature", "data"})


def _anthropic_texts(m: Mapping[str, Any]) -> list[str]:
    content = m.get("content")
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for b in content if _is_list(content) else []:
        if not isinstance(b, Mapping):
            continue
        t = b.get("type")
        if t == "text":
            if isinstance(b.get("text"), str):
                out.append(b["text"])
        elif t == "thinking":
            if isinstance(b.get("thinking"), str):
                out.append(b["thinking"])
        elif t == "tool_use" or (isinstance(t, str) and t in _AN_SERVER_CALLS):
            tool_input = b.get("input")
            out += [_as_text(b.get("name", _MISSING)), js_json({} if tool_input is None else tool_input), _as_text(b.get("id", _MISSING))]
        elif t == "tool_result":
            out.append(_as_text(b.get("tool_use_id", _MISSING)))
            inner = b.get("content")
            if isinstance(inner, str):
                out.append(inner)
            elif _is_list(inner):
                out += [x["text"] for x in inner if isinstance(x, Mapping) and isinstance(x.get("text"), str)]
        elif isinstance(t, str) and t.endswith("_tool_result"):
            out.append(_as_text(b.get("tool_use_id", _MISSING)))
            _string_leaves(b.get("content"), out, _AN_OPAQUE_KEYS)
        elif t == "document" and isinstance(b.get("source"), Mapping):
            source = b["source"]
            if source.get("type") == "text" and isinstance(source.get("data"), str):
                out.append(source["data"])
            elif _is_list(source.get("content")):
                out += [x["text"] for x in source["content"] if isinstance(x, Mapping) and isinstance(x.get("text"), str)]
            out += [b[k] for k in ("title", "context") if isinstance(b.get(k), str)]
        elif t not in ("image", "redacted_thinking"):
            rest = {k: v for k, v in b.items() if k not in ("type", "cache_control", "citations")}
            _string_leaves(rest, out, _AN_OPAQUE_KEYS)
    return out


# ---- gemini -------------------------------------------------------------------------------

_GM_SNAKE = {
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "executableCode": "executable_code",
    "codeExecutionResult": "code_execution_result",
}


def _gm_object(part: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    k = key if key in part else _GM_SNAKE.get(key) if _GM_SNAKE.get(key) in part else None
    value = part.get(k) if k is not None else None
    return value if isinstance(value, Mapping) else None


def _gemini_texts(m: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    parts = m.get("parts")
    for p in parts if _is_list(parts) else []:
        if not isinstance(p, Mapping):
            continue
        if isinstance(p.get("text"), str):
            out.append(p["text"])
        fc = _gm_object(p, "functionCall")
        if fc is not None:
            args = fc.get("args")
            out += [_as_text(fc.get("name", _MISSING)), js_json({} if args is None else args), _as_text(fc.get("id", _MISSING))]
        fr = _gm_object(p, "functionResponse")
        if fr is not None:
            response = fr.get("response")
            out += [_as_text(fr.get("name", _MISSING)), js_json({} if response is None else response), _as_text(fr.get("id", _MISSING))]
        code = _gm_object(p, "executableCode")
        if code is not None:
            out.append(_as_text(code.get("code", _MISSING)))
        result = _gm_object(p, "codeExecutionResult")
        if result is not None:
            out.append(_as_text(result.get("output", _MISSING)))
    return out


# ---- ai-sdk -------------------------------------------------------------------------------
# The Vercel AI SDK's ModelMessage (src/compaction/dialects/ai-sdk.ts): system, user, assistant
# and tool messages with text, image, file, reasoning, tool-call and tool-result parts.


def _ai_sdk_output_texts(output: Any) -> list[str]:
    if not isinstance(output, Mapping):
        return []
    t = output.get("type")
    if t == "content":
        value = output.get("value")
        return [v["text"] for v in (value if _is_list(value) else []) if isinstance(v, Mapping) and isinstance(v.get("text"), str)]
    if t == "execution-denied":
        return [output["reason"]] if isinstance(output.get("reason"), str) else []
    if t in ("text", "error-text"):
        return [_as_text(output.get("value", _MISSING))]
    value = output.get("value")
    return [js_json(value)]


def _ai_sdk_texts(m: Mapping[str, Any]) -> list[str]:
    content = m.get("content")
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for p in content if _is_list(content) else []:
        if not isinstance(p, Mapping):
            continue
        t = p.get("type")
        if t in ("text", "reasoning"):
            if isinstance(p.get("text"), str):
                out.append(p["text"])
        elif t == "tool-call":
            tool_input = p.get("input")
            out += [_as_text(p.get("toolName", _MISSING)), js_json({} if tool_input is None else tool_input), _as_text(p.get("toolCallId", _MISSING))]
        elif t == "tool-result":
            out += [_as_text(p.get("toolCallId", _MISSING)), _as_text(p.get("toolName", _MISSING))] + _ai_sdk_output_texts(p.get("output"))
        elif t == "file" and isinstance(p.get("data"), Mapping) and p["data"].get("type") == "text" and isinstance(p["data"].get("text"), str):
            out.append(p["data"]["text"])
    return out


# ---- the dialects -------------------------------------------------------------------------


@dataclass(frozen=True)
class DialectRules:
    """What the Python client needs of one dialect: its ``texts`` and its ``forProvider``."""

    texts: Callable[[Mapping[str, Any]], list[str]]
    for_provider: Callable[[Sequence[Mapping[str, Any]]], list[Any]]


def _as_stored(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    return list(messages)


# One entry per dialect, keyed by its name: each entry's ``pythonRules`` in
# src/compaction/dialects/registry.ts (test/stack/dialect-registry.test.ts checks both agree).
RULES: dict[str, DialectRules] = {
    "openai-chat": DialectRules(_chat_texts, _chat_for_provider),
    "openai-responses": DialectRules(_responses_texts, _responses_for_provider),
    "openai-agents": DialectRules(_agents_texts, _agents_for_provider),
    "anthropic": DialectRules(_anthropic_texts, _as_stored),
    "gemini": DialectRules(_gemini_texts, _as_stored),
    "ai-sdk": DialectRules(_ai_sdk_texts, _as_stored),
}
DIALECTS: tuple[DialectName, ...] = cast("tuple[DialectName, ...]", tuple(RULES))


def message_texts(message: Any, dialect: str = "openai-chat") -> list[str]:
    """Every text of a message a provider counts, in its dialect (each dialect's ``texts``):
    what token counts and the size limits measure. Tolerant of malformed messages:
    session_append refuses those with a typed error."""
    if not isinstance(message, Mapping):
        return []
    rules = RULES.get(dialect)
    return (rules or RULES["openai-chat"]).texts(message)


def for_provider(dialect: str, messages: Sequence[Any]) -> list[Any]:
    """The head as the agent sends it on its next call (each dialect's ``forProvider``):
    openai-chat drops ``annotations`` and a null ``function_call``, sends ``audio`` as
    ``{id}`` and drops ``index`` from tool calls (assistant messages only); openai-responses
    drops the ids of a model turn whose reasoning is gone (openai-agents: the same ids, read
    through ``as_responses_item``, dropped from the SDK's own items); anthropic, gemini and
    ai-sdk: as stored."""
    rules = RULES.get(dialect)
    return rules.for_provider(messages) if rules else list(messages)


# ---------------------------------------------------------------- real user requests
# A request a person made (src/compaction/dialects/*.ts isRealUserRequest): user role, not a
# tool result, not a summary this service wrote, with non-empty text or any non-text part (an
# image-only request counts). contract/vectors/dialect-rules.json pins both languages to it.

SUMMARY_PREFIX = "[CONTEXT SUMMARY: reference only, written by session-compaction]"
SUMMARY_NAME = "context_summary"
# JavaScript's String.prototype.trim() white space, so both languages agree on "empty".
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip(_JS_SPACE) != ""


def _rs_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not _is_list(content):
        return ""
    return "".join(p["text"] for p in content if isinstance(p, Mapping) and p.get("type") in ("input_text", "output_text", "text") and isinstance(p.get("text"), str))


def _blocks(m: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = m.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, Mapping)] if _is_list(content) else []


def is_real_user_request(message: Any, dialect: str = "openai-chat") -> bool:
    """Whether a message is a real user request in its dialect (the latest one is kept verbatim by every compaction)."""
    if not isinstance(message, Mapping):
        return False
    if dialect == "openai-agents":  # the Responses rule on the item as the SDK sends it
        return is_real_user_request(as_responses_item(message), "openai-responses")
    if message.get("role") != "user":
        return False
    m = message
    if dialect == "openai-chat":
        content = m.get("content")
        if m.get("name") == SUMMARY_NAME and _chat_content_text(content).startswith(SUMMARY_PREFIX):
            return False
        if isinstance(content, str):
            return _has_text(content)
        return _is_list(content) and any(isinstance(p, Mapping) and (p.get("type") != "text" or _has_text(p.get("text"))) for p in content)
    if dialect == "openai-responses":
        if not _rs_is_message(m) or _rs_text(m.get("content")).startswith(SUMMARY_PREFIX):
            return False
        content = m.get("content")
        if isinstance(content, str):
            return _has_text(content)
        return _is_list(content) and any(
            isinstance(p, Mapping) and (not isinstance(p.get("type"), str) or p.get("type") not in ("input_text", "output_text", "text") or _has_text(p.get("text"))) for p in content
        )
    if dialect == "anthropic":
        blocks = _blocks(m)
        text = "".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
        if text.startswith(SUMMARY_PREFIX) or any(b.get("type") == "tool_result" for b in blocks):
            return False
        return any(_has_text(b.get("text")) if b.get("type") == "text" else isinstance(b.get("type"), str) and b.get("type") != "" for b in blocks)
    if dialect == "ai-sdk":
        parts = _blocks(m)
        text = "".join(p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str))
        if text.startswith(SUMMARY_PREFIX):
            return False
        return any(_has_text(p.get("text")) if p.get("type") == "text" else p.get("type") in ("image", "file") for p in parts)
    if dialect == "gemini":
        parts = [p for p in m.get("parts", []) if isinstance(p, Mapping)] if _is_list(m.get("parts")) else []
        text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought") is not True)
        if text.startswith(SUMMARY_PREFIX) or any(_gm_object(p, "functionResponse") is not None for p in parts):
            return False
        return any(
            (_has_text(p.get("text")) and p.get("thought") is not True) or _gm_object(p, "inlineData") is not None or _gm_object(p, "fileData") is not None for p in parts
        )
    raise ValueError(f"unknown dialect {dialect!r}")
