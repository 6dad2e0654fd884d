"""Parses in a worker process with an address-space limit (``Chunker(isolate=True)``).

Some shapes of source make tree-sitter take gigabytes inside one parse step (Java and
C# ``a<`` repeated, bash ``x=~|``, an unclosed C ``a(``), and no bound of ours can stop
it in the middle of that step. With ``isolate``, a text whose chunking may parse (kind
``code`` or ``markdown``, or ``auto`` deciding either) is chunked in a worker process
whose address space is limited to what it had once started plus ``isolate`` bytes (2 GiB
for ``True``). A worker that runs out, or dies for any reason, is replaced, and that text
is chunked with prose rules instead, with a :class:`ChunkingWarning` saying so: the
process that asked never holds the parse.

A worker is ``python -m sdk.chunking._isolate LIMIT``, a plain subprocess that reads
requests from its standard input and writes chunks to its standard output (pickled,
length-prefixed), so nothing of the caller's program is imported again (as
``multiprocessing``'s ``spawn`` does with ``__main__``) and nothing of its threads is
copied (as ``fork`` would). Workers are kept for reuse, one per concurrent caller at
most, each keeping a chunker per configuration, and stopped at exit. The encoding must
pickle (a tiktoken name, a path, a ``tokenizers.Tokenizer``); one that does not is a
``TypeError``. The limit is set with ``RLIMIT_AS`` where the platform has it (Linux,
macOS); elsewhere the worker still keeps a crash away from the caller.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import struct
import subprocess
import sys
import threading
import warnings
from typing import IO, Any, NamedTuple, cast

from ._types import Chunk, ChunkingWarning, ChunkKind, caller_level

__all__ = ["DEFAULT_LIMIT", "WorkerConfig", "chunk_isolated", "shutdown", "worker_config"]

DEFAULT_LIMIT = 2 << 30  # bytes of address space a worker may add to what it started with
_HEAD = struct.Struct("<Q")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class WorkerConfig(NamedTuple):
    """A chunker's configuration as a worker rebuilds it: pickled once per chunker, sent
    to each worker once (a ``tokenizers.Tokenizer`` pickles to its whole vocabulary), then
    named by its digest."""

    digest: bytes
    blob: bytes


def worker_config(max_tokens: int, encoding: object, overlap: int) -> WorkerConfig:
    try:
        blob = pickle.dumps((max_tokens, encoding, overlap), pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise TypeError(f"isolate= needs an encoding that pickles: {e}") from None
    return WorkerConfig(hashlib.sha256(blob).digest(), blob)


class _Worker:
    def __init__(self, limit: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sdk.chunking._isolate", str(limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.known: set[bytes] = set()  # the configurations it holds, by digest

    def call(self, request: bytes) -> bytes | None:
        """The worker's answer, or ``None`` where it died before giving one."""
        stdin, stdout = cast(IO[bytes], self.proc.stdin), cast(IO[bytes], self.proc.stdout)
        try:
            stdin.write(_HEAD.pack(len(request)) + request)
            stdin.flush()
            head = stdout.read(_HEAD.size)
            if len(head) < _HEAD.size:
                return None
            (size,) = _HEAD.unpack(head)
            answer = stdout.read(size)
        except OSError:  # a broken pipe: it died
            return None
        return answer if len(answer) == size else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                f.close()


_idle: dict[int, list[_Worker]] = {}
_lock = threading.Lock()


def _take(limit: int) -> _Worker:
    with _lock:
        idle = _idle.setdefault(limit, [])
        while idle:
            w = idle.pop()
            if w.proc.poll() is None:
                return w
            w.stop()
    return _Worker(limit)


def _give_back(limit: int, worker: _Worker) -> None:
    with _lock:
        _idle.setdefault(limit, []).append(worker)


@atexit.register
def shutdown() -> None:
    """Stop every idle worker (also done at exit)."""
    with _lock:
        workers = [w for ws in _idle.values() for w in ws]
        _idle.clear()
    for w in workers:
        w.stop()


def chunk_isolated(
    config: WorkerConfig,
    limit: int,
    text: str,
    kind: str,
    language: str | None,
    filename: str | None,
    heading_context: bool,
) -> list[Chunk] | None:
    """The chunks a worker made, or ``None`` where the worker failed (out of memory,
    killed, crashed): the caller then chunks with prose rules. An error the worker's
    chunking raised (a bad language name) is raised here as it was there."""
    worker = _take(limit)
    blob = None if config.digest in worker.known else config.blob
    request = pickle.dumps(
        (config.digest, blob, text, kind, language, filename, heading_context), pickle.HIGHEST_PROTOCOL
    )
    answer = worker.call(request)
    if answer is None:
        worker.stop()
        warnings.warn(
            f"chunking in an isolated worker failed (the parse went past {limit >> 20} MiB, "
            "or the worker died); chunking with prose rules",
            ChunkingWarning,
            stacklevel=caller_level(),
        )
        return None
    worker.known.add(config.digest)
    _give_back(limit, worker)
    ok, value, said = pickle.loads(answer)
    for category, message in said:  # the worker's warnings, as the call would have given them
        warnings.warn(message, category, stacklevel=caller_level())
    if not ok:
        raise value
    return cast(list[Chunk], value)


# ---- the worker ---------------------------------------------------------------------


def _limit_address_space(limit: int) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: isolated from crashes, not bounded
        return
    try:
        with open("/proc/self/statm") as f:
            base = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - macOS: no /proc
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = base + limit if hard == resource.RLIM_INFINITY else min(base + limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _serve(limit: int) -> None:
    from ._api import Chunker  # loaded before the cap, like the encodings below

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answers
    chunkers: dict[bytes, Chunker] = {}
    capped = False
    while True:
        head = stdin.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        (size,) = _HEAD.unpack(head)
        digest, blob, text, kind, language, filename, heading_context = pickle.loads(stdin.read(size))
        try:
            chunker = chunkers.get(digest)
            if chunker is None:
                max_tokens, encoding, overlap = pickle.loads(blob)
                chunker = chunkers[digest] = Chunker(max_tokens, encoding=encoding, overlap=overlap)
                chunker.chunk("warm up", kind="text")  # its encoding loaded before the cap
            if not capped:
                _limit_address_space(limit)
                capped = True
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value: Any = chunker.chunk(
                    text,
                    kind=cast(ChunkKind, kind),
                    language=language,
                    filename=filename,
                    heading_context=heading_context,
                )
            said = [(w.category, str(w.message)) for w in caught if issubclass(w.category, ChunkingWarning)]
            answer = pickle.dumps((True, value, said), pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            return  # the caller sees the worker gone, and falls back
        except Exception as e:
            answer = pickle.dumps((False, e, []), pickle.HIGHEST_PROTOCOL)
        stdout.write(_HEAD.pack(len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
