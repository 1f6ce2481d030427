"""The workflow of tests/test_temporal_agents.py (its worker runs it in the sandbox): the shape
of docs/agents-on-temporal.md's "Python" section, AgentLoop over a lineage. The workflow
carries the lineage id only and continues as new every ``CALLS_PER_RUN`` model calls; it takes
its next user request from the test (``agent_test_next_task``), which ends it after a budget of
model calls, and has the test record the head just before each continue-as-new."""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn, Optional

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from session_compaction.temporal.workflow import AgentLoop

#: Model calls in one run before it continues as new.
CALLS_PER_RUN = 10
NEXT_TASK = "agent_test_next_task"
BEFORE_CONTINUE_AS_NEW = "agent_test_before_continue_as_new"
#: Every wait bounded: an activity is tried at most five times, a refused model request included.
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_interval=timedelta(milliseconds=200), maximum_attempts=5)
TIMEOUT = timedelta(minutes=1)


@workflow.defn
class LineageAgent:
    @workflow.run
    async def run(self, lineage_id: str) -> int:
        async def continue_as_new() -> NoReturn:
            await workflow.execute_activity(BEFORE_CONTINUE_AS_NEW, lineage_id, start_to_close_timeout=TIMEOUT, retry_policy=RETRY)
            workflow.continue_as_new(lineage_id)

        agent = AgentLoop(
            lineage_id, continue_as_new_after=CALLS_PER_RUN, continue_as_new=continue_as_new, start_to_close_timeout=TIMEOUT, retry_policy=RETRY
        )
        while True:
            await agent.run()
            task = await workflow.execute_activity(NEXT_TASK, lineage_id, result_type=Optional[str], start_to_close_timeout=TIMEOUT, retry_policy=RETRY)
            if task is None:
                return agent.model_calls
            await agent.say(task)
