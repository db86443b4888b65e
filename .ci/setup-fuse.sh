#!/usr/bin/env bash
# FUSE for tests/test_stalled_mount.py: a filesystem whose reads never return (a stalled
# network mount, for real). Needs /dev/fuse (present in this CI's VMs) and fusermount3.
set -euo pipefail
if ! command -v fusermount3 >/dev/null 2>&1; then
    echo "installing: fuse3"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends fuse3 >/dev/null
fi
[ -e /dev/fuse ] || { echo "no /dev/fuse on this machine: tests/test_stalled_mount.py cannot mount" >&2; exit 1; }
echo "fuse3 present: $(fusermount3 --version 2>&1 | head -n 1)"
