#!/bin/sh
# fwdoctor plan: torch-wheel: install torch
set -eu

# REFUSED: no official torch wheel in the KB fits Python 3.11, driver 390.157, GPUs Tesla K80 (sm_37)
# REFUSED: closest: 2.5.1+cu118: driver 390.157 < 450.80.02 needed for CUDA 11.8
# REFUSED: closest: 2.5.0+cu118: driver 390.157 < 450.80.02 needed for CUDA 11.8
# REFUSED: closest: 2.4.1+cu118: driver 390.157 < 450.80.02 needed for CUDA 11.8
# REFUSED: fwdoctor never changes the NVIDIA driver: upgrade it yourself, or relax --torch/--cuda
exit 1
