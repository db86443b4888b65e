"""Smoke tests: real work on the host, each in child processes with timeouts.

    cli.py        `fwdoctor smoke kernel|allreduce|all` (parse, call, render)
    kernel.py     GPU (or --cpu) kernels vs a CPU reference: matmul, conv2d, AMP steps,
                  via workers/kernel_worker.py
    compile.py    --compile-only: nvcc per target architecture, run on a matching GPU
    allreduce.py  torchrun + workers/allreduce_worker.py: exact, timed sweep
    bandwidth.py  algbw/busbw as nccl-tests defines them (pure)
    nccl_log.py   NCCL_DEBUG=INFO output -> version, transports per peer, rings, trees (pure)
    transport.py  the fabric RUN_RULES over a run's NCCL log and this host's facts
    emit.py       --emit slurm|torchrun job scripts
    diagnose.py   error text -> finding id + what to try (pure)
    result.py     SmokeResult, exit codes, text rendering
    suite.py      `smoke all` and its JSON report schema
"""
