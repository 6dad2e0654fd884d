"""Child process of the map-restart test: a batch map with a checkpoint.

Usage: python -m tests.client.map_worker BASE_URL MODEL CHECKPOINT N
Prints each finished index (so the parent can kill it mid-map) and, at the end, "done".
"""

from __future__ import annotations

import sys

import anyio

from sdk import Client
from tests.client.test_llama_scheduling import batch_requests


async def main() -> None:
    base, model, checkpoint, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    async with (
        Client(base_url=base) as c,
        c.map(batch_requests(model, n), checkpoint=checkpoint, concurrency=2) as results,
    ):
        async for r in results:
            print(r.index, "restored" if r.from_checkpoint else "sent", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main)
