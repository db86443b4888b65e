#!/bin/sh
# fwdoctor smoke allreduce across 2 nodes: one fwdoctor per node, which starts
# torchrun there (one rank per GPU); the torchruns meet at the c10d rendezvous that node 0
# hosts on node0.cluster:29400.
# Start it on every node within --timeout seconds of each other:
#   NODE_RANK=0 sh THIS_SCRIPT    # on node0.cluster
#   NODE_RANK=1 sh THIS_SCRIPT    # on the next node, ... up to NODE_RANK=1
# Exit status: 0 all sums exact (and busbw above --min-busbw), 1 otherwise.
set -eu
: "${NODE_RANK:?set NODE_RANK to the index of this node, 0 to 1}"
exec fwdoctor smoke allreduce --nnodes 2 --node-rank "$NODE_RANK" --rdzv-endpoint node0.cluster:29400 --rdzv-id fwdoctor-smoke --backend nccl --max-bytes 1073741824 --timeout 600 --min-busbw 100 --json
