"""Child process of the store contract tests: a worker sharing one stored session.

Usage: python -m tests.session.store_worker URL SESSION_ID NAME ROUNDS

1. Loads the session, prints ``{"loaded": version}``, waits for a line on stdin, adds
   the turn "NAME first" and saves once: prints ``{"won": version}`` or
   ``{"conflict": [on_disk, ours]}`` (then loads again, adds the turn again and saves,
   printing ``{"retried": version}``).
2. ROUNDS times: load, add "NAME i", save; on SessionConflict load again and retry.
   Prints ``{"done": conflicts}``.
"""

from __future__ import annotations

import json
import sys

from sdk.session import Session, SessionConflict


def _say(**what: object) -> None:
    print(json.dumps(what), flush=True)


def _append(url: str, session_id: str, text: str) -> int:
    """Load, add ``text``, save; again from the top on a conflict. Returns the conflicts."""
    conflicts = 0
    while True:
        s = Session.load(url, session_id)
        s.add_user(text)
        try:
            s.save()
        except SessionConflict:
            conflicts += 1
            continue
        return conflicts


def main() -> None:
    url, session_id, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = Session.load(url, session_id)
    _say(loaded=s.version)
    sys.stdin.readline()
    s.add_user(f"{name} first")
    try:
        _say(won=s.save())
    except SessionConflict as e:
        _say(conflict=[e.on_disk, e.ours])
        _append(url, session_id, f"{name} first")
        _say(retried=True)
    conflicts = sum(_append(url, session_id, f"{name} {i}") for i in range(rounds))
    _say(done=conflicts)


if __name__ == "__main__":
    main()
