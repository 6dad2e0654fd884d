"""``seam chat``: an interactive streaming chat whose conversation lives in a file.

The conversation is an :class:`sdk.Session`: each line typed is a user turn, the answer
streams as it comes, and after each turn the session reports what went into the
request (turns kept, turns left out to fit the window). With ``--session FILE`` (or a
store URL and ``--session-id``) the session is saved after every turn (and its cursor
every few deltas while an answer streams), so a chat started again with the same
session continues where it stopped; an answer cut off by a crash is completed first,
each character once.

The session is given a thin wrapper of the client that remembers the last stream it
opened, so the chat can show that request's statistics (TTFT, tokens/s, pauses,
resumes) without the session having to know about them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
from rich.console import Console
from rich.markup import escape

from .._errors import SDKError
from ..client import BackendName, Client, Stream
from ..session import FitReport, Session, SessionBudgetError, open_store
from ..stream import Message

__all__ = ["ChatOptions", "run_chat"]

HELP = (
    "Type a message (it is sent as a user turn); /stats shows the last answer's stream "
    "statistics; /quit or EOF ends."
)


class _Recorder:
    """The client as the session sees it, keeping the last :class:`Stream` it opened."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.last: Stream | None = None

    @property
    def hosted(self) -> bool:
        return self.client.hosted

    async def echoes_prefill(self) -> bool:
        return await self.client.echoes_prefill()

    async def context_window(self, model: str) -> int | None:
        return await self.client.context_window(model)

    def stream(self, **request: Any) -> AbstractAsyncContextManager[Stream]:
        s = self.client.stream(**request)
        self.last = s
        return s

    async def create(self, **request: Any) -> Message:
        return await self.client.create(**request)


@dataclass(frozen=True, slots=True)
class ChatOptions:
    base_url: str | None
    backend: BackendName | None
    model: str | None
    session: str | None
    session_id: str | None
    priority: str
    stats: bool
    max_tokens: int
    context_window: int | None  # None: learnt from the server at the first request
    system: str | None
    sampling: Mapping[str, Any]


class ChatExit(Exception):
    """Ends the chat with an exit status and a message for standard error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def report_line(rep: FitReport) -> str:
    left = f"left out {len(rep.elided)} ({rep.elided_tokens} tokens)" if rep.elided else "left out 0"
    return f"[context] kept {len(rep.kept)} turns, {left}; {rep.tokens} of {rep.budget} tokens"


def stats_line(s: Stream) -> str:
    m = s.metrics()
    st = s.statistics()
    ttft = f"{m.ttft * 1000:.0f} ms" if m.ttft is not None else "-"
    tps = f"{m.tokens_per_second:.1f}" if m.tokens_per_second is not None else "-"
    return (
        f"[stats] TTFT {ttft}, {tps} tokens/s, {m.output_tokens} tokens in {m.e2el:.2f} s, "
        f"queued {m.queue_time * 1000:.0f} ms; pauses {st.pauses}, resumes {st.resumes}, "
        f"preemptions {st.preemptions}, stall cancels {st.cancels}"
    )


async def _pick_model(client: Client, wanted: str | None) -> str:
    if wanted:
        return wanted
    env = os.environ.get("SEAM_MODEL")
    if env:
        return env
    try:
        models = await client.models()
    except SDKError as e:
        raise ChatExit(1, f"cannot list the server's models ({e}); pass --model") from None
    if not models:
        raise ChatExit(1, "the server lists no models; pass --model")
    return models[0].id


def shown_place(place: str) -> str:
    """A session's place for output: a URL's password is never printed."""
    parts = urlsplit(place)
    if parts.password is None:
        return place
    host = parts.hostname or ""
    user = f"{parts.username}:***@" if parts.username else ":***@"
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}{host}{port}"))


def _where(opts: ChatOptions) -> str:
    assert opts.session is not None
    return shown_place(opts.session) + (f" #{opts.session_id}" if opts.session_id else "")


def _load(opts: ChatOptions, rec: _Recorder, model: str | None, out: Console) -> Session | None:
    """The saved session (``None`` if there is none yet)."""
    if not opts.session:
        return None
    try:
        if opts.session_id is not None:
            store = open_store(opts.session)
            if not store.version(opts.session_id):
                return None
            s = Session.load(store, opts.session_id, rec)
        elif os.path.exists(opts.session):
            s = Session.load(opts.session, rec)
        else:
            return None
    except SDKError as e:  # a bad file or document, a store that cannot be reached
        raise ChatExit(2, f"cannot load the session: {e}") from None
    if model:
        s.model = model
    out.print(f"[dim]resumed {escape(_where(opts))}: {len(s.log)} turns (version {s.version})[/dim]")
    for t in list(s.log)[-6:]:
        who = "you> " if t.role == "user" else "model> "
        text = t.text.strip().replace("\n", " ")
        out.print(f"[dim]{who}{escape(text[:200])}{'…' if len(text) > 200 else ''}[/dim]")
    return s


async def run_chat(opts: ChatOptions, out: Console, err: Console) -> int:
    async with Client(base_url=opts.base_url, backend=opts.backend) as client:
        client.scheduler.tiers.resolve(opts.priority)  # an unknown tier is a usage error, now
        rec = _Recorder(client)
        session = _load(opts, rec, opts.model, out)
        if session is None:
            model = await _pick_model(client, opts.model)
            session = Session(
                rec,
                model=model,
                context_window=opts.context_window,
                reserve_output=opts.max_tokens,
                system=opts.system,
            )
            if opts.session:
                _save(session, opts.session, opts.session_id)
                out.print(f"[dim]new session {escape(_where(opts))} (model {escape(model)})[/dim]")
        out.print(f"[dim]{escape(HELP)}[/dim]")
        params = {"max_tokens": opts.max_tokens, "priority": opts.priority, **opts.sampling}
        kept = opts.session is not None
        save_every = 16 if kept else None
        typed = sys.stdin.isatty()
        ok = True  # whether the last answer arrived: the exit status says so
        if session.pending is not None:
            out.print("[dim]an answer was cut off; continuing it:[/dim]")
            ok = await _turn(session, rec, None, params, save_every, opts, out, err)
        while True:
            try:
                line = await anyio.to_thread.run_sync(input, "you> ")
            except EOFError:
                out.print()
                break
            if not typed:
                out.print(escape(line))  # read from a pipe, nothing echoed it: the transcript shows it
            line = line.strip()
            if not line:
                continue
            if line in ("/quit", "/exit", "/q"):
                break
            if line == "/help":
                out.print(HELP)
                continue
            if line == "/stats":
                out.print(escape(stats_line(rec.last)) if rec.last is not None else "no answer yet")
                continue
            ok = await _turn(session, rec, line, params, save_every, opts, out, err)
        if kept:
            _save(session)
    return 0 if ok else 1


async def _turn(
    session: Session,
    rec: _Recorder,
    line: str | None,
    params: Mapping[str, Any],
    save_every: int | None,
    opts: ChatOptions,
    out: Console,
    err: Console,
) -> bool:
    """One answer, streamed; False if it failed (the error is shown, the chat goes on)."""
    started = False
    try:
        opened = (
            session.stream(line, save_every=save_every, **params)
            if line is not None
            else session.resume(save_every=save_every, **params)
        )
        async with opened as r:
            out.file.write("model> ")
            started = True
            async for text in r.text_deltas():
                out.file.write(text)
                out.file.flush()
        out.file.write("\n")
    except SessionBudgetError as e:
        err.print(f"[red]too long for the window:[/red] {escape(str(e))}")
        if line is not None and session.pending is None and len(session.turns):
            session.pop_turn()  # not sent: the next question must not carry it
            err.print("[dim]that message was not sent and is not kept; send a shorter one[/dim]")
        return False
    except SDKError as e:
        if started:
            out.file.write("\n")
            out.file.flush()
        err.print(f"[red]error:[/red] {escape(str(e))}")
        if session.pending is not None and opts.session:
            err.print("[dim]the part received is saved; the answer continues at the next start[/dim]")
            _save(session)
        return False
    if r.report is not None:
        out.print(f"[dim]{escape(report_line(r.report))}[/dim]")
    if opts.stats and rec.last is not None:
        out.print(f"[dim]{escape(stats_line(rec.last))}[/dim]")
    if opts.session:
        _save(session)
    return True


def _save(session: Session, place: str | None = None, session_id: str | None = None) -> None:
    """Save where given, else where the session was last loaded or saved."""
    try:
        session.save(place, session_id)
    except (SDKError, OSError) as e:  # a conflict with another writer, a store error
        raise ChatExit(2, f"cannot save the session: {e}") from None
