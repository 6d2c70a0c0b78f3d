# SPDX-License-Identifier: GPL-2.0
"""python3 -m ecnproxy COMMAND [ARGS...]: see cli.py."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
