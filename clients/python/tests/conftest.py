"""Fixtures over the real stack that scripts/python-tests.ts starts (Postgres, the Temporal
dev server, a worker, the local OpenAI-compatible server); its environment names them."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import pytest_asyncio

from session_compaction import SessionsClient, connect

PROJECT_ROOT = pathlib.Path(__file__).resolve().parents[3]
VECTORS = PROJECT_ROOT / "contract" / "vectors"
# The tests' own ledger and admin statements: the superuser. The client under test connects with
# DATABASE_URL, a login in sc_app and sc_reader (scripts/python-tests.ts).
ADMIN_DATABASE_URL = os.environ.get("ADMIN_DATABASE_URL") or os.environ.get("DATABASE_URL", "")
#: The marker every summary this service writes starts with (SUMMARY_PREFIX, src/compaction/messages.ts).
SUMMARY_PREFIX = "[CONTEXT SUMMARY: reference only, written by session-compaction]"


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality (jsonEqual of src/compaction/json.ts): key order aside, booleans are not
    numbers, and numbers are equal by value (jsonb keeps a number's value, not Python's type:
    1e300 appended comes back as the integer it denotes)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b if isinstance(a, int) and isinstance(b, int) else float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def run_typescript(source: str, payload: Any) -> Any:
    """Runs a CommonJS snippet with tsx in the repository (``input`` holds ``payload``; the
    snippet prints one JSON value) and answers that value: the TypeScript side of a parity check."""
    script = f"let raw = ''; process.stdin.on('data', (d) => (raw += d)).on('end', () => {{ const input = JSON.parse(raw); {source} }});"
    out = subprocess.run(
        ["node", "--import", "tsx", "-e", script],
        cwd=PROJECT_ROOT, input=json.dumps(payload), capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(out.stdout)


def unique_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def vectors(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def conversation(turns: int) -> list[dict[str, Any]]:
    """Like test/support/conversation.ts: a system prompt and user/assistant turns."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Request {i}: please refactor module {i}; keep the public API stable and add tests for the edge cases."})
        messages.append({"role": "assistant", "content": f"Done with module {i}: extracted the parser, kept the API, added {i + 3} tests for empty input and unicode."})
    return messages


def run_audit() -> dict[str, Any]:
    """The project's own audit (`sessions audit --json`), over the whole database."""
    out = subprocess.run(
        ["node", "--import", "tsx", "src/cli/main.ts", "audit", "--json"],
        cwd=PROJECT_ROOT, env=os.environ, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(out.stdout)


@pytest.fixture(scope="session", autouse=True)
def _stack_env() -> None:
    if not os.environ.get("DATABASE_URL") or not os.environ.get("TEMPORAL_ADDRESS"):
        pytest.exit("run these tests with `npm run test:python` (it starts the stack)", returncode=2)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def client() -> AsyncIterator[SessionsClient]:
    sessions = await connect(settings={"retryInitialIntervalMs": 200, "retryMaximumIntervalMs": 1000})
    yield sessions
    await sessions.close()


@pytest_asyncio.fixture(loop_scope="session")
async def db() -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A connection of the test's own, for its ledger (never the client's)."""
    conn = await psycopg.AsyncConnection.connect(ADMIN_DATABASE_URL, autocommit=True)
    yield conn
    await conn.close()
