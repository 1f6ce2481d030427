"""One peer of `npm run bench`'s peers section: the OpenAI Agents SDK's SQLAlchemySession on the
bench's Postgres (asyncpg), driven through its own code. Runs `conversations` conversations of
`turns` turns each, `concurrency` at a time; a turn is what an agent's loop asks of its session:
add the user's message, read the items back (the model's input), add the model's output and the
tool result. Prints one JSON line: every turn's milliseconds and the wall time. Benchmark-only;
needs the `bench` extra of clients/python (openai-agents[sqlalchemy], asyncpg).

    python bench/peers/openai_agents_sqlalchemy.py '{"url": "postgresql+asyncpg://...", "concurrency": 10,
        "conversations": 10, "turns": 5, "prefix": "oa-10", "pool": 20}'
"""

import asyncio
import json
import sys
import time

from agents.extensions.memory import SQLAlchemySession
from sqlalchemy.ext.asyncio import create_async_engine


def user_item(n: int) -> dict:
    return {"role": "user", "content": f"Turn {n}: run the tests and report what fails."}


def output_items(n: int) -> list:
    call_id = f"call_{n}"
    return [
        {"type": "function_call", "call_id": call_id, "name": "run_tests", "arguments": json.dumps({"turn": n})},
        {"type": "function_call_output", "call_id": call_id, "output": json.dumps({"passed": 41, "failed": 1, "turn": n})},
        {"role": "assistant", "content": f"Turn {n}: one test fails; the fix is in the parser."},
    ]


async def main(args: dict) -> None:
    engine = create_async_engine(args["url"], pool_size=args.get("pool", 20), max_overflow=0)
    ids = [f"{args['prefix']}-{i}" for i in range(args["conversations"])]
    sessions = [SQLAlchemySession(sid, engine=engine, create_tables=True) for sid in ids]
    await sessions[0].get_items()  # creates the tables once, outside the timing
    latencies: list = []
    queue = list(range(len(sessions)))

    async def worker() -> None:
        while queue:
            session = sessions[queue.pop(0)]
            for n in range(args["turns"]):
                start = time.perf_counter()
                await session.add_items([user_item(n)])
                items = await session.get_items()
                if len(items) != 4 * n + 1:
                    raise RuntimeError(f"{session.session_id}: {len(items)} items at turn {n}")
                await session.add_items(output_items(n))
                latencies.append((time.perf_counter() - start) * 1000)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(args["concurrency"], len(sessions)))))
    wall = (time.perf_counter() - start) * 1000
    await engine.dispose()
    print(json.dumps({"latencies": latencies, "wallMs": wall}))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
