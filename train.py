"""``python train.py ...``: the same command as the installed ``nlgmetrics-train`` (see nlgmetrics/cli)."""

import sys

from nlgmetrics.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
