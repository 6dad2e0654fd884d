"""One real llama-server (Gemma 3 270M, CPU) for the tests, the demo and the benchmarks,
started by the SDK's own launcher (:mod:`sdk.cli._llama`, ``seam llama``): two slots,
two threads, 2048 tokens of context, enough for short prompts and small enough for a
2-core CI machine.
"""

from __future__ import annotations

import json
import signal
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sdk.cli._llama import MODEL_ALIAS, free_port, start, stop

__all__ = ["MODEL_ALIAS", "LlamaServer", "free_port", "interruptible", "running_server", "stop"]


@dataclass(frozen=True)
class LlamaServer:
    """A running llama-server: ``url`` is the root (``/v1/messages`` lives under it)."""

    url: str
    model: str
    log: Path
    pid: int = 0  # the process, for tests that kill it

    def base_url(self, backend: str) -> str:
        return self.url + "/v1" if backend == "openai" else self.url

    def slots(self) -> list[dict[str, object]]:
        with urllib.request.urlopen(self.url + "/slots", timeout=5) as r:
            data = json.loads(r.read())
        assert isinstance(data, list)
        return data

    def busy_slots(self) -> int:
        return sum(1 for s in self.slots() if s.get("is_processing"))

    async def idle(self, seconds: float = 60) -> None:
        """Wait until no slot is generating (what an earlier test left running ends):
        a greedy answer is byte-identical only when nothing shares its batch."""
        import anyio

        with anyio.fail_after(seconds):
            while self.busy_slots():
                await anyio.sleep(0.05)


@contextmanager
def running_server(parallel: int = 2) -> Iterator[LlamaServer]:
    """Start llama-server (``parallel`` slots) on a free loopback port; stop it on exit."""
    with start(parallel=parallel) as llama:
        yield LlamaServer(llama.url, llama.model, llama.log, llama.proc.pid)


def interruptible() -> None:
    """``preexec_fn`` for a child a test interrupts: Ctrl-C's default, so Python turns
    SIGINT into KeyboardInterrupt (a shell without job control starts background commands
    with SIGINT ignored, and the child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
