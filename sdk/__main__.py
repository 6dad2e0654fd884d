"""``python -m sdk``: the ``seam`` command line (needs the ``cli`` extra)."""

import sys

from sdk.cli import main

if __name__ == "__main__":
    sys.exit(main())
