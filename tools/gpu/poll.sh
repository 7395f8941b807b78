#!/bin/bash
# On the GPU host: wait up to SECONDS for the run of tools/gpu/start.sh, then pack
# results/NAME (and the run's log) into $OUT in pieces of 15 MiB. With `stop AFTER`: after
# AFTER seconds, wait for the next pair to finish (both its sessions), then stop the run by its
# process group (SIGINT: Snakemake stops the engine), so that a lease ends between pairs: a
# pair measured on two hosts carries the hosts' difference (the bar judges it apart).
set -uo pipefail
cd "${KNEE_RUN_DIR:-/tmp/knee-run}" || exit 1 # where tools/gpu/start.sh runs it
job=${KNEE_JOB_DIR:-/tmp}                     # and its job.pgid, job.rc and job.log
n=${1:?usage: tools/gpu/poll.sh SECONDS NAME [stop AFTER]}
name=${2:?name}
mode=${3:-}
after=${4:-0}
r=results/$name
finished() { ls "$r"/receipts/*-stop.json 2>/dev/null | wc -l; }
ended() { for _ in $(seq "$1"); do [ -f "$job/job.rc" ] && return 0; sleep 2; done; return 1; }
start=$(finished)
end=$((SECONDS + n))
from=$((SECONDS + after))
while [ $SECONDS -lt $from ] && [ ! -f "$job/job.rc" ]; do sleep 5; done
mark=$(finished)
while [ $SECONDS -lt $end ] && [ ! -f "$job/job.rc" ]; do
	now=$(finished)
	[ "$mode" = stop ] && [ "$now" -gt "$mark" ] && [ $((now % 2)) = 0 ] && break
	sleep 5
done
if [ "$mode" = stop ] && [ ! -f "$job/job.rc" ]; then
	kill -INT -- -"$(cat "$job/job.pgid")" 2>/dev/null
	if ! ended 15; then # still going after 30 s: SIGTERM, which Snakemake also ends on
		echo "the run did not end on SIGINT in 30 s: SIGTERM to its process group"
		kill -TERM -- -"$(cat "$job/job.pgid")" 2>/dev/null
		ended 10 # at most 20 s more, then pack
	fi
fi
echo "sessions finished: $(finished) (were $start); run: $(cat "$job/job.rc" 2>/dev/null || echo running)"
# still going: where the newest pair's log stands (its last session's start, with the time left
# once a session is done, and its last two lines), to size the next poll
log=$(ls -t "$r"/logs/session/*.log 2>/dev/null | head -1)
if [ ! -f "$job/job.rc" ] && [ -n "$log" ]; then
	{ grep -E '^session .*, [0-9]+ of [0-9]+: ' "$log" | tail -1; tail -2 "$log"; } | sed 's/^/now: /'
fi
# a session that booted but has no stop receipt was cut (the run was still going when packed):
# the next lease refuses to measure over it, so its files are named here to delete first
shopt -s nullglob # no boot yet: no session to name
for b in "$r"/receipts/*-boot.json; do
	sid=$(basename "$b" -boot.json)
	[ -f "$r/receipts/$sid-stop.json" ] || echo "cut: session $sid has no stop receipt;" \
		"delete $r/raw/$sid and $r/receipts/$sid-* before the next lease"
done
# Snakemake's steps and errors, without the file lists of its jobs (whose paths name errors.py)
grep -E "Finished|Error|error" "$job/job.log" | grep -vE '^[[:space:]]+(input|output):' |
	tail -15
tar czf "$job/exp.tgz" "$r" "$job/job.log" 2>/dev/null
split -b 15M "$job/exp.tgz" "$OUT/exp.tgz.part-"
ls -la "$OUT"
