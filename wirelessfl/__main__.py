"""``python -m wirelessfl`` is the ``wirelessfl`` command."""

import sys

from wirelessfl.cli import main

sys.exit(main())
