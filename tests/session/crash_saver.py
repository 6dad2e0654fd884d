"""Child process of the crash tests: one initial save, then saves in a tight loop.

Usage: python -m tests.session.crash_saver TARGET SAVES [SESSION_ID]
TARGET is a session file, or with SESSION_ID a store URL (sqlite:///..., redis://...).
Prints the version after every save (so the parent can kill it mid-run). Turn i holds
the text "turn i" and the save that adds it writes version i + 2, so a stored session
is consistent when it holds exactly version - 1 turns, in order.
"""

from __future__ import annotations

import sys

from sdk.session import Session


def main() -> None:
    target, saves = sys.argv[1], int(sys.argv[2])
    session_id = sys.argv[3] if len(sys.argv) > 3 else None
    s = Session(None, model="m", context_window=10_000, reserve_output=100)
    print(s.save(target, session_id), flush=True)
    for i in range(saves):
        s.log.append("user", f"turn {i}", estimate=5)
        print(s.save(), flush=True)


if __name__ == "__main__":
    main()
