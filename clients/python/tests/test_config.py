"""Connection options from the environment: the same variables as the TypeScript client."""

from __future__ import annotations

import subprocess

import pytest
from temporalio.service import TLSConfig

from session_compaction import ConnectionConfigError, load_config, temporal_connect_options


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ca",
                    "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt")], check=True, capture_output=True)
    return d


def test_plaintext_by_default():
    config = load_config({})
    assert config.security.tls is False
    assert temporal_connect_options(config) == {"namespace": "default"}


def test_the_call_timeout_is_the_typescript_clients():
    """COMPACTION_CALL_TIMEOUT_MS bounds compact() as it bounds the TypeScript client's calls (default one hour)."""
    assert load_config({}).call_timeout_ms == 3_600_000
    assert load_config({"COMPACTION_CALL_TIMEOUT_MS": "90000"}).call_timeout_ms == 90_000
    with pytest.raises(ConnectionConfigError, match="COMPACTION_CALL_TIMEOUT_MS"):
        load_config({"COMPACTION_CALL_TIMEOUT_MS": "soon"})


def test_tls_mtls_and_api_key(pki):
    env = {
        "TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233",
        "TEMPORAL_NAMESPACE": "ns.acct",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki / "ca.crt"),
        "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki / "ca.crt"),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki / "ca.key"),
        "TEMPORAL_API_KEY": "secret",
    }
    options = temporal_connect_options(load_config(env))
    assert options["namespace"] == "ns.acct" and options["api_key"] == "secret"
    tls = options["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.domain == "temporal.internal"
    assert tls.server_root_ca_cert and b"BEGIN CERTIFICATE" in tls.server_root_ca_cert
    assert tls.client_private_key and b"PRIVATE KEY" in tls.client_private_key
    # An API key alone is TLS with the system's CAs (Temporal Cloud).
    cloud = temporal_connect_options(load_config({"TEMPORAL_API_KEY": "k"}))
    assert cloud["api_key"] == "k" and isinstance(cloud["tls"], TLSConfig) and cloud["tls"].server_root_ca_cert is None


def test_refused_settings_name_the_variable(pki):
    with pytest.raises(ConnectionConfigError, match="both TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH"):
        load_config({"TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki / "ca.crt")})
    with pytest.raises(ConnectionConfigError, match="TEMPORAL_TLS=false contradicts"):
        load_config({"TEMPORAL_TLS": "false", "TEMPORAL_API_KEY": "k"})
    with pytest.raises(ConnectionConfigError) as missing:
        temporal_connect_options(load_config({"TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki / "nope.crt")}))
    assert missing.value.variable == "TEMPORAL_TLS_SERVER_CA_CERT_PATH"
    with pytest.raises(ConnectionConfigError, match="is not a PEM private key"):
        temporal_connect_options(load_config({"TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki / "ca.crt"), "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki / "ca.crt")}))
    with pytest.raises(ConnectionConfigError, match="PAYLOAD_ENCRYPTION_KEYS"):
        load_config({"PAYLOAD_ENCRYPTION_KEYS": "k1:abc"})


@pytest.mark.asyncio(loop_scope="session")
async def test_mtls_through_a_tls_proxy():
    """Against the real dev server behind the project's TLS-terminating proxy (mTLS): the
    right CA and client certificate connect and work; a wrong CA or no client certificate is
    refused. The proxy's own ledger says which handshakes it accepted."""
    import asyncio
    import json
    import os

    from session_compaction import connect

    from .conftest import PROJECT_ROOT, unique_id

    proxy = await asyncio.create_subprocess_exec(
        "node", "--import", "tsx", str(PROJECT_ROOT / "test/support/tls-proxy-cli.ts"),
        cwd=PROJECT_ROOT, env=os.environ, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert proxy.stdin is not None and proxy.stdout is not None
    info = json.loads(await asyncio.wait_for(proxy.stdout.readline(), 60))
    base = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_TLS")}
    mtls = base | {
        "TEMPORAL_ADDRESS": info["address"],
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": info["caCert"],
        "TEMPORAL_TLS_CLIENT_CERT_PATH": info["clientCert"],
        "TEMPORAL_TLS_CLIENT_KEY_PATH": info["clientKey"],
    }
    try:
        sessions = await connect(mtls)
        try:
            sid = unique_id("py-mtls")
            await sessions.create_session(sid)
            await sessions.append(sid, [{"role": "user", "content": "over mTLS"}])
            assert (await sessions.state(sid))["headSessionId"] == sid  # a query through the proxy
        finally:
            await sessions.close()
        with pytest.raises(RuntimeError, match="UnknownIssuer"):  # the client refuses the server
            await connect(mtls | {"TEMPORAL_TLS_SERVER_CA_CERT_PATH": info["otherCaCert"]})
        # The server refuses the client. Under TLS 1.3 the client may read the server's alert
        # (CertificateRequired) or only see the connection closed, depending on timing; the
        # proxy's ledger below proves why: a handshake refused for want of a certificate.
        with pytest.raises(RuntimeError, match="CertificateRequired|connection closed"):
            await connect({k: v for k, v in mtls.items() if not k.startswith("TEMPORAL_TLS_CLIENT")})
    finally:
        proxy.stdin.close()
        ledger = json.loads(await asyncio.wait_for(proxy.stdout.readline(), 60))
        await proxy.wait()
    assert "client" in ledger["accepted"], ledger
    assert set(ledger["accepted"]) == {"client"}, ledger  # nothing got in without our certificate
    assert any("certificate" in r.lower() for r in ledger["refused"]), ledger
