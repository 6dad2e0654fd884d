"""``python -m sdk.server`` for the soak test, with one addition: the count of the
process's asyncio tasks, written to a file every 0.2 s.

The server exposes no task count (neither ``/metrics`` nor ``/health``), and a task
that outlives its request (a producer nobody ends, a connection's cycle that never
returns) is the leak the soak test looks for. Run as
``python -m tests.server.soak_serve TASKFILE <python -m sdk.server arguments>``: it is
``sdk.server.__main__.main`` with the same arguments, plus one reporting task started in
uvicorn's loop (so the idle count includes it, and is constant). :func:`serving_counted`
starts it the way :func:`tests.server.conftest.serving` starts the plain server.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.server.conftest import launch


@dataclass(frozen=True)
class Process:
    url: str
    pid: int
    log: Path
    tasks: Path  # the reporter's file: the number of asyncio tasks, then their names
    #   one a line; rewritten every 0.2 s


def _count_tasks(path: Path) -> None:
    import uvicorn

    serve = uvicorn.Server.serve

    async def counted(self: Any, sockets: Any = None) -> None:
        async def report() -> None:
            tmp = path.with_suffix(".tmp")
            while True:
                names = sorted(t.get_name() for t in asyncio.all_tasks())
                tmp.write_text("\n".join([str(len(names)), *names]))
                tmp.replace(path)  # a reader never sees half a number
                await asyncio.sleep(0.2)

        reporter = asyncio.ensure_future(report())
        try:
            await serve(self, sockets)
        finally:
            reporter.cancel()

    uvicorn.Server.serve = counted  # type: ignore[method-assign]


@contextmanager
def serving_counted(
    upstreams: list[str], config: str, d: Path, env: dict[str, str] | None = None
) -> Iterator[Process]:
    """The server in front of ``upstreams`` with ``config`` (and ``env`` added to its
    environment), healthy (as ``serving``) and counting its tasks."""
    tasks = d / "tasks"
    with launch(
        upstreams,
        config,
        d,
        module="tests.server.soak_serve",
        first=[str(tasks)],
        env=env,
        ready=tasks.exists,
    ) as (url, proc, log):
        yield Process(url, proc.pid, log, tasks)


if __name__ == "__main__":
    _count_tasks(Path(sys.argv[1]))
    from sdk.server.__main__ import main

    sys.exit(main(sys.argv[2:]))
