import sys
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
