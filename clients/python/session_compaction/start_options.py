"""The options every start of a lineage's workflow carries (start, signal-with-start and
update-with-start alike), as src/client/start-options.ts builds them: its id and task queue,
the input built from the lineage row, the summary the Web UI shows and the search attributes.
Pure; contract/vectors/start-options.json holds the cases both clients agree on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy

from .lineage_workflow import lineage_workflow_id

SessionLineage = SearchAttributeKey.for_keyword("SessionLineage")
SessionHead = SearchAttributeKey.for_keyword("SessionHead")
SessionSource = SearchAttributeKey.for_keyword("SessionSource")
CompactionCount = SearchAttributeKey.for_int("CompactionCount")


#: createSession and compact join the lineage's workflow when it runs already (a second
#: create, concurrent compactions), never fail for it (JOIN_RUNNING_WORKFLOW of
#: src/client/start-options.ts). Signal-with-start joins by its nature.
JOIN_RUNNING_WORKFLOW = WorkflowIDConflictPolicy.USE_EXISTING


def lineage_start_input(lineage: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The workflow's input, built from the lineage row so a new run starts where Postgres
    stands (lineageStartOptions of src/client/start-options.ts; contract/vectors/start-options.json)."""
    start = {
        "lineageId": lineage["lineageId"],
        "headSessionId": lineage["headSessionId"],
        "generation": lineage["generation"],
        "mode": lineage["mode"],
        "settings": dict(settings),
    }
    if lineage.get("source"):
        start["source"] = lineage["source"]
    return start


def lineage_start_options(lineage: Mapping[str, Any], task_queue: str) -> dict[str, Any]:
    """What every start of the lineage's workflow carries besides its input: id, task queue,
    search attributes and the summary the Web UI shows."""
    pairs = [
        SearchAttributePair(SessionLineage, lineage["lineageId"]),
        SearchAttributePair(SessionHead, lineage["headSessionId"]),
        SearchAttributePair(CompactionCount, lineage["generation"]),
    ]
    if lineage.get("source"):
        pairs.append(SearchAttributePair(SessionSource, lineage["source"]))
    source = f" ({lineage['source']})" if lineage.get("source") else ""
    return {
        "id": lineage_workflow_id(lineage["lineageId"]),
        "task_queue": task_queue,
        "search_attributes": TypedSearchAttributes(pairs),
        "static_summary": f"Session lineage {lineage['lineageId']}{source}, {lineage['mode']}",
        "static_details": f"Compactions of session lineage `{lineage['lineageId']}` run here one at a time. Transcripts live in Postgres; see the state query for head and queue.",
    }
