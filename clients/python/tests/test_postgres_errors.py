"""contract/vectors/postgres-errors.json against classify_postgres_error: the Python client
classifies a Postgres error as the TypeScript one does (test/unit/postgres-errors.test.ts)."""

from __future__ import annotations

import errno
import socket
from typing import Any

import pytest

from session_compaction.errors import classify_postgres_error

from .conftest import vectors

CASES = vectors("postgres-errors.json")["cases"]


class _ServerError(Exception):
    """A psycopg error as the classification reads it: its SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _layer(layer: dict[str, Any]) -> BaseException:
    message, code = layer["message"], layer.get("code")
    if isinstance(code, str) and code.startswith("EAI_"):
        return socket.gaierror(getattr(socket, code), message)
    if isinstance(code, str) and code.startswith("E"):
        return OSError(getattr(errno, code), message)
    if isinstance(code, str):
        return _ServerError(message, code)
    return Exception(message)


def _error(chain: list[dict[str, Any]]) -> BaseException:
    """The chain as Python raises it, outermost first; drizzle's wrapper is no layer here."""
    layers = [_layer(layer) for layer in chain if "query" not in layer]
    for outer, inner in zip(layers, layers[1:]):
        outer.__cause__ = inner
    return layers[0]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_classify_postgres_error(case: dict[str, Any]) -> None:
    if case.get("typescriptOnly"):
        pytest.skip(case["typescriptOnly"])
    got = classify_postgres_error(_error(case["chain"]))
    expected = case["expect"]
    assert got == {"kind": expected["kind"], "code": expected["code"], "transient": expected["transient"], "refused_for_good": expected["refusedForGood"]}


def test_a_psycopg_connection_failure_without_sqlstate_is_unreachable() -> None:
    import psycopg

    assert classify_postgres_error(psycopg.OperationalError("connection failed: Connection refused"))["kind"] == "unreachable"
