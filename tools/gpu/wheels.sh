#!/bin/bash
# On a machine with a package index: knee's workflow dependencies for a GPU host without one
# (Snakemake and the packages its Python lacks), as wheels in .gpu-stage/wf (about 27 MB, one
# transfer). The host's own packages (pyyaml, requests, jinja2, ...) are left out.
set -euo pipefail
out=${1:-.gpu-stage/wf}
mkdir -p "$out" && cd "$out"
python3 -m pip wheel -q --no-deps -w . "connection_pool>=0.0.3" # published as an sdist only
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
	--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	--platform manylinux2014_x86_64 --platform any --find-links . -d . \
	snakemake==9.27.1 rocrate==0.16.0 docker==7.2.0 orjson==3.13.0 jsonschema==4.26.0 \
	markdown-it-py==4.3.0 mdurl==0.1.2
for p in attrs certifi charset_normalizer click idna jinja2 markupsafe packaging psutil \
	pyyaml PyYAML requests tabulate typing_extensions urllib3 wrapt python_dateutil tzdata; do
	rm -f "$p"-*.whl
done
ls | wc -l
