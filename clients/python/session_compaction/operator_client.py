"""OperatorClient: what an operator reads and runs, apart from the agent's path
(SessionsClient: create_session, append, replace_tail, compact, transcript, delete_lineage),
as the TypeScript client's OperatorClient (src/client/operator-client.ts): a lineage
workflow's ``state`` query, the ledger its head carries, and retention (run once, scheduled,
unscheduled). Obtain it as ``sessions.operator`` (sharing the client's connections) or with
:func:`connect_operator`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from . import retention
from .checks import check_session_id
from .config import Config, load_config, temporal_connect_options
from .data_plane import DataPlane, open_pool
from .lineage_workflow import lineage_workflow_id
from .payloads import DATA_CONVERTER


class OperatorClient:
    """Create with :func:`connect_operator`, or take ``SessionsClient.operator``. Every
    method is a coroutine."""

    def __init__(self, config: Config, temporal: Client, data: DataPlane, *, owns_connections: bool = False) -> None:
        self.config = config
        self.temporal = temporal
        self._data = data
        #: Whether close() closes the connections (not when they are a SessionsClient's).
        self._owns_connections = owns_connections

    async def state(self, session_id: str) -> dict[str, Any]:
        """The workflow's ``state`` query."""
        lineage = await self._data.lineage(session_id)
        return await self.temporal.get_workflow_handle(lineage_workflow_id(lineage["lineageId"])).query("state")

    async def ledger(self, session_id: str) -> dict[str, Any] | None:
        """The ledger the lineage's head carries (SQL ``session_ledger``): the user's requests and
        corrections, files, commands, open errors and identifiers its compactions kept, and the
        in-flight work (``inFlight``: the plan, background work, user turns not yet answered,
        standing instructions; absent from a ledger stored before it); None before the first
        compaction."""
        check_session_id(session_id)
        return await self._data.call("select session_ledger(%s)", (session_id,))

    # ---- retention ------------------------------------------------------------------------

    async def run_retention(self, policy: Mapping[str, Any], batch: int = 1000) -> dict[str, Any]:
        """Runs retention once, now, and waits for it: the workflow ``retentionWorkflow`` on the
        client's task queue (the worker prunes in bounded batches, one transaction each, until
        nothing is left). ``policy`` holds how long each kind of row is kept, in days (0 or
        more, fractions allowed; None or absent: for ever): ``endedSessionDays`` (messages of
        sessions a rotation ended), ``archivedDays`` (rows an in-place compaction archived or a
        caller took back), ``auditDays`` (audit rows no remaining message needs),
        ``appendKeyDays`` (append keys: a resend after that is stored again). ``batch``: rows
        of each kind per transaction, 1 to 100000. Answers what it pruned: ``{batches,
        messages, compactions, appendKeys, prunedRanges, exported}``. Messages whose lineage
        kept no other copy are recorded as pruned ranges, which the audit counts as pruned.
        Raises RetentionRunningError, starting nothing, while another manual run (from either
        client or the CLI) or the scheduled run on the same task queue is still running."""
        return await retention.run_retention(self.temporal, self.config.task_queue, policy, batch, self._running_scheduled_retention)

    async def _running_scheduled_retention(self) -> str | None:
        """A run the retention schedule started on this client's task queue that is still running."""
        return await retention.running_scheduled_retention(self.temporal, self.config.task_queue)

    async def schedule_retention(self, policy: Mapping[str, Any], every: str | timedelta, batch: int = 1000) -> dict[str, Any]:
        """Has Temporal run retention every ``every`` (``'24h'``, ``'1 day'`` or a ``timedelta``):
        the Temporal Schedule ``session-compaction-retention``, created, or updated with the new
        policy and interval (the same schedule the TypeScript client and ``sessions retention
        schedule`` manage). A run still going when the next is due is skipped, not doubled.
        Answers ``{scheduleId, created}``."""
        return await retention.schedule_retention(self.temporal, self.config.task_queue, policy, every, batch)

    async def unschedule_retention(self) -> bool:
        """Stops scheduled retention (deletes the Schedule); False when none was scheduled."""
        return await retention.unschedule_retention(self.temporal)

    async def close(self) -> None:
        """Closes the connections it opened (connect_operator); those of a SessionsClient stay open."""
        if self._owns_connections:
            await self._data.close()

    async def __aenter__(self) -> OperatorClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


async def connect_operator(env: Mapping[str, str] | None = None, *, config: Config | None = None) -> OperatorClient:
    """An OperatorClient with connections of its own, from the same environment variables as
    :func:`session_compaction.connect` (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
    TEMPORAL_TASK_QUEUE, TEMPORAL_TLS*, TEMPORAL_API_KEY, DATABASE_URL)."""
    config = config or load_config(env)
    temporal = await Client.connect(config.temporal_address, **temporal_connect_options(config), data_converter=DATA_CONVERTER)  # type: ignore[arg-type]
    return OperatorClient(config, temporal, DataPlane(config, await open_pool(config)), owns_connections=True)
