"""`python -m notarium_search` is the `notarium-search` command."""

import sys

from notarium_search.cli import main

sys.exit(main())
