"""`python -m knee`: the command line (knee.cli)."""

import sys

from knee.cli import main

sys.exit(main())
