"""``python -m claw_memory.cli``: the ``claw-memory`` command."""

import sys

from claw_memory.cli import main

sys.exit(main())
