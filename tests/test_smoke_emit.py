"""`smoke allreduce --emit slurm|torchrun`: whole scripts compared with golden files."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data" / "smoke"

CASES = {
    "emit-torchrun.sh": ("--emit", "torchrun", "--nnodes", "2", "--rdzv-endpoint", "node0.cluster:29400", "--backend", "nccl",
                         "--max-bytes", "1G", "--min-busbw", "100"),
    "emit-slurm.sh": ("--emit", "slurm", "--nnodes", "4", "--nproc", "8", "--min-busbw", "150", "--timeout", "900"),
}


def _golden(cli, name: str) -> tuple[str, str]:
    result = cli("smoke", "allreduce", *CASES[name])
    assert result.exit_code == 0, result.output
    path = DATA / name
    if os.environ.get("FWDOCTOR_UPDATE_GOLDEN"):
        path.write_text(result.stdout)
    return result.stdout, path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_script_matches_its_golden_file(cli, name):
    got, want = _golden(cli, name)
    assert got == want


@pytest.mark.parametrize(("name", "shell"), [("emit-torchrun.sh", "sh"), ("emit-slurm.sh", "bash")])
def test_emitted_script_is_valid_shell(name, shell):
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}")
    check = subprocess.run([shell, "-n", str(DATA / name)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr


def test_slurm_script_runs_one_fwdoctor_per_node_with_that_nodes_rank():
    text = (DATA / "emit-slurm.sh").read_text()
    assert "#SBATCH --nodes=4" in text and "#SBATCH --ntasks-per-node=1" in text
    assert "#SBATCH --gpus-per-node=8" in text
    # Single-quoted for srun's bash -c, so each node expands its own SLURM_NODEID.
    assert "'exec fwdoctor smoke allreduce --nnodes \"$SLURM_NNODES\" --node-rank \"$SLURM_NODEID\"" in text


def test_torchrun_script_refuses_to_start_without_a_node_rank():
    if shutil.which("sh") is None:
        pytest.skip("no sh")
    env = {k: v for k, v in os.environ.items() if k != "NODE_RANK"}
    run = subprocess.run(["sh", str(DATA / "emit-torchrun.sh")], capture_output=True, text=True, env=env, timeout=30)
    assert run.returncode != 0
    assert "set NODE_RANK" in run.stderr


def test_torchrun_emit_needs_the_rendezvous_endpoint(cli):
    result = cli("smoke", "allreduce", "--emit", "torchrun", "--nnodes", "2")
    assert result.exit_code == 2
    assert "--rdzv-endpoint" in result.output
