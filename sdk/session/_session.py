"""Session: the conversation kept on the client, fitted to the window on purpose.

The session owns the turn log and asks its policy which turns go into each request;
the client is injected (anything with ``stream(**request)`` and ``create(**request)``,
see :class:`SessionClient`), so the session knows turns and tokens, not transports.

While an answer streams, the session records what the consumer has been handed (the
cursor, :class:`PendingAnswer`); it is saved with the session, so after a crash
``Session.load(...)`` and :meth:`Session.resume` ask for the rest of the answer with
the text so far as an assistant prefill, and the stored turn ends complete, each
character once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, overload

import anyio
import orjson

from .._models import Usage
from ..chunking import ChunkKind, chunk
from ..tokens import DEFAULT_ENCODING, EncodingSpec, count_tokens
from ._answer import PendingAnswer, SessionClient, SessionError, SessionStream
from ._cache import Breakpoint, CacheMode, CacheReport, min_cacheable_tokens
from ._policy import DEFAULT_POLICY, ContextPolicy, FitReport
from ._render import render
from ._schema import DocumentError, check_document
from ._store import SessionFileError
from ._stores import FileStore, SessionStore, resolve
from ._turns import MESSAGE_OVERHEAD, Turn, TurnLog, block_tokens, normalize_content

__all__ = ["DocumentReport", "Session"]

# Output tokens kept free, and each answer's max_tokens, unless given (at most a quarter
# of the window). Bounded: an answer's stream on llama-server runs on after a client
# that dies, up to its max_tokens, holding a slot all that time.
DEFAULT_RESERVE = 1024

SUMMARY_PROMPT = (
    "Summarize the conversation turns below for someone who will continue the conversation "
    "without seeing them. Keep names, numbers, decisions and open questions. Be brief."
)
MAP_PROMPT = "Extract what a later question about the whole document could need from this part. Be brief."


@dataclass(frozen=True, slots=True)
class DocumentReport:
    """What :meth:`Session.add_document` did: ``mode`` is ``"fit"`` (the chunks went in as
    they are) or ``"map"`` (each chunk went through the client and the results went in)."""

    mode: Literal["fit", "map"]
    chunks: int
    document_tokens: int
    kept_tokens: int
    turn: int


class Session:
    """A conversation kept on the client.

    ``context_window`` and ``reserve_output`` give the input budget (``reserve_output``,
    each answer's ``max_tokens`` too, defaults to a quarter of the window, at most 1024:
    pass ``max_tokens=`` to :meth:`stream` for a longer answer); the local estimates
    are scaled by what the server reports (``scale`` only grows), so a model whose
    tokenizer counts more than the local one still gets requests that fit.

    ``cache``: prompt-cache breakpoints (:mod:`sdk.session._cache`): ``"auto"`` places
    them on the stable prefix (the system prompt and tools, the pinned head, what the
    previous request sent, the newest turn), at most four, none where the prompt up to
    it is under the model's minimum cacheable length (``cache_min_tokens`` overrides
    the model's); ``"off"`` places none; ``None`` (the default) is ``"auto"`` on the
    hosted API and ``"off"`` elsewhere (llama-server and vLLM cache prefixes by
    themselves). :attr:`cache_report` says what the cache served.
    """

    def __init__(
        self,
        client: SessionClient | None,
        *,
        model: str,
        context_window: int | None = None,
        system: str | Sequence[Mapping[str, Any]] | None = None,
        reserve_output: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        policy: ContextPolicy | None = None,
        summarize: bool = False,
        summary_tokens: int = 512,
        cache: CacheMode | None = None,
        cache_min_tokens: int | None = None,
        echoes_prefill: bool | None = None,
        encoding: EncodingSpec = DEFAULT_ENCODING,
    ) -> None:
        if cache not in (None, "auto", "off"):
            raise ValueError(f"cache must be 'auto', 'off' or None, got {cache!r}")
        for name, v in (
            ("context_window", context_window),
            ("reserve_output", reserve_output),
            ("cache_min_tokens", cache_min_tokens),
        ):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.client = client
        self.model = model
        self.context_window: int | None = None
        self._reserve = reserve_output  # as given (None: a quarter of the window, at most 1024)
        self.reserve_output = reserve_output or DEFAULT_RESERVE
        if context_window is not None:
            self.set_window(context_window)
        self.system = normalize_content(system) if system else ()
        self.tools = _copy_tools(tools) if tools else ()
        self.policy: ContextPolicy = policy or DEFAULT_POLICY
        self.summarize = summarize
        self.summary_tokens = summary_tokens
        self.cache: CacheMode | None = cache
        self.cache_min_tokens = cache_min_tokens
        # The breakpoints of the last request made, and the turn it ended with (the next
        # request's "stable" breakpoint, when it starts with it unchanged).
        self.last_breakpoints: tuple[Breakpoint, ...] = ()
        self._sent_last: int | None = None
        self._marker_count: tuple[str, int] | None = None
        self.echoes_prefill = echoes_prefill
        self.log = TurnLog(encoding)
        self.fixed_tokens = sum(block_tokens(b, encoding) for b in self.system) + sum(
            count_tokens(orjson.dumps(t).decode(), encoding) for t in self.tools
        )
        self.scale = 1.0
        self.version = 0
        self.store: SessionStore | None = None  # where it was last loaded or saved
        self.session_id: str | None = None
        self.path: str | None = None  # the file, when the store is a FileStore
        self._location: str | None = None
        self.pending: PendingAnswer | None = None
        self.last_report: FitReport | None = None
        self.summary: tuple[int, str] | None = None  # (cut it covers, text)

    # ---- the log ----------------------------------------------------------------------
    @property
    def turns(self) -> TurnLog:
        return self.log

    def add_user(self, content: str | Sequence[Mapping[str, Any]], *, pin: bool = False) -> Turn:
        return self.log.append("user", content, pinned=pin)

    def add_assistant(
        self,
        content: str | Sequence[Mapping[str, Any]],
        *,
        pin: bool = False,
        usage: Usage | None = None,
        request_estimate: int | None = None,
    ) -> Turn:
        """An answer (a ``tool_use`` turn when it holds tool_use blocks)."""
        return self.log.append(
            "assistant", content, pinned=pin, usage=usage, request_estimate=request_estimate
        )

    def add_tool_result(
        self,
        tool_use_id: str,
        content: str | Sequence[Mapping[str, Any]],
        *,
        is_error: bool = False,
        pin: bool = False,
    ) -> Turn:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
        if is_error:
            block["is_error"] = True
        return self.log.append("user", [block], pinned=pin)

    def pop_turn(self) -> Turn:
        """Remove the last turn and give it back: a question the window cannot hold (a
        :class:`SessionBudgetError` leaves it logged, as the caller's data) or one sent by
        mistake. Not while an answer is pending (``discard_pending()`` first)."""
        if self.pending is not None:
            raise SessionError("an answer is pending: call resume() or discard_pending() first")
        if not len(self.log):
            raise SessionError("the log is empty")
        turn = self.log.pop()
        if self.summary is not None and self.summary[0] > len(self.log):
            self.summary = None  # it covered the removed turn
        return turn

    def pin(self, turn_id: int, pinned: bool = True) -> Turn:
        return self.log.set_pinned(turn_id, pinned)

    @property
    def usage(self) -> Usage:
        """Everything the server reported for this session's answers, summed."""
        total = Usage()
        for t in self.log:
            if t.usage is not None:
                total = total + t.usage
        return total

    def set_window(self, context_window: int) -> None:
        """The model's context window; ``reserve_output`` (unless given) becomes a quarter
        of it, at most 1024."""
        if isinstance(context_window, bool) or not isinstance(context_window, int) or context_window < 2:
            raise ValueError(f"context_window must be an int of at least 2, got {context_window!r}")
        reserve = self._reserve if self._reserve is not None else min(DEFAULT_RESERVE, context_window // 4)
        if reserve >= context_window:
            raise ValueError(f"reserve_output ({reserve}) must be below context_window ({context_window})")
        self.context_window = context_window
        self.reserve_output = max(1, reserve)

    async def resolve_window(self) -> int:
        """The context window: as given, or asked once of the client (the server's model
        list or ``/props``, or a table of hosted models); a :class:`SessionError` when
        nothing says it, naming what to pass."""
        if self.context_window is None:
            n = await self._client().context_window(self.model)
            if n is None:
                raise SessionError(
                    f"the context window of {self.model!r} is not known (the server does not say "
                    "it): pass Session(..., context_window=N)"
                )
            self.set_window(n)
        assert self.context_window is not None
        return self.context_window

    @property
    def budget(self) -> int:
        """Input budget in local-estimate tokens (never negative)."""
        if self.context_window is None:
            raise SessionError(
                "the context window is not known yet: pass Session(..., context_window=N), or "
                "await session.resolve_window() (a stream does it by itself)"
            )
        return max(0, int((self.context_window - self.reserve_output) / self.scale))

    # ---- fitting and requests ---------------------------------------------------------
    def fit(self, *, prefill: str = "") -> FitReport:
        """Ask the policy which turns go in; raises SessionBudgetError before anything is sent."""
        fixed = self.fixed_tokens
        if prefill:
            fixed += count_tokens(prefill, self.log.encoding) + MESSAGE_OVERHEAD
        extra = self.summary_tokens if self.summarize else 0
        return self.policy.fit(
            self.log, budget=self.budget, fixed=fixed, extra=extra, previous=self.last_report
        )

    def request(self, *, prefill: str = "", **extra: Any) -> tuple[dict[str, Any], FitReport]:
        """The request body for the log as it is (plus an assistant prefill), and its report."""
        report = self.fit(prefill=prefill)
        self.last_report = report
        return self._params(report, prefill, extra), report

    def _params(self, report: FitReport, prefill: str, extra: Mapping[str, Any]) -> dict[str, Any]:
        marker = report.marker
        if marker is not None and self.summary is not None and self.summary[0] == report.cut:
            marker = f"{marker}\nSummary of the left-out turns:\n{self.summary[1]}"
        auto = self.cache_mode == "auto"
        rendered = render(
            self.log,
            report,
            marker=marker,
            system=self.system,
            fixed=int(self.fixed_tokens * self.scale),
            marker_tokens=0 if marker is None or not auto else self._marker_tokens(marker),
            scale=self.scale,
            track=auto,
        )
        tools = [dict(t) for t in self.tools] if self.tools else None
        breakpoints: list[Breakpoint] = []
        if auto:
            breakpoints = rendered.breakpoints(
                minimum=self.cache_min_tokens or min_cacheable_tokens(self.model),
                stable_turn=self._sent_last if report.prefix_stable else None,
                tools=tools is not None,
            )
            rendered.place(breakpoints, tools)
        self.last_breakpoints = tuple(breakpoints)
        self._sent_last = report.kept[-1] if report.kept else None
        messages = rendered.messages
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.reserve_output}
        if rendered.system is not None:
            params["system"] = rendered.system
        if tools is not None:
            params["tools"] = tools
        params.update(extra)
        params["messages"] = messages
        return params

    def _marker_tokens(self, marker: str) -> int:
        """The marker's estimate (counted once per marker text: it changes only when
        the cut moves)."""
        known = self._marker_count
        if known is None or known[0] != marker:
            known = self._marker_count = (marker, count_tokens(marker, self.log.encoding) + MESSAGE_OVERHEAD)
        return known[1]

    @property
    def cache_mode(self) -> CacheMode:
        """``cache`` as it applies: ``"auto"`` on the hosted API unless set."""
        if self.cache is not None:
            return self.cache
        return "auto" if self.client is not None and self.client.hosted else "off"

    @property
    def cache_report(self) -> CacheReport:
        """What the prompt cache served this session's answers, from the server's usage
        reports (the hosted API's cache, llama-server's and vLLM's prefix caches alike)."""
        requests = inputs = created = read = 0
        for t in self.log:
            u = t.usage
            if u is None:
                continue
            requests += 1
            inputs += u.input_tokens or 0
            created += u.cache_creation_input_tokens or 0
            read += u.cache_read_input_tokens or 0
        return CacheReport(requests, inputs, created, read)

    def _client(self) -> SessionClient:
        if self.client is None:
            raise SessionError("this session has no client (pass one to Session(...) or Session.load(...))")
        return self.client

    # ---- streaming --------------------------------------------------------------------
    def stream(
        self,
        message: str | Sequence[Mapping[str, Any]] | None = None,
        *,
        pin: bool = False,
        save_every: int | None = None,
        **extra: Any,
    ) -> SessionStream:
        """Send ``message`` (or the log as it is) and stream the answer.

        The user turn is logged at once (it is the caller's data); the answer is logged
        when it is complete. ``save_every``: with a session path, save the cursor after
        every that many text deltas and when the block ends.
        """
        if self.pending is not None:
            raise SessionError("an answer is pending: call resume() or discard_pending() first")
        self._client()
        if message is not None:
            self.add_user(message, pin=pin)
        if not len(self.log):
            raise SessionError("nothing to send: the log is empty")
        self.pending = PendingAnswer(after=len(self.log) - 1)
        return SessionStream(self, save_every, extra)

    def resume(self, *, save_every: int | None = None, **extra: Any) -> SessionStream:
        """Continue the pending answer from what the consumer already has."""
        if self.pending is None:
            raise SessionError("no answer is pending")
        if self.pending.after != len(self.log) - 1:
            raise SessionError("the log changed after the pending answer's turn; discard_pending() first")
        self._client()
        return SessionStream(self, save_every, extra)

    def discard_pending(self) -> Turn | None:
        """Give up the pending answer; text already received is kept as an (incomplete) answer."""
        pending, self.pending = self.pending, None
        if pending is None or not pending.text:
            return None
        return self.add_assistant(
            pending.text, usage=pending.usage, request_estimate=pending.request_estimate
        )

    async def _summarize_if_needed(self, report: FitReport) -> FitReport:
        if not self.summarize or not report.elided:
            return report
        if self.summary is not None and self.summary[0] == report.cut:
            return replace(report, summarized=True)
        start = 0
        parts = []
        if self.summary is not None and self.summary[0] < report.cut:
            start = self.summary[0]
            parts.append(f"Earlier summary:\n{self.summary[1]}")
        newly = [i for i in report.elided if i >= start]
        parts += [f"{self.log[i].role}: {self.log[i].text}" for i in newly]
        msg = await self._client().create(
            model=self.model,
            max_tokens=self.summary_tokens,
            system=SUMMARY_PROMPT,
            messages=[{"role": "user", "content": "\n\n".join(parts)}],
        )
        text = msg.text
        if count_tokens(text, self.log.encoding) > self.summary_tokens:  # the budget reserved for it
            text = self._first_tokens(text, self.summary_tokens)
        self.summary = (report.cut, text)
        return replace(report, summarized=True)

    def _first_tokens(self, text: str, tokens: int) -> str:
        pieces = chunk(text, max_tokens=max(1, tokens), kind="text", encoding=self.log.encoding)
        return pieces[0].text if pieces else ""

    # ---- long inputs ------------------------------------------------------------------
    async def add_document(
        self,
        text: str,
        kind: ChunkKind = "auto",
        *,
        chunk_tokens: int = 2048,
        max_share: float = 0.5,
        pin: bool = True,
        instruction: str = MAP_PROMPT,
        concurrency: int = 4,
        map_tokens: int = 512,
    ) -> DocumentReport:
        """Add a long text: as its chunks when they fit in ``max_share`` of the budget
        beside what must stay, else as the results of a map step over the chunks
        (``concurrency`` requests at a time, in the document's order)."""
        if not 0.0 < max_share <= 1.0:
            raise ValueError(f"max_share must be in (0, 1], got {max_share!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
        pieces = chunk(text, max_tokens=chunk_tokens, kind=kind, encoding=self.log.encoding)
        doc_tokens = sum(c.tokens for c in pieces)
        n = len(pieces)
        must_stay = self.fixed_tokens + self.log.pinned_tokens_before(len(self.log))
        room = int(self.budget * max_share) - must_stay
        if doc_tokens + MESSAGE_OVERHEAD <= room:
            blocks = [{"type": "text", "text": c.text} for c in pieces] or [{"type": "text", "text": ""}]
            turn = self.add_user(blocks, pin=pin)
            return DocumentReport("fit", n, doc_tokens, turn.estimate, turn.id)
        client = self._client()
        results: list[str] = [""] * n
        limiter = anyio.CapacityLimiter(concurrency)

        failed: list[Exception] = []

        async def one(i: int) -> None:
            try:
                async with limiter:
                    msg = await client.create(
                        model=self.model,
                        max_tokens=map_tokens,
                        messages=[
                            {
                                "role": "user",
                                "content": f"{instruction}\n\n[part {i + 1}/{n}]\n{pieces[i].text}",
                            }
                        ],
                    )
            except Exception as e:  # the first failure stops the rest and is raised as it is
                failed.append(e)
                tg.cancel_scope.cancel()
                return
            results[i] = msg.text

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
        if failed:
            raise failed[0]  # the log is untouched
        header = {"type": "text", "text": f"[a document of {doc_tokens} tokens in {n} parts, each condensed]"}
        blocks = [header] + [
            {"type": "text", "text": f"[part {i + 1}/{n}] {r}"} for i, r in enumerate(results)
        ]
        turn = self.add_user(blocks, pin=pin)
        return DocumentReport("map", n, doc_tokens, turn.estimate, turn.id)

    # ---- persistence ------------------------------------------------------------------
    def to_document(self) -> dict[str, Any]:
        """Plain JSON types only (the store checks the round trip)."""
        last = self.last_report
        p = self.pending
        return {
            "session": {
                "model": self.model,
                "system": [dict(b) for b in self.system],
                "tools": [dict(t) for t in self.tools],
                "context_window": self.context_window,
                "reserve_output": self._reserve,
                "encoding": _stored_encoding(self.log.encoding),
                "scale": self.scale,
                "summarize": self.summarize,
                "summary_tokens": self.summary_tokens,
                "summary": list(self.summary) if self.summary else None,
                "epoch": self.log.epoch,
                "last_fit": [last.cut, last.turns, last.epoch, last.marker] if last else None,
            },
            "turns": [
                {
                    "role": t.role,
                    "content": [dict(b) for b in t.content],
                    "pinned": t.pinned,
                    "estimate": t.estimate,
                    "usage": _usage_list(t.usage),
                    "request_estimate": t.request_estimate,
                }
                for t in self.log
            ],
            "pending": None
            if p is None
            else {
                "after": p.after,
                "text": p.text,
                "usage": _usage_list(p.usage),
                "requests": p.requests,
                "request_estimate": p.request_estimate,
            },
        }

    def save(
        self, target: str | os.PathLike[str] | SessionStore | None = None, session_id: str | None = None
    ) -> int:
        """Write the session atomically; raises SessionConflict if the store holds a newer
        version (another writer saved since this session was loaded or saved).

        ``save(path)`` writes a session file; ``save(store_or_url, session_id)`` writes to
        any store (:func:`~sdk.session.open_store`); ``save()`` writes where the session was
        last loaded or saved. A file path is resolved once (absolute, symbolic links
        followed) and kept in ``self.path``: every spelling of one file is the same file,
        and a link stays a link (the file it points to is what is replaced). A new place
        that already holds a session is never written over.
        """
        if target is None:
            if self.store is None or self.session_id is None:
                raise SessionError("no path: pass one to save() the first time")
            store, sid = self.store, self.session_id if session_id is None else session_id
        else:
            store, sid = resolve(target, session_id)
        here = store.location(sid)
        base = self.version if here == self._location else self._version_at(store, sid)
        self.version = store.save(sid, self.to_document(), base)
        self._place(store, sid)
        return self.version

    async def asave(
        self, target: str | os.PathLike[str] | SessionStore | None = None, session_id: str | None = None
    ) -> int:
        """:meth:`save` in a worker thread (stores block on disks and sockets)."""
        return await anyio.to_thread.run_sync(self.save, target, session_id)

    def _version_at(self, store: SessionStore, session_id: str) -> int:
        # A new place: a session already there is another one; never write over it blindly.
        if store.version(session_id):
            return 0
        return self.version

    def _place(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._location = store.location(session_id)
        self.path = store.path_of(session_id) if isinstance(store, FileStore) else None

    @overload
    @classmethod
    def load(
        cls, path: str | os.PathLike[str], client: SessionClient | None = None, **options: Any
    ) -> Session: ...

    @overload
    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | SessionStore,
        session_id: str,
        client: SessionClient | None = None,
        **options: Any,
    ) -> Session: ...

    @classmethod
    def load(cls, path: str | os.PathLike[str] | SessionStore, *args: Any, **options: Any) -> Session:
        """Restore a saved session (no text is re-tokenized); ``options`` as for ``Session``.

        ``Session.load(path, client)`` reads a session file; ``Session.load(store_or_url,
        session_id, client)`` any store (``"sqlite:///chats.db"``,
        ``"redis://host:6379/0"``, a directory, a :class:`SessionStore`). Every value of
        the document is checked before any is used: a missing value or one of the wrong
        type raises :class:`SessionFileError` naming its place in the document.
        """
        if len(args) > 2:
            raise TypeError(f"Session.load takes at most 3 positional arguments ({len(args) + 1} given)")
        if args and not isinstance(args[0], str):  # Session.load(path, client)
            args = (None, *args)
            if len(args) > 2:
                raise TypeError("Session.load(path, client) takes no session id after the client")
        named = {"session_id": options.pop("session_id", None), "client": options.pop("client", None)}
        for name, value in zip(named, args):
            if named[name] is not None:
                raise TypeError(f"Session.load got {name} twice")
            named[name] = value
        session_id, client = named["session_id"], named["client"]
        store, sid = resolve(path, session_id)
        self = cls.from_document(store.load(sid), client, where=store.where(sid), **options)
        self._place(store, sid)
        return self

    @classmethod
    async def aload(
        cls,
        store: str | os.PathLike[str] | SessionStore,
        session_id: str | None = None,
        client: SessionClient | None = None,
        **options: Any,
    ) -> Session:
        """:meth:`load` in a worker thread (stores block on disks and sockets)."""

        def load() -> Session:
            if session_id is None:
                if isinstance(store, SessionStore):
                    raise TypeError("a session id is needed with a store")
                return cls.load(store, client, **options)
            return cls.load(store, session_id, client, **options)

        return await anyio.to_thread.run_sync(load)

    @classmethod
    def from_document(
        cls, doc: dict[str, Any], client: SessionClient | None = None, *, where: str = "", **options: Any
    ) -> Session:
        """A session from a stored document (as a store's ``load`` returns it); ``where``
        names it in errors. The session has no place to save to until :meth:`save` names one."""
        p = where
        try:
            check_document(doc)
        except DocumentError as e:
            raise SessionFileError(f"{p}: bad {e.where}: {e.problem}", path=p, where=e.where) from None
        s = doc["session"]
        where = "session"
        encoding = options.pop("encoding", s["encoding"])
        if encoding is None:
            raise SessionFileError(
                f"{p}: bad session.encoding: null (the session was counted with a tokenizer "
                "object, which a file cannot hold: pass it again, Session.load(..., encoding=tokenizer))",
                path=p,
                where="session.encoding",
            )
        try:  # the types are right; what is left are values that do not fit together
            self = cls(
                client,
                model=s["model"],
                context_window=s["context_window"],
                system=s["system"] or None,
                reserve_output=s["reserve_output"],
                tools=s["tools"] or None,
                summarize=s["summarize"],
                summary_tokens=s["summary_tokens"],
                encoding=encoding,
                **options,
            )
            self.scale = float(s["scale"])
            self.summary = (s["summary"][0], s["summary"][1]) if s["summary"] else None
            for i, t in enumerate(doc["turns"]):
                where = f"turns[{i}]"
                self.log.append(
                    t["role"],
                    t["content"],
                    pinned=t["pinned"],
                    usage=_usage_of(t["usage"]),
                    request_estimate=t["request_estimate"],
                    estimate=t["estimate"],
                )
        except ValueError as e:
            raise SessionFileError(f"{p}: bad {where}: {e}", path=p, where=where) from None
        self.log.epoch = s["epoch"]
        if s["last_fit"]:
            cut, turns, epoch, marker = s["last_fit"]
            self.last_report = FitReport(
                kept=(),
                elided=(),
                elided_tokens=0,
                tokens=0,
                budget=0,
                cut=cut,
                turns=turns,
                epoch=epoch,
                prefix_stable=False,
                marker=marker,
            )
        pd = doc["pending"]
        if pd is not None:
            self.pending = PendingAnswer(
                pd["after"],
                pd["text"],
                _usage_of(pd["usage"]) or Usage(),
                pd["requests"],
                pd["request_estimate"],
            )
        self.version = int(doc["version"])
        return self


def _copy_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Tool definitions are not content blocks (most have no ``type``): each must be a JSON
    object; copied, so later edits by the caller cannot change the counted tokens."""
    out = []
    for t in tools:
        if not isinstance(t, Mapping):
            raise TypeError(f"a tool definition must be a mapping, got {t!r}")
        out.append(orjson.loads(orjson.dumps(t)))
    return tuple(out)


def _usage_list(u: Usage | None) -> list[int | None] | None:
    if u is None:
        return None
    return [u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens]


def _usage_of(v: Any) -> Usage | None:
    return None if v is None else Usage(*v)


def _stored_encoding(encoding: EncodingSpec) -> str | None:
    """What a session file keeps of its encoding: a tiktoken name or a tokenizer.json
    path; ``None`` for a tokenizer object (passed again at load)."""
    if isinstance(encoding, str):
        return encoding
    if isinstance(encoding, os.PathLike):
        return os.fspath(encoding)
    return None
