"""`python -m gpusizer ...`: the same command line as the `gpusizer` console script (gpusizer/cli.py)."""

import sys

from gpusizer import cli

if __name__ == "__main__":
    sys.exit(cli.main())
