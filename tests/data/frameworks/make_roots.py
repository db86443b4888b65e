"""Builds the tests/roots/frameworks-* fixture roots from real files (run from the repo root:
`python tests/data/frameworks/make_roots.py`; the roots are committed, this says how).

- /proc, /sys and /opt/venv/bin + pyvenv.cfg: copied from tests/roots/torch-driver-ok (H100,
  driver 580.95.05) or tests/roots/torch-driver-too-old (H100, driver 515.76); see their
  README.fixture.
- Each framework's dist-info METADATA, TensorFlow's build_info.py: the real wheel members in
  tests/data/frameworks/ (README.md there gives their URLs and sha256).
- torch/version.py: tests/roots/torch-driver-ok's (the real 2.14.1+cu130 file).
- nvidia-* wheels: dist-info folders named for real PyPI releases, holding a three-line
  METADATA stand-in (the probe reads the folder name only).
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "frameworks"
ROOTS = REPO / "tests" / "roots"
SITE = "opt/venv/lib/python3.11/site-packages"

JAX_CUDA13 = {"jax": "jax-0.10.2-py3-none-any.whl.METADATA", "jaxlib": "jaxlib-0.10.2-cp311-cp311-manylinux_2_27_x86_64.whl.METADATA",
              "jax_cuda13_plugin": "jax_cuda13_plugin-0.10.2-cp311-cp311-manylinux_2_27_x86_64.whl.METADATA",
              "jax_cuda13_pjrt": "jax_cuda13_pjrt-0.10.2-py3-none-manylinux_2_27_x86_64.whl.METADATA"}
# jax[cuda13]==0.10.2's wheels: torch 2.14.1+cu130's pins where it has one (cuDNN, NCCL,
# NVSHMEM), else the lowest version the plugin's `with-cuda` extra allows (each a real PyPI
# release, checked in the index 2026-12-01).
NVIDIA_CU13 = {"nvidia-cublas": "13.0.0.19", "nvidia-cuda-cupti": "13.0.48", "nvidia-cuda-nvcc": "13.0.48", "nvidia-cuda-runtime": "13.0.48",
               "nvidia-cudnn-cu13": "9.24.0.43", "nvidia-cufft": "12.0.0.15", "nvidia-cusolver": "12.0.3.29", "nvidia-cusparse": "12.6.2.49",
               "nvidia-nccl-cu13": "2.30.7", "nvidia-nvjitlink": "13.0.39", "nvidia-cuda-nvrtc": "13.0.48", "nvidia-nvshmem-cu13": "3.4.5", "nvidia-nvvm": "13.0.48"}
TF_2191 = "tensorflow-2.19.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
# tensorflow[and-cuda]==2.19.1's pins, with nvidia-cudnn-cu12 moved to 9.10.2.21 (what torch
# 2.9.1 pins: installing it afterwards does that).
NVIDIA_TF = {"nvidia-cublas-cu12": "12.5.3.2", "nvidia-cuda-cupti-cu12": "12.5.82", "nvidia-cuda-nvcc-cu12": "12.5.82", "nvidia-cuda-nvrtc-cu12": "12.5.82",
             "nvidia-cuda-runtime-cu12": "12.5.82", "nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cufft-cu12": "11.2.3.61", "nvidia-curand-cu12": "10.3.6.82",
             "nvidia-cusolver-cu12": "11.6.3.83", "nvidia-cusparse-cu12": "12.5.1.3", "nvidia-nccl-cu12": "2.23.4", "nvidia-nvjitlink-cu12": "12.5.82"}


def base(name: str, host: str) -> Path:
    root = ROOTS / name
    if root.exists():
        shutil.rmtree(root)
    src = ROOTS / host
    for part in ("proc", "sys", "opt/venv/bin", "opt/venv/pyvenv.cfg", "fixture.env"):
        s, d = src / part, root / part
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d, symlinks=True)
        else:
            shutil.copy2(s, d, follow_symlinks=False)
    (root / SITE).mkdir(parents=True, exist_ok=True)
    return root


def dist(root: Path, name: str, version: str, metadata: str | None = None) -> None:
    folder = root / SITE / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True)
    text = (DATA / metadata).read_text() if metadata else f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    (folder / "METADATA").write_text(text)


def jax(root: Path, nvidia: dict[str, str]) -> None:
    for name, meta in JAX_CUDA13.items():
        dist(root, name, "0.10.2", meta)
    for name, version in nvidia.items():
        dist(root, name, version)


def torch(root: Path) -> None:
    dist(root, "torch", "2.14.1", "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl.METADATA")
    pkg = root / SITE / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy2(ROOTS / "torch-driver-ok" / SITE / "torch" / "version.py", pkg / "version.py")


def libdevice(root: Path, folder: str) -> None:
    """A stand-in for the libdevice.10.bc the nvidia-nvvm (CUDA 13: nvidia/cu13) or
    nvidia-cuda-nvcc-cu12 (nvidia/cuda_nvcc) wheel installs; the probe checks only that it exists."""
    path = root / folder / "nvvm/libdevice/libdevice.10.bc"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("stand-in for CUDA's libdevice bitcode\n")


def readme(root: Path, text: str) -> None:
    (root / "README.fixture").write_text(text.strip() + "\nHow it was built: tests/data/frameworks/make_roots.py (sources in its docstring).\n")


def main() -> None:
    r = base("frameworks-jax", "torch-driver-ok")
    jax(r, NVIDIA_CU13)
    libdevice(r, f"{SITE}/nvidia/cu13")
    readme(r, "JAX only: jax 0.10.2 + jaxlib + jax-cuda13-plugin/pjrt 0.10.2 with its nvidia-* wheels, H100, driver 580.95.05. Near miss: no framework finding.")

    r = base("frameworks-jax-driver-old", "torch-driver-too-old")
    jax(r, NVIDIA_CU13)
    libdevice(r, f"{SITE}/nvidia/cu13")
    readme(r, "JAX only, jax[cuda13] 0.10.2 on driver 515.76 (CUDA 13 needs >= 580.65.06): driver-too-old-for-framework.")

    r = base("frameworks-tf", "torch-driver-ok")
    dist(r, "tensorflow", "2.19.1", f"{TF_2191}.METADATA")
    info = r / SITE / "tensorflow/python/platform"
    info.mkdir(parents=True)
    shutil.copy2(DATA / f"{TF_2191}.tensorflow__python__platform__build_info.py", info / "build_info.py")
    for name, version in NVIDIA_TF.items():
        dist(r, name, version)
    libdevice(r, f"{SITE}/nvidia/cuda_nvcc")
    readme(r, "TensorFlow only: tensorflow[and-cuda] 2.19.1 (real METADATA and build_info.py) on an H100, driver 580.95.05, with nvidia-cudnn-cu12 9.10.2.21 instead of the pinned 9.3.0.75: framework-nvidia-wheel-mismatch.")

    r = base("frameworks-torch-jax", "torch-driver-ok")
    torch(r)
    jax(r, {**NVIDIA_CU13, "nvidia-cudnn-cu13": "9.28.1.4", "nvidia-nccl-cu13": "2.32.3", "nvidia-cusparselt-cu13": "0.8.1"})
    libdevice(r, f"{SITE}/nvidia/cu13")
    readme(r, "torch 2.14.1+cu130 and jax[cuda13] 0.10.2 in one venv after an eager upgrade of the nvidia wheels: nvidia-cudnn-cu13 9.28.1.4 and nvidia-nccl-cu13 2.32.3 satisfy jax but break torch's ==9.24.0.43 / ==2.30.7 pins: frameworks-nvidia-conflict, with 9.24.0.43 / 2.30.7 satisfying both.")

    r = base("frameworks-jax-local-no-cuda", "torch-driver-ok")
    jax(r, {})
    readme(r, "jax 0.10.2 + jax-cuda13-plugin/pjrt as `jax[cuda13-local]` installs them (no nvidia-* wheels) on a host with no CUDA toolkit: XLA finds no nvvm/libdevice/libdevice.10.bc (xla-libdevice-missing) and no ptxas (ptxas-too-old-for-xla).")


if __name__ == "__main__":
    main()
