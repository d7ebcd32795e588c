"""``python -m inference.bench``: see ``inference.bench.decode``."""

from inference.bench.decode import cli

cli()
