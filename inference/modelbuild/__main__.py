"""``python -m inference.modelbuild``: see ``inference.modelbuild.cli``."""

from .cli import main

raise SystemExit(main())
