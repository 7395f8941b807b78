import sys

from knee.cli import main

sys.exit(main())
