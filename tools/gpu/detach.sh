#!/bin/bash
# Start COMMAND in the background in a session of its own, its process group id in PGID_FILE,
# with SIGINT at its default. A background command of a non-interactive shell starts with SIGINT
# ignored, and Python (Snakemake) keeps it so: poll.sh's stop (SIGINT to the process group) would
# then reach nothing, and the run would go on into its next pair.
# usage: tools/gpu/detach.sh PGID_FILE COMMAND [ARG...]
set -euo pipefail
pgid_file=${1:?usage: tools/gpu/detach.sh PGID_FILE COMMAND [ARG...]}
shift
env --default-signal=INT true 2>/dev/null ||
	{ echo "detach.sh: this env has no --default-signal (coreutils 8.31 or later)" >&2; exit 1; }
setsid env --default-signal=INT "$@" >/dev/null 2>&1 </dev/null &
echo $! >"$pgid_file"
