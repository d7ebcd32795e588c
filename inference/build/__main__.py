"""``python -m inference.build``: see ``inference.build.cli``."""

from .cli import main

raise SystemExit(main())
