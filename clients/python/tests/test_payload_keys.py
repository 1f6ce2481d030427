"""A deployment that encrypts its Temporal payloads (PAYLOAD_ENCRYPTION_KEYS) and a Python
client, which has no payload codec: its compact gets PayloadKeysMissingError, which says so,
instead of the SDK's bare ``KeyError: Unknown payload encoding binary/encrypted``."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import threading
import time

import pytest

import session_compaction as sc
from session_compaction import PayloadKeysMissingError

from .conftest import PROJECT_ROOT, conversation, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _start_encrypted_worker(task_queue: str, keys: str) -> tuple[subprocess.Popen[str], list[str]]:
    """The TypeScript worker as its own process with payload encryption on its own task queue; answers once it polls."""
    # Under the run's worker login (scripts/python-tests.ts), as every worker runs.
    worker_database = os.environ.get("WORKER_DATABASE_URL") or os.environ["DATABASE_URL"]
    env = os.environ | {"PAYLOAD_ENCRYPTION_KEYS": keys, "TEMPORAL_TASK_QUEUE": task_queue, "DATABASE_URL": worker_database}
    proc = subprocess.Popen(
        ["node", "--import", "tsx", "src/worker.ts"], cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
    deadline = time.monotonic() + 180
    while not any("worker ready" in line for line in lines):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the encrypted worker did not start:\n" + "".join(lines))
        time.sleep(0.2)
    return proc, lines


async def test_a_client_without_the_payload_keys_gets_a_typed_error():
    task_queue = f"python-encrypted-{secrets.token_hex(4)}"
    keys = f"k1:{base64.b64encode(secrets.token_bytes(32)).decode()}"
    worker, output = _start_encrypted_worker(task_queue, keys)
    client = await sc.connect(env=os.environ | {"TEMPORAL_TASK_QUEUE": task_queue})
    try:
        assert any("encrypted" in line for line in output), "".join(output)  # the worker encrypts
        session_id = unique_id("py-nokeys")
        await client.create_session(session_id)
        await client.append(session_id, conversation(10))
        with pytest.raises(PayloadKeysMissingError, match="encrypts its Temporal payloads") as raised:
            await client.compact(session_id, force=True, timeout=60)
        assert raised.value.key_id == "k1"
        # The fault is the client's alone: the worker compacted, as Postgres shows.
        lineage = await client.lineage(session_id)
        assert lineage["headSessionId"] != session_id
    finally:
        await client.close()
        worker.kill()
        worker.wait(10)
