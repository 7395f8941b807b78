#!/usr/bin/env bash
# Build the CPU engine image from a local Debian rootfs and wheels, push it to a registry and
# print its pinned reference (REF@sha256:...). Needs root (debootstrap), docker and network
# access to a Debian mirror and to the Python package index only (the image's build itself
# reaches only the wheels, served here on 127.0.0.1).
#   envs/image/build.sh [REF]        default REF: 127.0.0.1:5000/knee/vllm-cpu:0.32.0
# KNEE_TORCH_INDEX_URL: PyTorch's CPU wheel index, as for the engine environment.
# KNEE_DEBIAN_MIRROR: the Debian mirror for debootstrap (default deb.debian.org).
set -euo pipefail
ref=${1:-127.0.0.1:5000/knee/vllm-cpu:0.32.0}
here=$(cd "$(dirname "$0")" && pwd)
work=${KNEE_IMAGE_WORK:-$here/../../resources/image-build}
mirror=${KNEE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$work"
# one build at a time in this folder: a second waits for the first, then finds its image built
exec 9>"$work/build.lock"
flock 9
t=$SECONDS
phase() { echo "build.sh: $1 $((SECONDS - t)) s" >&2; t=$SECONDS; }
# python3-dev: the engine's torch.compile builds C++ against Python.h on CPU
packages=python3,python3-venv,python3-dev,libnuma1,libgomp1,g++,ca-certificates
base=knee-base:bookworm-$(echo "$packages" | sha256sum | cut -c1-12)
if ! docker image inspect "$base" >/dev/null 2>&1; then
    rootfs=$work/rootfs
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include="$packages" \
        bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
    rm -rf "$rootfs"
fi
phase "base image (debootstrap + import):"
# what the image is made of: the base, the Dockerfile and the engine's pins; an image already
# built from the same (its label says so) is pushed again as it is, not rebuilt
inputs=$( (echo "$base"; cat "$here/Dockerfile" "$here/../engine.txt") | sha256sum | cut -c1-64)
if [[ $(docker image inspect --format '{{index .Config.Labels "knee.inputs"}}' "$ref" \
    2>/dev/null) == "$inputs" ]]; then
    docker push -q "$ref" >/dev/null
    phase "push (built before from the same inputs):"
    docker image inspect --format '{{index .RepoDigests 0}}' "$ref"
    exit 0
fi
extra=()
if [[ -n "${KNEE_TORCH_INDEX_URL:-}" ]]; then
    extra=(--extra-index-url "$KNEE_TORCH_INDEX_URL")
fi
ctx=$work/context
mkdir -p "$ctx/wheels"
grep -v '^#' "$here/../engine.txt" >"$ctx/wheels/engine.txt"
# wheels for this machine's Python 3.11 and architecture (the image's python3 is 3.11 too);
# an sdist is built into a wheel here, so the image build needs no network
python3 -m pip wheel --disable-pip-version-check -q "${extra[@]}" \
    -r "$ctx/wheels/engine.txt" -w "$ctx/wheels"
phase "wheels:"
# the wheels, served on the host's loopback while the image builds (stopped by its process id
# on success, failure and Ctrl-C); the build context is the Dockerfile alone
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$ctx/wheels" \
    >"$work/wheels-http.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
mkdir -p "$ctx/docker"
cp "$here/Dockerfile" "$ctx/docker/Dockerfile"
docker build -q --network host --build-arg BASE="$base" \
    --build-arg WHEELS="http://127.0.0.1:$port" --label "knee.inputs=$inputs" -t "$ref" \
    "$ctx/docker" >/dev/null
kill "$server" 2>/dev/null || true
phase "docker build:"
docker push -q "$ref" >/dev/null
phase "push:"
docker image inspect --format '{{index .RepoDigests 0}}' "$ref"
