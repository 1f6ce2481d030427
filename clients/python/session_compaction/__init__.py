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
    TokenizerUnavailableError,
)
from .tokens import MESSAGE_OVERHEAD_TOKENS, token_counts, tokenizer_for

__all__ = [
    "MESSAGE_OVERHEAD_TOKENS",
    "BackgroundCompactionRejectedError",
    "Config",
    "ConnectionConfigError",
    "InvalidInputError",
    "LineageClosedError",
    "SessionCompactionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "SessionsClient",
    "TokenizerUnavailableError",
    "check_compact_request",
    "check_session_id",
    "connect",
    "lineage_workflow_id",
    "load_config",
    "temporal_connect_options",
    "token_counts",
    "tokenizer_for",
]
