"""Python client of session-compaction. See clients/python/README.md."""

from .client import SessionsClient, check_compact_request, check_session_id, connect, lineage_workflow_id
from .config import Config, load_config, temporal_connect_options
from .errors import (
    BackgroundCompactionRejectedError,
    ConnectionConfigError,
    InvalidInputError,
    LineageClosedError,
    SessionCompactionError,
    SessionConflictError,
    SessionNotFoundError,
)

__all__ = [
    "BackgroundCompactionRejectedError",
    "Config",
    "ConnectionConfigError",
    "InvalidInputError",
    "LineageClosedError",
    "SessionCompactionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "SessionsClient",
    "check_compact_request",
    "check_session_id",
    "connect",
    "lineage_workflow_id",
    "load_config",
    "temporal_connect_options",
]
