"""`fwdoctor smoke allreduce --emit slurm|torchrun`: a ready multi-node job script.

Each node runs one `fwdoctor smoke allreduce`, which starts torchrun there; the torchruns
meet through a c10d rendezvous hosted by node 0 (torch.distributed.run, "--rdzv-backend
c10d"). Output is deterministic for given options, so tests compare it with golden files.
"""

from __future__ import annotations

import math

from fwdoctor.quoting import comment, script_line, script_word

from fwdoctor.smoke.allreduce import DEFAULT_FACTOR, DEFAULT_MAX_BYTES, DEFAULT_MIN_BYTES, AllreduceOptions

DEFAULT_PORT = 29500  # torchrun's default master/rendezvous port


def fwdoctor_args(opts: AllreduceOptions, python_given: bool) -> list[str]:
    """The options every node passes, besides the node's own rank and the endpoint."""
    args = ["--backend", opts.backend or "nccl"]
    if opts.nproc is not None:
        args += ["--nproc", str(opts.nproc)]
    if python_given:
        args += ["--python", opts.python]
    if opts.min_bytes != DEFAULT_MIN_BYTES:
        args += ["--min-bytes", str(opts.min_bytes)]
    if opts.max_bytes != DEFAULT_MAX_BYTES:
        args += ["--max-bytes", str(opts.max_bytes)]
    if opts.factor != DEFAULT_FACTOR:
        args += ["--factor", str(opts.factor)]
    if opts.warmup != 5:
        args += ["--warmup", str(opts.warmup)]
    if opts.iters != 20:
        args += ["--iters", str(opts.iters)]
    args += ["--timeout", f"{opts.timeout:g}"]
    if opts.min_busbw is not None:
        args += ["--min-busbw", f"{opts.min_busbw:g}"]
    return args


def _quoted(args: list[str]) -> str:
    return script_line(args, "an option value")


def torchrun_script(opts: AllreduceOptions, python_given: bool = False) -> str:
    if not opts.rdzv_endpoint:
        raise ValueError("--emit torchrun needs --rdzv-endpoint HOST:PORT (the address of node 0)")
    nnodes = opts.nnodes
    host = comment(opts.rdzv_endpoint.rpartition(":")[0])
    endpoint = script_word(opts.rdzv_endpoint, "--rdzv-endpoint")
    rdzv_id = script_word(opts.rdzv_id, "--rdzv-id")
    common = _quoted(fwdoctor_args(opts, python_given))
    return f"""#!/bin/sh
# fwdoctor smoke allreduce across {nnodes} nodes: one fwdoctor per node, which starts
# torchrun there (one rank per GPU); the torchruns meet at the c10d rendezvous that node 0
# hosts on {comment(opts.rdzv_endpoint)}.
# Start it on every node within --timeout seconds of each other:
#   NODE_RANK=0 sh THIS_SCRIPT    # on {host}
#   NODE_RANK=1 sh THIS_SCRIPT    # on the next node, ... up to NODE_RANK={nnodes - 1}
# Exit status: 0 all sums exact (and busbw above --min-busbw), 1 otherwise.
set -eu
: "${{NODE_RANK:?set NODE_RANK to the index of this node, 0 to {nnodes - 1}}}"
exec fwdoctor smoke allreduce --nnodes {nnodes} --node-rank "$NODE_RANK" --rdzv-endpoint {endpoint} --rdzv-id {rdzv_id} {common} --json
"""


def slurm_script(opts: AllreduceOptions, python_given: bool = False) -> str:
    nnodes = opts.nnodes
    port = DEFAULT_PORT
    if opts.rdzv_endpoint:
        try:
            port = int(opts.rdzv_endpoint.rpartition(":")[2])
        except ValueError:
            raise ValueError(f"--rdzv-endpoint {opts.rdzv_endpoint!r}: expected HOST:PORT") from None
    minutes = max(5, math.ceil(opts.timeout / 60) + 5)  # the run's timeout plus start-up
    common = _quoted(fwdoctor_args(opts, python_given))
    # Expanded by the bash on each node, so $SLURM_NODEID is that node's own index.
    inner = ('exec fwdoctor smoke allreduce --nnodes "$SLURM_NNODES" --node-rank "$SLURM_NODEID" '
             f'--rdzv-endpoint "$FWDOCTOR_RDZV_ENDPOINT" --rdzv-id "fwdoctor-$SLURM_JOB_ID" {common} --json')
    gpus = f"#SBATCH --gpus-per-node={opts.nproc}\n" if opts.nproc is not None and (opts.backend or "nccl") == "nccl" else ""
    return f"""#!/bin/bash
# fwdoctor smoke allreduce on {nnodes} nodes under Slurm: one fwdoctor per node (srun), which
# starts torchrun there; the torchruns meet at a c10d rendezvous on the first node.
# Submit: sbatch THIS_SCRIPT    Result: the job's exit status and the JSON in its output.
#SBATCH --job-name=fwdoctor-allreduce
#SBATCH --nodes={nnodes}
#SBATCH --ntasks-per-node=1
{gpus}#SBATCH --exclusive
#SBATCH --time={minutes // 60:02d}:{minutes % 60:02d}:00
set -euo pipefail
head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export FWDOCTOR_RDZV_ENDPOINT="$head_node:{port}"
srun --kill-on-bad-exit=1 bash -c {script_word(inner)}
"""
