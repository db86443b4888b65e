#!/usr/bin/env bash
# Start a Docker engine for the docker e2e tests (tests/test_docker_e2e.py) and build the
# small Debian base image they build on. Idempotent; runs as root on a fresh machine with
# no GPU and no engine. The engine has no networking of its own (no iptables, no bridge):
# CI machines are themselves VMs/containers where netfilter is often unavailable; builds
# use `--network host`. Its storage driver is overlay2 where this kernel mounts an overlay
# on the engine's own disk, else vfs (issue 30): vfs copies the whole image for every
# layer, container and export (a ~1 GB CPU-torch image costs minutes and gigabytes each
# time), overlay2 copies nothing. FWDOCTOR_DOCKER_STORAGE=vfs|overlay2 forces one. An
# engine that is already up is kept as it is, whatever its driver.
set -euo pipefail

BASE_IMAGE="${FWDOCTOR_E2E_BASE:-fwdoctor-e2e-base:bookworm}"
SOCKET=/var/run/docker.sock
LOG=/var/log/fwdoctor-dockerd.log
DATA_ROOT=/var/lib/docker
WAIT_S=60

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
# OCI image layouts for the --image-archive tests (tests/test_image_archive.py).
command -v skopeo >/dev/null 2>&1 || need+=(skopeo)
if [ "${#need[@]}" -gt 0 ]; then
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

engine_up() {
    # /_ping answers "OK" once the API is ready; curl may be absent, so ask python.
    python3 - "$SOCKET" <<'PY' >/dev/null 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
sys.exit(0 if b"OK" in s.recv(4096) else 1)
PY
}

overlay_works() {
    # What dockerd's overlay2 needs: an overlay mounted with its upper and work folders on
    # the data root's filesystem (not on an overlay or tmpfs that cannot hold one).
    local probe
    mkdir -p "$DATA_ROOT"
    probe="$(mktemp -d "$DATA_ROOT/.overlay-probe.XXXXXX")" || return 1
    mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
    local ok=1
    if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
        touch "$probe/merged/file" 2>/dev/null && ok=0
        umount "$probe/merged"
    fi
    rm -rf "$probe"
    return "$ok"
}

if ! engine_up; then
    driver="${FWDOCTOR_DOCKER_STORAGE:-}"
    if [ -z "$driver" ]; then
        if overlay_works; then driver=overlay2; else driver=vfs; fi
    fi
    echo "starting dockerd ($driver, no iptables, no bridge); log: $LOG"
    nohup dockerd --storage-driver="$driver" --data-root="$DATA_ROOT" --iptables=false --bridge=none \
        --host="unix://$SOCKET" >"$LOG" 2>&1 &
    for _ in $(seq "$WAIT_S"); do
        engine_up && break
        sleep 1
    done
    if ! engine_up; then
        echo "dockerd did not answer on $SOCKET within ${WAIT_S}s; last log lines:" >&2
        tail -n 20 "$LOG" >&2 || true
        exit 1
    fi
fi
running_driver="$(timeout 30 docker info --format '{{.Driver}}' 2>/dev/null || echo unknown)"
echo "docker engine up on $SOCKET (storage driver: $running_driver)"
if [ "$running_driver" = vfs ] && [ -z "${FWDOCTOR_DOCKER_STORAGE:-}" ] && overlay_works; then
    # Measured on a 2-core machine (issue 30): the Docker tests took ~38 min on vfs, ~10 on overlay2.
    echo "note: this engine runs on vfs, and overlay2 works here: the Docker tests run several times" \
         "faster after stopping dockerd and running this script again (the base image is then built again)"
fi

if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    echo "base image $BASE_IMAGE present"
else
    dir="$(mktemp -d /var/tmp/fwdoctor-rootfs.XXXXXX)"
    trap 'rm -rf "$dir"' EXIT
    echo "debootstrap bookworm -> $BASE_IMAGE (python3 3.11 + venv, so pip works in builds)"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$dir" http://deb.debian.org/debian >/dev/null
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    # mktemp -d made the folder 0700, and the tar's "." entry becomes the image's "/":
    # without this, no non-root user could reach anything in the image.
    chmod 0755 "$dir"
    tar -C "$dir" -c . | docker import - "$BASE_IMAGE" >/dev/null
    echo "imported $BASE_IMAGE"
fi
