"""Configuration from the environment: the same variables as the TypeScript client
(docs/configuration.md), including TLS, mTLS and an API key for a secured Temporal."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Mapping

from temporalio.service import TLSConfig

from .errors import ConnectionConfigError

DEV_DATABASE_URL = "postgres://postgres:postgres@127.0.0.1:54329/session_compaction"

_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----")
_PEM_KEY = re.compile(rb"-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----")


def _int(env: Mapping[str, str], name: str, fallback: int) -> int:
    raw = env.get(name, "")
    if raw == "":
        return fallback
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ConnectionConfigError(name, f"must be a non-negative integer, got {raw!r}")
    return value


def _bool(env: Mapping[str, str], name: str) -> bool | None:
    raw = env.get(name, "")
    if raw == "":
        return None
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ConnectionConfigError(name, f"must be true or false, got {raw!r}")


@dataclass(frozen=True)
class TemporalSecurity:
    tls: bool = False
    server_ca_cert_path: str | None = None
    server_name: str | None = None
    client_cert_path: str | None = None
    client_key_path: str | None = None
    api_key: str | None = None


@dataclass(frozen=True)
class Config:
    temporal_address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "session-compaction"
    security: TemporalSecurity = field(default_factory=TemporalSecurity)
    database_url: str = DEV_DATABASE_URL
    lease_ttl_ms: int = 60_000
    attempt_timeout_ms: int = 30 * 60_000
    max_attempts: int = 5
    max_append_messages: int = 1000
    max_message_chars: int = 200_000
    max_append_chars: int = 2_000_000
    database_pool_size: int = 10
    #: A pending auto-compaction request older than this counts as lost (AUTO_COMPACTION_RESEND_MS).
    auto_compaction_resend_ms: int = 5 * 60_000
    #: How long compact() waits by default before CallTimeoutError (COMPACTION_CALL_TIMEOUT_MS).
    call_timeout_ms: int = 60 * 60_000


def load_config(env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    if env.get("PAYLOAD_ENCRYPTION_KEYS"):
        raise ConnectionConfigError(
            "PAYLOAD_ENCRYPTION_KEYS", "payload encryption is not supported by the Python client yet; unset it for this process"
        )
    security = {
        "server_ca_cert_path": env.get("TEMPORAL_TLS_SERVER_CA_CERT_PATH") or None,
        "server_name": env.get("TEMPORAL_TLS_SERVER_NAME") or None,
        "client_cert_path": env.get("TEMPORAL_TLS_CLIENT_CERT_PATH") or None,
        "client_key_path": env.get("TEMPORAL_TLS_CLIENT_KEY_PATH") or None,
        "api_key": env.get("TEMPORAL_API_KEY") or None,
    }
    implied = any(v is not None for v in security.values())
    tls = _bool(env, "TEMPORAL_TLS")
    if tls is False and implied:
        raise ConnectionConfigError("TEMPORAL_TLS", "TEMPORAL_TLS=false contradicts TEMPORAL_TLS_* / TEMPORAL_API_KEY settings: unset them or TEMPORAL_TLS")
    if (security["client_cert_path"] is None) != (security["client_key_path"] is None):
        raise ConnectionConfigError(
            "TEMPORAL_TLS_CLIENT_CERT_PATH", "mTLS needs both TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH, or neither"
        )
    lease = _int(env, "COMPACTION_LEASE_TTL_MS", 60_000)
    return Config(
        temporal_address=env.get("TEMPORAL_ADDRESS") or "127.0.0.1:7233",
        namespace=env.get("TEMPORAL_NAMESPACE") or "default",
        task_queue=env.get("TEMPORAL_TASK_QUEUE") or "session-compaction",
        security=TemporalSecurity(tls=implied if tls is None else tls, **security),
        database_url=env.get("DATABASE_URL") or DEV_DATABASE_URL,
        lease_ttl_ms=lease,
        attempt_timeout_ms=_int(env, "COMPACTION_ATTEMPT_TIMEOUT_MS", 30 * 60_000),
        max_attempts=_int(env, "COMPACTION_MAX_ATTEMPTS", 5),
        max_append_messages=_int(env, "MAX_APPEND_MESSAGES", 1000),
        max_message_chars=_int(env, "MAX_MESSAGE_CHARS", 200_000),
        max_append_chars=_int(env, "MAX_APPEND_CHARS", 2_000_000),
        auto_compaction_resend_ms=_int(env, "AUTO_COMPACTION_RESEND_MS", 5 * 60_000),
        call_timeout_ms=_int(env, "COMPACTION_CALL_TIMEOUT_MS", 60 * 60_000),
    )


def _read_pem(variable: str, path: str, pattern: re.Pattern[bytes], what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            content = f.read()
    except OSError as error:
        raise ConnectionConfigError(variable, f"cannot read {path} ({error.strerror or error})") from error
    if not pattern.search(content):
        raise ConnectionConfigError(variable, f"{path} is not a PEM {what}")
    return content


def temporal_connect_options(config: Config) -> dict[str, object]:
    """Keyword arguments for ``temporalio.client.Client.connect`` (besides the address)."""
    s = config.security
    options: dict[str, object] = {"namespace": config.namespace}
    if not s.tls:
        return options
    ca = _read_pem("TEMPORAL_TLS_SERVER_CA_CERT_PATH", s.server_ca_cert_path, _PEM_CERT, "certificate") if s.server_ca_cert_path else None
    cert = key = None
    if s.client_cert_path and s.client_key_path:
        cert = _read_pem("TEMPORAL_TLS_CLIENT_CERT_PATH", s.client_cert_path, _PEM_CERT, "certificate")
        key = _read_pem("TEMPORAL_TLS_CLIENT_KEY_PATH", s.client_key_path, _PEM_KEY, "private key")
    options["tls"] = TLSConfig(server_root_ca_cert=ca, domain=s.server_name, client_cert=cert, client_private_key=key)
    if s.api_key:
        options["api_key"] = s.api_key
    return options
