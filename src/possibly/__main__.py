import sys

from possibly.cli import main

sys.exit(main())
