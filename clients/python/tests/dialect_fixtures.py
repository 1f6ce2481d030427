"""Realistic messages of each dialect, with the fields real SDKs and agents add (kept as
they came): the inputs of the parity checks against the TypeScript dialects and of the
round trips through the real stack."""

from __future__ import annotations

from typing import Any

OPENAI_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": [{"type": "text", "text": "Fix the parser, please."}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
    {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "annotations": [],
        "function_call": None,
        "audio": None,
        "tool_calls": [
            {"index": 0, "id": "call_a1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/parser.ts\"}"}},
            {"id": "call_c2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_a1", "content": "{\"lines\": 120, \"ok\": true}"},
    {"role": "tool", "tool_call_id": "call_c2", "name": "apply_patch", "content": "42"},
    {
        "role": "assistant",
        "content": "Done: the parser handles empty input.",
        "annotations": [{"type": "url_citation", "url_citation": {"url": "https://example.com", "start_index": 0, "end_index": 4}}],
        "audio": {"id": "audio_1", "data": "UklGRg==", "expires_at": 1700000000, "transcript": "Done"},
        "cache_control": {"type": "ephemeral"},
    },
    {"role": "user", "content": "Now the edge cases 😀 — and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 names.", "x_client": {"turn": 3, "weights": [0.5, 1.0, 1e-7, 1.5e300]}},
]

ANTHROPIC: list[dict[str, Any]] = [
    {"role": "user", "content": "Please fix the failing parser test."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The test reads an empty file.", "signature": "EqQBCkYIBRgCKkBsig=="},
            {"type": "text", "text": "Let me read the test first.", "citations": None},
            {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "test/parser.test.ts", "limit": 200, "ratio": 1.0}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "{\"text\": \"expect(parse('')).toEqual([])\"}", "cache_control": {"type": "ephemeral"}}]},
    {
        "role": "assistant",
        "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4="},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "parser empty input"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "title": "Parsers", "url": "https://example.com", "encrypted_content": "Eq8BCioIAhgB"}]},
            {"type": "tool_use", "id": "toolu_01B", "name": "run_tests", "input": {}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01B", "content": [{"type": "text", "text": "42"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}], "is_error": False}]},
    {
        "role": "user",
        "content": [
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "README text"}, "title": "README", "context": "the repo's readme"},
            {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "chunk one"}]}},
            {"type": "container_upload", "file_id": "file_011", "note": {"z": ["zz", 2.5], "10": "ten", "2": "two"}},
            {"type": "text", "text": "Also: add a test for unicode 😀."},
        ],
    },
]

OPENAI_RESPONSES: list[dict[str, Any]] = [
    {"type": "message", "role": "developer", "content": "You are Codex, a coding agent."},
    {"role": "user", "content": [{"type": "input_text", "text": "Rename the config loader."}, {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]},
    {"type": "reasoning", "id": "rs_01", "summary": [{"type": "summary_text", "text": "Need to find the loader."}], "encrypted_content": "gAAAAABo...", "content": None},
    {"type": "function_call", "id": "fc_01", "call_id": "call_01", "name": "shell", "arguments": "{\"cmd\":[\"rg\",\"loadConfig\"]}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_01", "output": "{\"output\":\"src/config.ts:12\",\"metadata\":{\"exit_code\":0}}"},
    {"type": "custom_tool_call", "id": "ctc_01", "call_id": "call_02", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
    {"type": "custom_tool_call_output", "call_id": "call_02", "output": [{"type": "input_text", "text": "Done"}, {"type": "input_image", "image_url": "x"}, {"a": 1}, 7]},
    {"type": "message", "role": "assistant", "id": "msg_01", "status": "completed", "content": [{"type": "output_text", "text": "Renamed.", "annotations": [], "logprobs": []}, {"type": "refusal", "refusal": "not that"}]},
    {"type": "function_call", "id": "fc_02", "call_id": "call_03", "name": "shell", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_03", "output": "42"},
    {"type": "ghost_snapshot", "id": "gs_1", "ghost_commit": {"id": "abc123", "parent": None, "preexisting_untracked_files": ["a.txt"], "7": "seven", "3": "three"}},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "config loaders"}},
    {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    {"type": "message", "role": "user", "content": "Now update the docs 📚."},
]

# The OpenAI Agents SDK's items: the TypeScript SDK's spelling (callId, function_call_result
# with a {type: 'text'} output, reasoning content, providerData) and the Python SDK's (the
# Responses spelling: call_id, function_call_output, reasoning summary) in one lineage.
OPENAI_AGENTS: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": [{"type": "input_text", "text": "Rename the config loader."}, {"type": "input_image", "image": "data:image/png;base64,iVBORw0KGgo="}]},
    {"type": "reasoning", "id": "rs_a1", "content": [{"type": "input_text", "text": "Find the loader first."}], "providerData": {"encryptedContent": "gAAAAABo..."}},
    {"type": "function_call", "id": "fc_a1", "callId": "call_a1", "name": "shell", "arguments": "{\"cmd\":[\"rg\",\"loadConfig\"]}", "status": "completed", "providerData": {"k": 1}},
    {"type": "function_call_result", "callId": "call_a1", "name": "shell", "status": "completed", "output": {"type": "text", "text": "{\"output\":\"src/config.ts:12\"}"}},
    {"type": "message", "role": "assistant", "id": "msg_a1", "status": "completed", "content": [{"type": "output_text", "text": "Found it.", "providerData": {"annotations": []}}]},
    {"type": "function_call", "id": "fc_a2", "callId": "call_a2", "name": "count_uses", "arguments": "{}", "status": "completed"},
    {"type": "function_call_result", "callId": "call_a2", "name": "count_uses", "status": "completed", "output": "42"},
    {"type": "computer_call", "id": "cu_1", "callId": "call_a3", "status": "completed", "action": {"type": "screenshot"}},
    {"type": "computer_call_result", "callId": "call_a3", "output": {"type": "computer_screenshot", "data": "iVBORw0KGgo="}},
    {"type": "hosted_tool_call", "id": "ht_1", "name": "web_search_call", "status": "completed", "output": "three results", "providerData": {"z": ["zz", 2.5], "10": "ten", "2": "two"}},
    {"type": "reasoning", "id": "rs_p1", "summary": [{"type": "summary_text", "text": "Python SDK spelling."}]},
    {"type": "function_call", "id": "fc_p1", "call_id": "call_p1", "name": "lookup", "arguments": "{\"key\":\"a\"}"},
    {"type": "function_call_output", "call_id": "call_p1", "output": "{\"key\": \"a\", \"value\": 42}"},
    {"type": "function_call", "id": "fc_p2", "call_id": "call_p2", "name": "lookup", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_p2", "output": [{"type": "input_text", "text": "Done"}, {"type": "input_image", "image_url": "x"}]},
    {"type": "unknown", "providerData": {"type": "future_item", "text": "kept"}},
    {"role": "user", "content": "Now update the docs 📚."},
]

GEMINI: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": "What's the weather in Paris?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
    {"role": "model", "parts": [{"text": "Thinking about tools", "thought": True, "thoughtSignature": "CiQB"}, {"functionCall": {"name": "get_weather", "args": {"city": "Paris", "days": 3, "ratio": 0.25}, "id": "fc-1"}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 21.0, "sky": "clear"}, "id": "fc-1"}}]},
    {"role": "model", "parts": [{"function_call": {"name": "lookup", "args": None}}, {"executableCode": {"language": "PYTHON", "code": "print(1)"}}, {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "1\n"}}]},
    {"role": "function", "parts": [{"function_response": {"name": "lookup", "response": None}}]},
    {"role": "model", "parts": [{"text": "It's 21 °C and clear ☀️."}], "x_usage": {"tokens": 12}},
]

AI_SDK: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a careful agent."},
    {"role": "user", "content": [{"type": "text", "text": "What's in this image? 🖼️", "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}}, {"type": "image", "image": "iVBORw0KGgo=", "mediaType": "image/png"}]},
    {"role": "assistant", "content": [
        {"type": "reasoning", "text": "Look first.", "providerOptions": {"anthropic": {"signature": "EqQBsig=="}}},
        {"type": "text", "text": "Let me check."},
        {"type": "tool-call", "toolCallId": "call_1", "toolName": "get_weather", "input": {"city": "Paris", "days": 3, "ratio": 0.25}},
        {"type": "tool-call", "toolCallId": "call_2", "toolName": "lookup", "input": {}},
        {"type": "tool-approval-request", "approvalId": "ap_1", "toolCallId": "call_2"},
    ]},
    {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "ap_1", "approved": True, "reason": "fine"}]},
    {"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather", "output": {"type": "json", "value": {"temp": 21.0, "sky": "clear", "list": [1, 2.5, None]}}},
        {"type": "tool-result", "toolCallId": "call_2", "toolName": "lookup", "output": {"type": "error-text", "value": "not found"}},
    ]},
    {"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "call_3", "toolName": "f", "output": {"type": "content", "value": [{"type": "text", "text": "Page 1"}, {"type": "file", "data": {"type": "data", "data": "iVBO"}, "mediaType": "image/png"}]}},
        {"type": "tool-result", "toolCallId": "call_4", "toolName": "f", "output": {"type": "execution-denied", "reason": "no"}},
        {"type": "tool-result", "toolCallId": "call_5", "toolName": "f", "output": {"type": "error-json", "value": None}},
        {"type": "tool-result", "toolCallId": "call_6", "toolName": "f", "output": {"type": "text", "value": "42"}},
    ]},
    {"role": "user", "content": [{"type": "file", "data": {"type": "text", "text": "inline doc"}, "mediaType": "text/plain"}, {"type": "file", "data": "JVBERi0=", "mediaType": "application/pdf", "filename": "r.pdf"}]},
    {"role": "assistant", "content": "It's 21 °C and clear ☀️.", "providerOptions": {"openai": {"x": 1}}},
]

BY_DIALECT: dict[str, list[dict[str, Any]]] = {
    "openai-chat": OPENAI_CHAT,
    "anthropic": ANTHROPIC,
    "openai-responses": OPENAI_RESPONSES,
    "openai-agents": OPENAI_AGENTS,
    "gemini": GEMINI,
    "ai-sdk": AI_SDK,
}
