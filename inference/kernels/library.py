"""Where the kernel library is and what it says of itself (standard library only).

``library_path()`` is what a session registers (``SessionOptions.register_custom_ops_library``);
``describe()`` is what the manifest and the pages report.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

LIBRARY_NAME = "libplayground_kernels.so"
KERNELS_DIR = Path(__file__).resolve().parents[2] / ".kernels"  # the repository's ignored build folder
ENV_LIBRARY = "PLAYGROUND_KERNELS_LIBRARY"  # another build of the library to use instead
DOMAIN = "playground.kernels"
OP = "MatMulGguf"
ATTENTION_OP = "GroupAttention"  # GroupQueryAttention's inputs and attributes, our kernel (library 1.1.0 on)


def _candidate() -> Path:
    env = os.environ.get(ENV_LIBRARY)
    return Path(env) if env else KERNELS_DIR / LIBRARY_NAME


def _load(path: Path) -> dict[str, Any]:
    """The library's version, ISA path and formats; raises OSError or AttributeError when it is not ours."""
    lib = ctypes.CDLL(str(path))
    for name in ("playground_kernels_version", "playground_kernels_isa", "playground_kernels_formats"):
        getattr(lib, name).restype = ctypes.c_char_p
    ops = [OP]
    if hasattr(lib, "playground_kernels_ops"):  # 1.1.0 on; the first version had MatMulGguf alone
        lib.playground_kernels_ops.restype = ctypes.c_char_p
        ops = lib.playground_kernels_ops().decode().split(",")
    return {
        "version": lib.playground_kernels_version().decode(),
        "isa": lib.playground_kernels_isa().decode(),
        "formats": lib.playground_kernels_formats().decode().split(","),
        "op_types": ops,
    }


def library_path() -> Path | None:
    """The library to register, or None when it is not built or cannot be loaded."""
    path = _candidate()
    if not path.is_file():
        return None
    try:
        _load(path)
    except (OSError, AttributeError):
        return None
    return path


def describe() -> dict[str, Any]:
    """``{"version", "isa", "formats", "op_types", "path"}``, or ``{"available": False, "why": ...}``."""
    path = _candidate()
    if not path.is_file():
        why = f"{ENV_LIBRARY} names a missing file" if os.environ.get(ENV_LIBRARY) else "not built"
        return {"available": False, "why": why}
    try:
        facts = _load(path)
    except (OSError, AttributeError) as error:
        return {"available": False, "why": f"cannot load {path.name}: {error}"}
    return {**facts, "path": str(path)}
