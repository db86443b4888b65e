#!/bin/bash
# fwdoctor smoke allreduce on 4 nodes under Slurm: one fwdoctor per node (srun), which
# starts torchrun there; the torchruns meet at a c10d rendezvous on the first node.
# Submit: sbatch THIS_SCRIPT    Result: the job's exit status and the JSON in its output.
#SBATCH --job-name=fwdoctor-allreduce
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --time=00:20:00
set -euo pipefail
head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export FWDOCTOR_RDZV_ENDPOINT="$head_node:29500"
srun --kill-on-bad-exit=1 bash -c 'exec fwdoctor smoke allreduce --nnodes "$SLURM_NNODES" --node-rank "$SLURM_NODEID" --rdzv-endpoint "$FWDOCTOR_RDZV_ENDPOINT" --rdzv-id "fwdoctor-$SLURM_JOB_ID" --backend nccl --nproc 8 --timeout 900 --min-busbw 150 --json'
