"""Issue 26 (containers): nvidia-container-cli's "mount error: file creation failed:
.../run/nvidia-persistenced/socket: no such device or address". The hook creates the socket
file in the container's rootfs to mount the host's over it; where the container already has
one mounted there (the host's /run or /var/run bind-mounted), a libnvidia-container before
1.12.0 fails ("Skip creation of existing files when these are already mounted", the
nvidia-container-toolkit changelog, v1.12.0-rc.2). Row: doctor/kb/errors.yaml
nvidia-container-cli-persistenced-socket-exists; release: doctor/kb/docker.yaml
toolkit_regressions. Each text is quoted from the public thread named above it."""

from __future__ import annotations

import pytest

from pasting import as_pasted
from triage_helpers import findings

# https://github.com/NVIDIA/libnvidia-container/issues/187 (slurm/pyxis/enroot; fixed by the
# maintainer's merge request, libnvidia-container 1.12.0~rc)
ENROOT_187 = """\
nvidia-container-cli: mount error: file creation failed: /raid/enroot-data/user-9011/pyxis_59.0/run/nvidia-persistenced/socket: no such device or address
[ERROR] /raid/enroot//hooks.d/98-nvidia.sh exited with return code 1
```

nvidia-container-cli -V
cli-version: 1.7.0
lib-version: 1.7.0
build date: 2021-11-30T19:53+00:00
"""
# https://github.com/NVIDIA/nvidia-docker/issues/1690 (-v /var/run:/var/run, cli 1.11.0)
DOCKER_1690 = """\
docker run  --runtime=nvidia  -e NVIDIA_VISIBLE_DEVICES=all  -v /var/run:/var/run -it debian bash
docker: Error response from daemon: OCI runtime create failed: container_linux.go:380: starting container process caused: process_linux.go:545: container init caused: Running hook #1:: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'
nvidia-container-cli: mount error: file creation failed: /data/docker/overlay2/8a72121bd999b74d25be8c84cc2e4951dde8427dbcbed9f3efbc6782950f6233/merged/run/nvidia-persistenced/socket: no such device or address: unknown.
ERRO[0001] error waiting for container: context canceled
"""
# https://github.com/NVIDIA/nvidia-docker/issues/885 (Rancher's kubelet container binds /run;
# the hook's stderr escaped inside Docker's message)
RKE_885 = """\
docker: Error response from daemon: oci runtime error: container_linux.go:247: starting container process caused "process_linux.go:337: running prestart hook 1 caused \\"error running hook: exit status 1, stdout: , stderr: exec command: [/usr/bin/nvidia-container-cli --load-kmods configure --ldconfig=@/sbin/ldconfig.real --device=all --utility --pid=22744 /var/lib/docker/overlay2/6e3fd9db295dc3b2e3021c713a797b69ae3ea9dfc8ae260f38d6e0e30386bc13/merged]\\\\nnvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/6e3fd9db295dc3b2e3021c713a797b69ae3ea9dfc8ae260f38d6e0e30386bc13/merged/run/nvidia-persistenced/socket: no such device or address\\\\n\\"".
"""


@pytest.mark.parametrize("text", as_pasted(ENROOT_187, DOCKER_1690, RKE_885))
def test_persistenced_socket_over_a_mounted_one_is_a_toolkit_before_1_12(cli, tmp_path, text):
    hit = findings(cli, tmp_path, text)["container-toolkit-known-bug"]
    assert hit["severity"] == "error" and "before 1.12.0" in hit["message"]
    assert any("nvidia-container-cli -V" in c for c in hit["fix"]["commands"])


def test_the_release_the_report_shows_is_named(cli, tmp_path):
    assert "(the report shows 1.7.0)" in findings(cli, tmp_path, ENROOT_187)["container-toolkit-known-bug"]["message"]


LOOK_ALIKES = [
    # the same error on a release that skips mounted files: not this known bug
    *as_pasted(ENROOT_187.replace("1.7.0", "1.12.0")),
    # https://github.com/apptainer/singularity/issues/4702 (Singularity's own bind, not the hook)
    "FATAL:   container creation failed: mount /var/run/nvidia-persistenced/socket->/var/run/nvidia-persistenced/socket error: "
    "while mounting /var/run/nvidia-persistenced/socket: destination /var/run/nvidia-persistenced/socket doesn't exist in container\n",
    # another file the hook creates, another errno
    "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/x/merged/usr/bin/nvidia-smi: file exists: unknown.\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_other_mount_errors_are_not_this_known_bug(cli, tmp_path, text):
    assert "container-toolkit-known-bug" not in findings(cli, tmp_path, text)
