"""``python -m shadowzarr.cli``."""

from __future__ import annotations

import sys

from shadowzarr.cli import main

sys.exit(main())
