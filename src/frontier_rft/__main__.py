"""`python -m frontier_rft ...`: the `frontier` command from a plain checkout (PYTHONPATH=src)."""

import sys

from frontier_rft.cli.main import main

sys.exit(main())
