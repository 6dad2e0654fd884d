"""Child process of the crash test: one initial save, then saves in a tight loop.

Usage: python -m tests.session.crash_saver PATH SAVES
Prints the version after every save (so the parent can kill it mid-run). Turn i holds
the text "turn i" and the save that adds it writes version i + 2, so a file is
consistent when it holds exactly version - 1 turns, in order.
"""

from __future__ import annotations

import sys

from sdk.session import Session


def main() -> None:
    path, saves = sys.argv[1], int(sys.argv[2])
    s = Session(None, model="m", context_window=10_000, reserve_output=100)
    print(s.save(path), flush=True)
    for i in range(saves):
        s.log.append("user", f"turn {i}", estimate=5)
        print(s.save(), flush=True)


if __name__ == "__main__":
    main()
