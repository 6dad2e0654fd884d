"""Helpers for the command-line tests: run ``seam`` in-process, and find Chromium."""

from __future__ import annotations

import os
import shutil

import pytest
from typer.testing import CliRunner

from sdk.cli import app


@pytest.fixture
def seam() -> CliRunner:
    return CliRunner()


def run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    """``seam ARGS`` in this process: (exit status, stdout, stderr)."""
    result = runner.invoke(app, list(args), prog_name="seam")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's headless Chromium (``make test`` installs it); missing in CI is a failure."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (make test installs it with apt-get)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path
