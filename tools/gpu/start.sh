#!/bin/bash
# On the GPU host, from the repository root: install the wheels of tools/gpu/wheels.sh and run
# `snakemake --configfile CONFIG` in its own session (tools/gpu/detach.sh: SIGINT, which
# poll.sh stops it with, at its default), its output in /tmp/job.log and
# its exit status in /tmp/job.rc. A folder brought back from an earlier lease goes on from its
# next session. The run goes on in a copy of the tree (KNEE_RUN_DIR, default /tmp/knee-run),
# so that a later transfer of the tree to the host cannot touch the folder being measured.
# KNEE_HOST_PYTHON: the host's Python (default the project's H200 host's); KNEE_NAME: measure
# under this name instead of the config's (the same config on another kind of GPU).
set -euo pipefail
config=${1:?usage: tools/gpu/start.sh CONFIG [WHEELS]}
wheels=${2:-.gpu-stage/wf}
py=${KNEE_HOST_PYTHON:-/opt/torch/.venv/bin/python3}
run=${KNEE_RUN_DIR:-/tmp/knee-run}
mkdir -p "$run"
tar --exclude='./.gpu-stage/call*' -cf - . | tar -xf - -C "$run"
cd "$run"
mkdir -p /tmp/site2 /tmp/bin
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site2 \
	"$wheels"/*.whl
printf '#!/bin/sh\nexec %s -m knee "$@"\n' "$py" >/tmp/bin/knee && chmod +x /tmp/bin/knee
export PATH=/tmp/bin:$PATH PYTHONPATH=/tmp/site:/tmp/site2:$PWD/workflow
"$py" -m snakemake --version
knee validate-config "$config"
rm -f /tmp/job.rc
bash tools/gpu/detach.sh /tmp/job.pgid bash -c "cd '$PWD' && PATH='$PATH' PYTHONPATH='$PYTHONPATH' \
'$py' -m snakemake --cores all --configfile '$config' ${KNEE_NAME:+--config name=$KNEE_NAME} \
>/tmp/job.log 2>&1; echo \$? >/tmp/job.rc"
sleep 15
tail -5 /tmp/job.log
echo "started, process group $(cat /tmp/job.pgid)"
