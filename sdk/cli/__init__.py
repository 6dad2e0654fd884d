"""``seam``: the command line (``pip install 'seam-llm[cli]'``; also ``python -m sdk``).

``seam chunk`` and ``seam count`` work on files and folders (``.gitignore`` obeyed),
``seam chat`` is a streaming chat kept in a session file, ``seam serve`` starts the
scheduling server and ``seam bench latency`` measures per-tier latency against a
server. Exit statuses: 0 success, 1 a request failed, 2 a usage or I/O error, 3 an
oversize chunk (``seam chunk``), 141 the output closed before it was all written.
"""

from ._app import EXIT_ERROR, EXIT_OK, EXIT_OVERSIZE, EXIT_PIPE, EXIT_USAGE, app, main

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_OVERSIZE", "EXIT_PIPE", "EXIT_USAGE", "app", "main"]
