"""``SEAM_INTERPRETED=1`` runs the chunking engine with no compiled part, as an install
without a compiler would (and says so in the log); ``SEAM_NO_GUARD=1`` switches off the
guard around grammars' scanners alone; ``SEAM_OFF=name,...`` single compiled functions.
Each is read once, at import: a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sdk.chunking import _accel

# Run from a process that has the compiled parts (the suite's interpreted run has none).
pytestmark = pytest.mark.skipif(_accel.INTERPRETED, reason="already interpreted")

PROBE = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
import sdk.chunking
from sdk.chunking import _accel, chunk
print("native", _accel.native is not None, _accel.kernels is not None, sdk.chunking.native_passes())
print("guard", _accel.guard is not None)
text = "def f(x):\\n    return x\\n" * 40 + "# Notes\\n\\nProse after the code. " * 30
print("chunks", [(c.start, c.end, c.tokens) for c in chunk(text, max_tokens=24)])
"""


def _run(**env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SEAM_INTERPRETED", "SEAM_NO_GUARD", "SEAM_OFF")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_the_switches_turn_the_compiled_parts_off_and_the_chunks_stay_the_same() -> None:
    built = _run()
    interpreted = _run(SEAM_INTERPRETED="1")
    unguarded = _run(SEAM_NO_GUARD="1")
    assert "native True True True" in built and "guard True" in built
    assert "native False False False" in interpreted and "guard False" in interpreted
    assert "native True True True" in unguarded and "guard False" in unguarded
    assert any(line.startswith("INFO sdk.chunking: interpreted") for line in interpreted)
    assert not any("interpreted" in line for line in built)  # nothing said where all is built
    chunks = [
        next(line for line in out if line.startswith("chunks")) for out in (built, interpreted, unguarded)
    ]
    assert chunks[0] == chunks[1] == chunks[2]


def test_single_compiled_functions_switch_off_and_the_chunks_stay_the_same() -> None:
    built = _run()
    some_off = _run(SEAM_OFF="pack, merge,char_ends,prefix_counts,level_cuts,first_found")
    chunks = [next(line for line in out if line.startswith("chunks")) for out in (built, some_off)]
    assert chunks[0] == chunks[1]
    assert "native True True True" in some_off  # (the modules stay; those functions are not used)


@pytest.mark.parametrize("value", ["0", "", "false", "no"])
def test_a_switch_set_to_a_false_value_is_off(value: str) -> None:
    assert "native True True True" in _run(SEAM_INTERPRETED=value)
