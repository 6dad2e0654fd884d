"""The built distributions, installed as a user installs them: ``python
tests/package/check.py`` builds the sdist and the wheel, installs each into a bare
virtual environment (no extras, then the wheel with each extra alone), and runs a smoke
test there, from a directory outside the repository, so nothing imports the checkout:

- no extras: ``import sdk``, chunk prose and a Python file, count tokens, one request
  to a fake Messages server (a stdlib HTTP server answering one canned message), and a
  ``Session`` saved to a file and loaded back;
- ``[cli]``: ``seam --help``; ``[serve]``: ``python -m sdk.server --help``;
  ``[redis]``: a ``RedisStore`` made from a URL (no server needed to make one); ``[otel]``: a
  client with ``telemetry=True`` (the OpenTelemetry API alone, no SDK).

``make test`` runs it after the test suite. Exits non-zero on the first failure, with the
failing command's output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SMOKE = r"""
import json, sys, threading, tempfile, pathlib
from http.server import BaseHTTPRequestHandler, HTTPServer

import anyio
import sdk
from sdk import Client, chunk, count_tokens

assert "site-packages" in sdk.__file__, sdk.__file__  # the installed copy, not a checkout
text = "One sentence here. Another one there.\n\n" * 200
chunks = chunk(text, 64)
assert "".join(c.text for c in chunks) == text and all(c.tokens <= 64 for c in chunks)
code = "def f(x):\n    return x + 1\n\n\nclass A:\n    def g(self):\n        return 2\n" * 50
assert "".join(c.text for c in chunk(code, 48, kind="code", language="python")) == code
assert count_tokens("hello world") == 2

ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
          "content": [{"type": "text", "text": "hi there"}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}

class H(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(n))
        assert body["messages"][0]["content"] == "hello"
        out = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass

srv = HTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()

async def main():
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    async with Client(base_url=url, api_key="test-key-123") as c:
        msg = await c.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hello"}])
    assert msg.text == "hi there", msg

anyio.run(main)
srv.shutdown()

from sdk.session import Session
d = pathlib.Path(tempfile.mkdtemp())
s = Session(None, model="m", context_window=4096, system="be brief")
s.add_user("hello")
s.save(d / "s1.json")
assert len(Session.load(d / "s1.json").turns) == 1
print("smoke: ok")
"""

EXTRA_CHECKS = {
    "cli": [
        ["seam", "--help"],
        ["seam", "llama", "--help"],
        ["python", "-c", "from sdk.cli._llama import TEMPLATE; assert TEMPLATE.is_file(), TEMPLATE"],
    ],
    "serve": [["python", "-m", "sdk.server", "--help"]],
    "redis": [["python", "-c", "from sdk.session import RedisStore; RedisStore('redis://127.0.0.1:1/0')"]],
    # the API alone: a client traces (into the API's no-op providers) without an SDK installed
    "otel": [["python", "-c", "import sdk; assert sdk.Client(api_key='k', telemetry=True).telemetry"]],
}


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAILED: {' '.join(cmd)}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}", file=sys.stderr)
        sys.exit(1)


def venv(where: Path, artifact: Path, extra: str | None, outside: Path) -> Path:
    run([sys.executable, "-m", "venv", str(where)], outside)
    py = where / "bin" / "python"
    target = str(artifact) + (f"[{extra}]" if extra else "")
    run([str(py), "-m", "pip", "install", "--quiet", target], outside)
    return where / "bin"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="seam-dist-") as tmp:
        t = Path(tmp)
        dist = t / "dist"
        run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), str(ROOT)], ROOT)
        wheel = next(dist.glob("*.whl"))
        sdist = next(dist.glob("*.tar.gz"))
        with tarfile.open(sdist) as tar:
            names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        missing = {
            "docs/index.md",
            "mkdocs.yml",
            "README.md",
            "sdk/chunking/_native.c",
            "sdk/chunking/_kernels.c",
            "sdk/chunking/_scan.h",
            "sdk/chunking/_prose.h",
            "sdk/cli/gemma3.jinja",
        } - names
        stray = sorted(n for n in names if n.startswith("tests/") or n.endswith((".so", ".pyc")))
        if missing or stray:
            print(f"FAILED: the sdist lacks {sorted(missing)} or carries {stray[:10]}", file=sys.stderr)
            return 1
        outside = t / "elsewhere"
        outside.mkdir()
        (outside / "smoke.py").write_text(SMOKE)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        for name, artifact, extra in [
            ("wheel", wheel, None),
            ("sdist", sdist, None),
            *(("wheel", wheel, e) for e in EXTRA_CHECKS),
        ]:
            label = f"{name}{f'[{extra}]' if extra else ''}"
            bin_ = venv(t / f"venv-{label}", artifact, extra, outside)
            path_env = {**env, "PATH": f"{bin_}{os.pathsep}{env.get('PATH', '')}"}
            run([str(bin_ / "python"), "smoke.py"], outside, path_env)
            for cmd in EXTRA_CHECKS.get(extra or "", []):
                run(cmd, outside, path_env)
            print(f"{label}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
