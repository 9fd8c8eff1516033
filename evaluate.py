"""``python evaluate.py ...``: the same command as the installed ``nlgmetrics-evaluate`` (see nlgmetrics/cli)."""

import sys

from nlgmetrics.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
