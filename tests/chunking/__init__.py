"""Chunking tests.

Property tests take their example counts from :func:`examples`: a default small enough
for CI, or ``SEAM_HYPOTHESIS_EXAMPLES`` from the environment for a deeper run, e.g.
``SEAM_HYPOTHESIS_EXAMPLES=10000 pytest tests/chunking tests/test_tokens.py``.
"""

from __future__ import annotations

import os

__all__ = ["ENV", "examples"]

ENV = "SEAM_HYPOTHESIS_EXAMPLES"


def examples(default: int) -> int:
    """Examples for one property test: ``default``, or the count the environment asks for."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return default
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{ENV} must be a positive integer, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"{ENV} must be a positive integer, got {raw!r}")
    return n
