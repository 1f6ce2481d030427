"""A second OS process on one conversation: ``python -m tests.agents_process <session id> <tag>
<turns> <open options as JSON>`` (from clients/python) opens the CompactingSession with its
own client, prints ``ready``, waits for a line on stdin, runs ``turns`` runs with
``Runner.run_sync`` and prints its stats and everything it appended as one JSON line."""

from __future__ import annotations

import json
import sys

from .agents_support import run_sync_program


def main() -> None:
    session_id, tag, turns, options = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])

    def ready() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    stats = run_sync_program(session_id, tag, turns, options, alone=False, on_ready=ready)
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    main()
