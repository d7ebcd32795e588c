#!/usr/bin/env bash
# Makes a Debian bookworm base image without any registry: debootstrap into a temporary folder,
# then `docker import`. Needs root, debootstrap and a reachable Debian mirror (about a minute).
#
#   docker/make-base-image.sh [IMAGE]        # default IMAGE: playground-base:bookworm
#   docker build -f docker/Dockerfile --build-arg BASE_IMAGE=playground-base:bookworm -t playground .
set -euo pipefail
image="${1:-playground-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image exists"
  exit 0
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
echo "==> debootstrap --variant=minbase bookworm (into $root)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "==> $image"
