"""Tenants from the Python client (issue 40 §2; docs/security.md, "Tenants"): two application
logins mapped to two tenants each own the same id, each compacts it through the one worker in
its own workflow (the client sends the session's stored name, ``<tenant>:<id>``), and neither
reaches the other's lineage by its stored name."""

from __future__ import annotations

import dataclasses
import uuid
from urllib.parse import urlsplit, urlunsplit

from session_compaction import SessionNotFoundError, connect, load_config

from .conftest import ADMIN_DATABASE_URL, conversation, unique_id


def _as_login(url: str, login: str, password: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{login}:{password}@{parts.hostname}:{parts.port}"))


async def test_two_tenants_each_own_an_id_and_compact_it_in_their_own_workflow(db):
    lineage = unique_id("py-chat")
    tenants = {"pyacme": f"sc_py_tenant_a_{uuid.uuid4().hex[:8]}", "pybeta": f"sc_py_tenant_b_{uuid.uuid4().hex[:8]}"}
    clients = {}
    try:
        for tenant, login in tenants.items():
            await db.execute(f"CREATE ROLE {login} LOGIN PASSWORD '{login}' IN ROLE sc_app")
            await db.execute("INSERT INTO tenant_logins (login, tenant) VALUES (%s, %s)", (login, tenant))
            config = dataclasses.replace(load_config(), database_url=_as_login(ADMIN_DATABASE_URL, login, login))
            clients[tenant] = await connect(config=config)
        for tenant, client in clients.items():
            created = await client.create_session(lineage, source=f"service-{tenant}")
            assert created["lineageId"] == f"{tenant}:{lineage}"
            await client.append(lineage, [{"role": "user", "content": f"[tenant {tenant}] ship the fix"}, *conversation(12)])
        results = {tenant: await client.compact(lineage, force=True) for tenant, client in clients.items()}
        assert {t: r["sessionId"] for t, r in results.items()} == {t: f"{t}:{lineage}--g1" for t in tenants}
        for tenant, client in clients.items():
            other = next(t for t in tenants if t != tenant)
            assert f"[tenant {other}]" not in str(results[tenant]["messages"])
            handle = client.temporal.get_workflow_handle(f"session-lineage/{tenant}:{lineage}")
            assert (await handle.describe()).status is not None
            try:
                await client.transcript(f"{other}:{lineage}")
                raise AssertionError("read another tenant's lineage")
            except SessionNotFoundError:
                pass
        rows = await (await db.execute("SELECT id, source FROM lineages WHERE id LIKE %s ORDER BY id", (f"%:{lineage}",))).fetchall()
        assert rows == [(f"pyacme:{lineage}", "service-pyacme"), (f"pybeta:{lineage}", "service-pybeta")]
    finally:
        for client in clients.values():
            await client.close()
        for login in tenants.values():
            await db.execute("DELETE FROM tenant_logins WHERE login = %s", (login,))
            await db.execute(f"DROP OWNED BY {login}")
            await db.execute(f"DROP ROLE IF EXISTS {login}")
