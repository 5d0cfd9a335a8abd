"""`python -m sglang_sim` entry point."""

import sys

from sglang_sim.cli import main

if __name__ == "__main__":
    sys.exit(main())
