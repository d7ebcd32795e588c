"""Prints the stages' table and the parameter table (docs/sampling.md's), made from the
declarations, or rewrites them, the package docstring's numbered list and the pages' words
(static/playground/js/stage-words.js).

python -m inference.sampling.stages                           # print the two tables
python -m inference.sampling.stages --write docs/sampling.md  # rewrite the doc's tables, the docstring's list, the pages' words
"""

from __future__ import annotations

import argparse
from pathlib import Path

from inference.sampling.param_table import param_table, write_param_table_into
from inference.sampling.stage_table import PACKAGE_SOURCE, stage_table, write_into, write_list_into
from inference.sampling.stage_words import MODULE_PATH, write_module


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The sampler stages' and parameters' tables, made from their declarations.")
    parser.add_argument("--write", type=Path, metavar="DOC", help="rewrite the stage and parameter tables in this Markdown file")
    args = parser.parse_args(argv)
    if args.write is None:
        print(stage_table(), param_table(), sep="\n", end="")
    else:
        print(f"{args.write} (stage table): {'updated' if write_into(args.write) else 'already up to date'}")
        print(f"{args.write} (parameter table): {'updated' if write_param_table_into(args.write) else 'already up to date'}")
        print(f"{PACKAGE_SOURCE}: {'updated' if write_list_into() else 'already up to date'}")
        print(f"{MODULE_PATH}: {'updated' if write_module() else 'already up to date'}")


if __name__ == "__main__":
    main()
