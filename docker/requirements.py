"""Prints pyproject.toml's requirements, one per line, for pip inside the image build.

    python3 docker/requirements.py runtime   # [project].dependencies
    python3 docker/requirements.py build     # the `build` extra (the model export tool chain)

pyproject.toml stays the one place the versions are written down; the image installs the runtime
into the final virtual environment and the build extra into a throw-away one.
"""

import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def requirements(group: str) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    if group == "runtime":
        return list(project["dependencies"])
    return list(project["optional-dependencies"][group])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: requirements.py runtime|build")
    print("\n".join(requirements(sys.argv[1])))
