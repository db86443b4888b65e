#!/bin/sh
# fwdoctor plan: cuda-toolkit: install CUDA toolkit 13.0 (pip)
set -eu

# REFUSED: driver 535.104.05 cannot run CUDA 13.0 programs (needs >= 580.65.06). fwdoctor never installs or replaces the NVIDIA driver: upgrade it to >= 580.65.06 yourself, install CUDA 12.9 or older instead, or pass --force to install a compiler whose programs will not run here
# REFUSED: CUDA 13.0 cannot compile for: NVIDIA GeForce GTX 1080 Ti sm_61 (CUDA 8.0..12.9)
exit 1
