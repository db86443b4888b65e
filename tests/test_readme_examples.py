"""Every example of the README's ```sh blocks (issue 29, item 1): run from the installed wheel
in a fresh folder (with copies of stacks/ and lockfiles/), or listed in ELSEWHERE with why it
cannot run here (a GPU, Docker, the network, Slurm, a placeholder, or a change to this host).
A new README example fails the first test until it is put in one of the two."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.network]  # the installed wheel downloads its dependencies
pytest_plugins = ("wheel_helpers",)

# example -> the exit codes it may end with here (0 healthy, 1 findings on this machine).
RUN: dict[str, tuple[int, ...]] = {
    "fwdoctor check": (0, 1),
    "fwdoctor check --json": (0, 1),
    "fwdoctor check --format markdown": (0, 1),
    "fwdoctor facts > host.json": (0,),
    "fwdoctor explain driver-too-old-for-torch": (0,),
    "fwdoctor list": (0,),
    "fwdoctor fix": (0, 1),
    "fwdoctor select torch": (0, 1),
    'fwdoctor select torch --driver 535.104.05 --gpu 9.0 --gpu "Tesla V100-SXM2-32GB" --python 3.11': (0,),
    "fwdoctor stack resolve stacks/cu130-py312.yaml": (0,),
    "fwdoctor smoke allreduce --emit slurm": (0,),
    "fwdoctor fleet emit k8s > fwdoctor.yaml": (0,),
    "fwdoctor docker generate stacks/cu130-py312.yaml": (0,),  # the committed lock; no engine needed
}
ELSEWHERE: dict[str, str] = {
    "fwdoctor check --deep -v": "imports torch in the interpreter under test: CI runs it in tests/test_live_torch.py (torch venv)",
    "fwdoctor check --root DIR --env-file image.env": "DIR and image.env are placeholders (tests/test_check_*_roots.py run it on fixture roots)",
    "fwdoctor check --image TAG": "needs a Docker engine (tests/test_docker_e2e.py)",
    "fwdoctor check --image-archive FILE": "FILE is a placeholder (tests/test_image_archive.py)",
    "fwdoctor check --root DIR --against-host": "DIR is a placeholder (tests/test_cli_core.py)",
    "fwdoctor triage issue.md": "issue.md is a placeholder (tests/test_triage_cli.py)",
    "fwdoctor fix driver-too-old-for-torch --apply": "changes this host (tests/test_apply_fix.py on a sandbox)",
    "fwdoctor install torch --python .venv/bin/python --apply": "downloads torch from the network and installs it",
    "fwdoctor install cuda-toolkit 13.0 --method pip --prefix ~/cuda-13.0 --apply": "downloads the CUDA wheels from the network",
    "fwdoctor smoke kernel": "needs a GPU (make gpu-check)",
    "fwdoctor smoke kernel --cpu": "needs torch in the interpreter under test (tests/test_smoke_kernel.py, torch venv)",
    "fwdoctor smoke kernel --compile-only --arch 8.0 --arch 9.0": "needs nvcc (tests/test_smoke_compile.py where CI has one)",
    "fwdoctor smoke allreduce --min-busbw 100": "needs GPUs (make gpu-check)",
    "fwdoctor smoke allreduce --backend gloo --nproc 2": "needs torch (tests/test_smoke_allreduce.py, torch venv)",
    "fwdoctor smoke allreduce --nnodes 2 --node-rank 0 --rdzv-endpoint head:29500": "needs a second node named head",
    "fwdoctor smoke all --report smoke.json": "needs torch and GPUs (tests/test_smoke_all.py runs it with gloo)",
    "fwdoctor lock stacks/cu130-py312.yaml": "downloads from the PyTorch index (tests/test_project_docker.py locks against a local index)",
    "fwdoctor docker build stacks/cpu-py311.yaml": "needs a Docker engine (tests/test_docker_e2e.py)",
    "fwdoctor fleet collect --slurm --out facts/ -- -N 32 -p gpu": "needs Slurm (tests/test_fleet_collect_slurm.py where CI has one)",
    "fwdoctor fleet collect --hosts nodes.txt --out facts/": "needs ssh to other hosts (tests/test_fleet_collect_ssh.py)",
    "fwdoctor fleet report facts/": "facts/ is what fleet collect writes (tests/test_fleet_report.py)",
    "fwdoctor fleet report facts/ smoke/ --format html --out fleet.html": "facts/ and smoke/ are what collect and smoke write (tests/test_fleet_html.py)",
    "fwdoctor check --format prometheus > node.prom.tmp && mv node.prom.tmp /var/lib/node_exporter/node.prom": "writes node_exporter's folder (tests/test_prometheus.py)",
    "fwdoctor mcp --allow-root /srv/rootfs --allow-root ~/fleet-facts": "a server for an assistant (tests/test_mcp_server.py)",
    'fwdoctor build torch --version 2.9.1 --cuda 12.8 --nccl 2.27.5 --cudnn 9.10.2.21 --arch "8.0;9.0+PTX" --python ~/venvs/t/bin/python': "needs CUDA 12.8 and that venv (tests/test_build_cli.py on facts)",
    "fwdoctor build torch ... --apply": "'...' stands for the flags above",
    "fwdoctor build torch ... --docker stacks/cu128-py310.yaml": "'...' stands for the flags above",
}


def examples() -> list[str]:
    """The README's fwdoctor commands: ```sh lines, continuations joined, comments cut."""
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command.startswith("fwdoctor "):
                found.append(re.sub(r"\s+", " ", command))
    return found


def test_every_readme_example_is_run_here_or_listed_with_why_not():
    listed = set(RUN) | set(ELSEWHERE)
    assert [e for e in examples() if e not in listed] == []
    assert sorted(listed - set(examples())) == []  # no stale entries


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("readme")
    shutil.copytree(REPO / "stacks", where / "stacks")
    shutil.copytree(REPO / "lockfiles", where / "lockfiles")
    return where


@pytest.mark.parametrize("example", sorted(RUN))
def test_each_readme_example_runs_from_the_installed_wheel(installed, folder, example):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH")}
    env.update(PATH=f"{installed / 'bin'}:/usr/bin:/bin", HOME=str(folder), XDG_CACHE_HOME=str(folder / ".cache"))
    proc = subprocess.run(["bash", "-c", example], cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode in RUN[example], out[-3000:]
    assert "internal error" not in out and "No such option" not in out and "Usage:" not in out, out[-3000:]
