#!/bin/bash
# On the GPU host, from the repository root: install the wheels of tools/gpu/wheels.sh and run
# `snakemake --configfile CONFIG` in its own session (tools/gpu/detach.sh: SIGINT, which
# poll.sh stops it with, at its default), its output in job.log, its exit status in job.rc and
# its process group in job.pgid, in KNEE_JOB_DIR (default /tmp); refused while that run goes
# on. A folder brought back from an earlier lease goes on from its next session. The run goes
# on in a copy of the tree (KNEE_RUN_DIR, default /tmp/knee-run), so that a later transfer of
# the tree to the host cannot touch the folder being measured.
# KNEE_HOST_PYTHON: the host's Python (default the project's H200 host's); KNEE_NAME: measure
# under this name instead of the config's (the same config on another kind of GPU).
set -euo pipefail
config=${1:?usage: tools/gpu/start.sh CONFIG [WHEELS]}
wheels=${2:-.gpu-stage/wf}
py=${KNEE_HOST_PYTHON:-/opt/torch/.venv/bin/python3}
run=${KNEE_RUN_DIR:-/tmp/knee-run}
job=${KNEE_JOB_DIR:-/tmp}
if [ -f "$job/job.pgid" ] && [ ! -f "$job/job.rc" ] &&
	kill -0 -- -"$(cat "$job/job.pgid")" 2>/dev/null; then
	echo "start.sh: a run is still going (process group $(cat "$job/job.pgid"), its log $job/job.log);" \
		"a second would copy the tree over the first's: end it with tools/gpu/poll.sh 60 NAME" \
		"stop 0, or wait for $job/job.rc" >&2
	exit 1
fi
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
rm -f "$job/job.rc"
bash tools/gpu/detach.sh "$job/job.pgid" bash -c "cd '$PWD' && PATH='$PATH' PYTHONPATH='$PYTHONPATH' \
'$py' -m snakemake --cores all --configfile '$config' ${KNEE_NAME:+--config name=$KNEE_NAME} \
>'$job/job.log' 2>&1; echo \$? >'$job/job.rc'"
sleep 15
tail -5 "$job/job.log"
echo "started, process group $(cat "$job/job.pgid")"
