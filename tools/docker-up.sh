#!/usr/bin/env bash
# Start a Docker engine and a local registry on 127.0.0.1:5000 on this machine, as root.
# For the tests and for trying the docker runtime without a GPU host. Installs docker.io,
# debootstrap and docker-registry with apt if missing. Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v docker-registry >/dev/null || need+=(docker-registry)
if ((${#need[@]})); then
    apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null; }
fi
if ! docker info >/dev/null 2>&1; then
    mkdir -p /var/log/knee
    # nohup + setsid: the engine outlives this script
    setsid nohup dockerd >/var/log/knee/dockerd.log 2>&1 </dev/null &
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { tail -20 /var/log/knee/dockerd.log >&2; exit 1; }
fi
if ! curl -fsS http://127.0.0.1:5000/v2/ >/dev/null 2>&1; then
    mkdir -p /etc/knee /var/lib/knee-registry /var/log/knee
    cat >/etc/knee/registry.yml <<'CONF'
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: /var/lib/knee-registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:5000
CONF
    setsid nohup docker-registry serve /etc/knee/registry.yml \
        >/var/log/knee/registry.log 2>&1 </dev/null &
    for _ in $(seq 30); do curl -fsS http://127.0.0.1:5000/v2/ >/dev/null 2>&1 && break; sleep 1; done
    curl -fsS http://127.0.0.1:5000/v2/ >/dev/null || { tail -20 /var/log/knee/registry.log >&2; exit 1; }
fi
docker version --format 'docker {{.Server.Version}}; registry on 127.0.0.1:5000'
