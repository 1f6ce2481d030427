"""The Python client as a user gets it: a wheel built from clients/python, installed (not
editable) in a fresh virtual environment outside the repository, and run there against the
test stack. The wheel carries the tokenizer's rank files and py.typed and no tests; the
installed package, not the repository's, is what the script imports; its append, forced
compaction and transcript land as the in-repository client's do, by this test's own ledger."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from typing import Any

import psycopg

from session_compaction.tokens import token_counts

from .conftest import ADMIN_DATABASE_URL, PROJECT_ROOT, SUMMARY_PREFIX, conversation, json_equal, unique_id

CLIENT_DIR = PROJECT_ROOT / "clients" / "python"
RANKS_DIR = CLIENT_DIR / "session_compaction" / "ranks"
#: Building and installing fetch from pip's configured index (or its cache): minutes at worst.
INSTALL_TIMEOUT = 600

#: Run by the fresh environment's python, from a directory outside the repository: the
#: installed client's whole cycle on one new lineage, answered as one JSON object.
SCRIPT = """
import asyncio, json, sys

import session_compaction
from session_compaction import connect


async def main() -> None:
    given = json.load(sys.stdin)
    sid = given["sessionId"]
    client = await connect()
    try:
        created = await client.create_session(sid, source="wheel", model="gpt-4o")
        appended = await client.append(sid, given["messages"])
        result = await client.compact(sid, force=True)
        transcript = await client.transcript(sid)
    finally:
        await client.close()
    print(json.dumps({"module": session_compaction.__file__, "created": created, "appended": appended, "result": result, "transcript": transcript}))


asyncio.run(main())
"""


def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, **kwargs)
    assert out.returncode == 0, f"{args} exited {out.returncode}\nstdout:\n{out.stdout[-4000:]}\nstderr:\n{out.stderr[-4000:]}"
    return out


def outside_env() -> dict[str, str]:
    """The test process's environment (it names the stack), without what would point a python
    at the repository's environment or sources instead of the fresh one."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def is_subsequence(part: list[Any], whole: list[Any]) -> bool:
    rest = iter(whole)
    return all(any(json_equal(p, w) for w in rest) for p in part)


def test_the_wheel_installed_in_a_fresh_environment_runs_against_the_stack(tmp_path: pathlib.Path) -> None:
    # 1. The wheel. Built from a copy: setuptools writes build/ and *.egg-info next to the
    # sources (build/ is not git-ignored, and a stale one would leak into the wheel). With
    # build isolation: the project's .venv has no `wheel` and a setuptools older than the
    # pyproject's >=68, so pip fetches the build backend from its index.
    ranks = sorted(p.name for p in RANKS_DIR.glob("*.tiktoken"))
    assert {"o200k_base.tiktoken", "cl100k_base.tiktoken"} <= set(ranks), "no rank files: `npm run python:ranks` (npm run test:python writes them)"
    source = tmp_path / "source"
    shutil.copytree(CLIENT_DIR, source, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis"))
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(source)], cwd=tmp_path, env=outside_env())
    [wheel] = list(wheels.glob("session_compaction-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert sorted(n.removeprefix("session_compaction/ranks/") for n in names if n.startswith("session_compaction/ranks/")) == ranks
        for name in ranks:
            assert z.read(f"session_compaction/ranks/{name}") == (RANKS_DIR / name).read_bytes()
    assert "session_compaction/py.typed" in names
    assert "session_compaction/__init__.py" in names and "session_compaction/client.py" in names
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n], "the wheel carries tests"
    assert {n.split("/")[0] for n in names} == {"session_compaction", wheel.name.split("-py")[0] + ".dist-info"}

    # 2. A fresh environment with the wheel (its dependencies from the index or pip's cache).
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=outside_env())
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", str(wheel)], cwd=tmp_path, env=outside_env())
    where = json.loads(
        run(
            [python, "-c", "import json, sysconfig, session_compaction as s; print(json.dumps([s.__file__, sysconfig.get_paths()['purelib']]))"],
            cwd=tmp_path, env=outside_env(),
        ).stdout
    )
    module, purelib = pathlib.Path(where[0]).resolve(), pathlib.Path(where[1]).resolve()
    assert module == purelib / "session_compaction" / "__init__.py"
    assert venv.resolve() in module.parents and PROJECT_ROOT not in module.parents
    assert pathlib.Path(sysconfig.get_paths()["purelib"]).resolve() not in module.parents  # not the .venv's either

    # 3. The installed client against the stack, from outside the repository.
    sid = unique_id("py-wheel")
    sent = conversation(12)
    script = tmp_path / "run_client.py"
    script.write_text(SCRIPT)
    out = json.loads(run([python, str(script)], cwd=tmp_path, env=outside_env(), input=json.dumps({"sessionId": sid, "messages": sent})).stdout)
    assert pathlib.Path(out["module"]).resolve() == module

    assert out["created"]["sessionId"] == sid and out["created"]["source"] == "wheel" and out["created"]["model"] == "gpt-4o"
    appended = out["appended"]
    assert appended["sessionId"] == sid and appended["count"] == len(sent) and (appended["firstSeq"], appended["lastSeq"]) == (1, len(sent))
    result = out["result"]
    assert result["outcome"] == "compacted", result
    assert result["sessionId"] == f"{sid}--g1" and result["previousSessionId"] == sid
    head = out["transcript"]
    assert head["sessionId"] == result["sessionId"]  # read by the root's id: the new head
    assert json_equal(head["messages"], result["messages"])
    messages = head["messages"]
    summaries = [m for m in messages if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)]
    assert len(summaries) == 1, messages
    kept = [m for m in messages if m is not summaries[0]]
    assert kept and len(kept) < len(sent)
    # Own ledger: what the head kept is what this test sent, verbatim and in the order sent,
    # ending with the last message sent; the latest request is among it.
    assert is_subsequence(kept, sent), kept
    assert json_equal(kept[-1], sent[-1])
    latest_request = next(m for m in reversed(sent) if m["role"] == "user")
    assert any(json_equal(m, latest_request) for m in kept)

    # The installed package counted tokens with the wheel's ranks: the counts stored for the
    # root session are the repository client's for the same gpt-4o messages.
    with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as db:
        stored = [r[0] for r in db.execute("select token_estimate from messages where session_id = %s order by seq", (sid,)).fetchall()]
    assert stored == token_counts("gpt-4o", sent)
