#!/bin/sh
# fwdoctor plan: torch-wheel: install torch 2.14.1+cu126 into /srv/it's a "test" dir/venv/bin/python
set -eu

# driver 535.104.05 from this host
# Python 3.11 from /srv/it's a "test" dir/venv/bin/python
# rejected 2.15.0+cu132: driver 535.104.05 < 580.65.06 needed for CUDA 13.2
# rejected 2.14.1+cu130: driver 535.104.05 < 580.65.06 needed for CUDA 13.0
# rejected 2.14.1+cu132: driver 535.104.05 < 580.65.06 needed for CUDA 13.2

# install torch 2.14.1+cu126 (CUDA 12.6) into /srv/it's a "test" dir/venv/bin/python
'/srv/it'"'"'s a "test" dir/venv/bin/python' -c 'import sys
want_version, want_cuda, want_gpu = sys.argv[1:4]
try:
    import torch
except Exception as exc:
    print(f"import torch failed: {type(exc).__name__}: {exc}")
    sys.exit(1)
have_version = torch.__version__.split("+")[0]
have_cuda = torch.version.cuda or "none"
print(f"torch {torch.__version__} CUDA {have_cuda} at {torch.__file__}")
if have_version != want_version or have_cuda != want_cuda:
    print(f"expected torch {want_version} with CUDA {want_cuda}")
    sys.exit(1)
' 2.14.1 12.6 nogpu >/dev/null 2>&1 || '/srv/it'"'"'s a "test" dir/venv/bin/python' -m pip install --index-url https://download.pytorch.org/whl/cu126 torch==2.14.1+cu126

# verify
# import torch in the target interpreter: version, CUDA, is_available()
'/srv/it'"'"'s a "test" dir/venv/bin/python' -c 'import sys
want_version, want_cuda, want_gpu = sys.argv[1:4]
try:
    import torch
except Exception as exc:
    print(f"import torch failed: {type(exc).__name__}: {exc}")
    sys.exit(1)
have_version = torch.__version__.split("+")[0]
have_cuda = torch.version.cuda or "none"
print(f"torch {torch.__version__} CUDA {have_cuda} at {torch.__file__}")
if have_version != want_version or have_cuda != want_cuda:
    print(f"expected torch {want_version} with CUDA {want_cuda}")
    sys.exit(1)
if want_gpu == "gpu":
    if not torch.cuda.is_available():
        print("torch.cuda.is_available() is False on a GPU host")
        sys.exit(1)
    x = torch.ones(4, device="cuda")
    print(f"GPU ok: {torch.cuda.get_device_name(0)}, sum={float(x.sum())}")
' 2.14.1 12.6 gpu
