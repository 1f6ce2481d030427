"""Python client of session-compaction. See clients/python/README.md."""

from .client import SessionsClient, check_compact_request, check_retention_policy, check_session_id, connect, lineage_workflow_id
from .config import Config, load_config, temporal_connect_options
from .dialects import DIALECTS, DialectName, for_provider
from .operator_client import OperatorClient, connect_operator
from .errors import (
    BackgroundCompactionRejectedError,
    CallTimeoutError,
    ConnectionConfigError,
    DatabaseQueryError,
    HistoryMismatchError,
    InvalidInputError,
    LineageClosedError,
    LineageErasedError,
    PayloadKeysMissingError,
    RequestLostError,
    RetentionRunningError,
    SessionCompactionError,
    SessionConflictError,
    SessionNotFoundError,
    TokenizerUnavailableError,
)
from .text import check_text
from .tokens import MESSAGE_OVERHEAD_TOKENS, token_counts, tokenizer_for

__all__ = [
    "DIALECTS",
    "MESSAGE_OVERHEAD_TOKENS",
    "BackgroundCompactionRejectedError",
    "CallTimeoutError",
    "Config",
    "ConnectionConfigError",
    "DatabaseQueryError",
    "DialectName",
    "HistoryMismatchError",
    "InvalidInputError",
    "LineageClosedError",
    "LineageErasedError",
    "OperatorClient",
    "PayloadKeysMissingError",
    "RequestLostError",
    "RetentionRunningError",
    "SessionCompactionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "SessionsClient",
    "TokenizerUnavailableError",
    "check_compact_request",
    "check_retention_policy",
    "check_session_id",
    "check_text",
    "connect",
    "connect_operator",
    "for_provider",
    "lineage_workflow_id",
    "load_config",
    "temporal_connect_options",
    "token_counts",
    "tokenizer_for",
]
