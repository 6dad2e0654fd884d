"""Child process of the batch-map restart test: a map through message batches with a
checkpoint.

Usage: python -m tests.client.batch_worker BASE_URL CHECKPOINT N
Prints each finished index and how it came, and at the end "done".
"""

from __future__ import annotations

import sys

import anyio

from sdk import BatchPolling, Client
from tests.client.test_batches import batch_requests


async def main() -> None:
    base, checkpoint, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    polling = BatchPolling(first=0.05, maximum=0.2)
    async with (
        Client(base_url=base, api_key="sk-ant-batch-worker-0123456789") as c,
        c.map(
            batch_requests(n), via="batches", checkpoint=checkpoint, batch_size=4, polling=polling
        ) as results,
    ):
        async for r in results:
            how = "restored" if r.from_checkpoint else ("ok" if r.ok else type(r.error).__name__)
            print(r.index, how, flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main)
