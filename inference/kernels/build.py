"""Build the kernel library: ``python -m inference.kernels.build`` (standard library only).

Finds ONNX Runtime's C API header (``$ORT_INCLUDE``, the system's include folders, or a private
fetch of Debian 13's ``libonnxruntime-dev`` into ``.kernels/include/``, made with the machine's own
apt sources and never installed), compiles ``inference/kernels/src/*.c`` with the machine's C
compiler (``$CC``, else ``cc``) into ``.kernels/libplayground_kernels.so``, and skips the work when
the sources, the header and the command are those of the last build (``.kernels/stamp``).

Prints one line saying what it did and always exits 0: without a header or a compiler the models
are built with ONNX Runtime's own ``MatMulNBits`` graph instead.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .library import KERNELS_DIR, LIBRARY_NAME

SOURCES = Path(__file__).parent / "src"
HEADER = "onnxruntime_c_api.h"
HEADER_PACKAGE = "libonnxruntime-dev"  # Debian 13 (trixie) and later: the C API headers, API 21
HEADER_SUITE = "trixie"
SYSTEM_INCLUDES = (Path("/usr/include/onnxruntime"), Path("/usr/local/include/onnxruntime"))
FLAGS = ("-std=c11", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing", "-Wall", "-Wextra")


class NotBuilt(Exception):
    """Why the library cannot be built here (the one line says it)."""


def find_header(out_dir: Path) -> Path:
    """The folder holding ``onnxruntime_c_api.h``: ``$ORT_INCLUDE``, the system's, or a private fetch."""
    env = os.environ.get("ORT_INCLUDE")
    if env:
        if not (Path(env) / HEADER).is_file():
            raise NotBuilt(f"no headers: ORT_INCLUDE names a folder without {HEADER}")
        return Path(env)
    for folder in (*SYSTEM_INCLUDES, out_dir / "include" / "onnxruntime"):
        if (folder / HEADER).is_file():
            return folder
    return fetch_header(out_dir / "include")


DEBIAN_SUITES = {"buster", "bullseye", "bookworm", "trixie", "forky", "sid", "oldstable", "stable", "testing", "unstable"}


def apt_sources(apt: Path = Path("/etc/apt")) -> list[dict[str, str]]:
    """The machine's apt sources as deb822 fields (Types, URIs, Suites, Components, Signed-By), both formats."""
    stanzas: list[dict[str, str]] = []
    for path in sorted((apt / "sources.list.d").glob("*.sources")):
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
            fields = dict(re.findall(r"^([A-Za-z-]+):[ \t]*(.*)$", block, re.MULTILINE))
            if "URIs" in fields and fields.get("Enabled", "yes").lower() != "no":
                stanzas.append(fields)
    for path in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = re.match(r"^(deb|deb-src)\s+(?:\[([^]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line.strip())
            if m:
                keyring = re.search(r"signed-by=(\S+)", m.group(2) or "")
                stanzas.append(
                    {"Types": m.group(1), "URIs": m.group(3), "Suites": m.group(4), "Components": m.group(5),
                     "Signed-By": keyring.group(1) if keyring else ""}
                )  # fmt: skip
    return stanzas


def debian_archive(apt: Path = Path("/etc/apt")) -> tuple[str, str]:
    """The URI and keyring of the machine's own Debian archive: a binary source of a Debian suite
    (not its -updates or -security) with the main component."""
    for fields in apt_sources(apt):
        if (
            "deb" in fields.get("Types", "").split()
            and DEBIAN_SUITES & set(fields.get("Suites", "").split())
            and "main" in fields.get("Components", "").split()
        ):
            return fields["URIs"].split()[0], fields.get("Signed-By", "")
    raise NotBuilt("no headers: no Debian archive in the machine's apt sources to fetch them from")


def fetch_header(dest: Path) -> Path:
    """Debian 13's ``libonnxruntime-dev`` downloaded with a private apt state and unpacked into ``dest``."""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        raise NotBuilt(f"no headers: no {HEADER} here, no ORT_INCLUDE and no apt-get to fetch them")
    uri, keyring = debian_archive()
    if not (keyring.startswith("/") and Path(keyring).is_file()):  # none, or a key written inline
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    with tempfile.TemporaryDirectory(prefix="kernels-apt-") as tmp:
        state = Path(tmp)
        (state / "sources").mkdir()
        (state / "lists" / "partial").mkdir(parents=True)
        (state / "cache" / "archives" / "partial").mkdir(parents=True)
        (state / "sources" / "headers.sources").write_text(
            f"Types: deb\nURIs: {uri}\nSuites: {HEADER_SUITE}\nComponents: main\nSigned-By: {keyring}\n", encoding="utf-8"
        )
        options = [
            "-o", "Dir::Etc::sourcelist=/dev/null",
            "-o", f"Dir::Etc::sourceparts={state / 'sources'}",
            "-o", f"Dir::State::Lists={state / 'lists'}",
            "-o", f"Dir::Cache={state / 'cache'}",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=",
        ]  # fmt: skip
        for args in (["update"], ["download", HEADER_PACKAGE]):
            done = subprocess.run(["apt-get", "-q", *options, *args], cwd=state, capture_output=True, text=True, timeout=300)
            if done.returncode:
                last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
                raise NotBuilt(f"no headers: fetching {HEADER_PACKAGE} failed: apt-get {args[0]}: {last[0]}")
        debs = list(state.glob(f"{HEADER_PACKAGE}_*.deb"))
        if not debs:
            raise NotBuilt(f"no headers: apt-get downloaded no {HEADER_PACKAGE}")
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(state / "x")], check=True, capture_output=True)
        found = state / "x" / "usr" / "include" / "onnxruntime"
        if not (found / HEADER).is_file():
            raise NotBuilt(f"no headers: {debs[0].name} holds no {HEADER}")
        # Another build may be fetching at the same time: copy aside, then rename into place.
        target = dest / "onnxruntime"
        dest.mkdir(parents=True, exist_ok=True)
        aside = dest / f"onnxruntime.{os.getpid()}"
        shutil.copytree(found, aside)
        try:
            aside.rename(target)
        except OSError:  # the other build was first
            shutil.rmtree(aside, ignore_errors=True)
    return target


def compiler() -> str:
    cc = os.environ.get("CC") or "cc"
    if not shutil.which(cc):
        raise NotBuilt(f"no compiler: {cc} is not on PATH")
    return cc


def fingerprint(cc: str, include: Path) -> str:
    """What the build depends on: the sources, the header, the compiler (its version) and the flags."""
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60).stdout
    digest = hashlib.sha256(" ".join([cc, *FLAGS, version]).encode())
    for path in sorted(SOURCES.glob("*.[ch]")) + [include / HEADER]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def loaded_isa(path: Path) -> str:
    lib = ctypes.CDLL(str(path))
    lib.playground_kernels_isa.restype = ctypes.c_char_p
    return lib.playground_kernels_isa().decode()


def build(out_dir: Path = KERNELS_DIR) -> str:
    """Build if needed; the one line saying what was done."""
    library = out_dir / LIBRARY_NAME
    shown = library.relative_to(out_dir.parent) if out_dir.is_absolute() else library
    try:
        cc = compiler()
        include = find_header(out_dir)
        stamp = out_dir / "stamp"
        key = fingerprint(cc, include)
        if library.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == key:
            return "kernels: up to date"
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = library.with_suffix(f".so.{os.getpid()}.partial")  # renamed into place: a loaded copy stays valid
        command = [cc, *FLAGS, f"-I{include}", *map(str, sorted(SOURCES.glob("*.c"))), "-o", str(partial), "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode:
            first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr.strip()[:200])
            raise NotBuilt(f"the compiler failed: {first}")
        partial.replace(library)
        stamp.write_text(key + "\n", encoding="utf-8")
        return f"kernels: built {shown} ({loaded_isa(library)})"
    except NotBuilt as why:
        return f"kernels: not built ({why}); the MatMulNBits graph serves"
    except Exception as why:  # never fail the caller: env.sh runs this on every start
        return f"kernels: not built ({type(why).__name__}: {why}); the MatMulNBits graph serves"


def main() -> int:
    print(build(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
