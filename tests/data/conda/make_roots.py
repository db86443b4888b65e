"""Writes tests/roots/conda-envs from the real conda-forge records in this folder (NOTE.md says
where each came from). Run it from the repository root after changing an input:

    .venv/bin/python tests/data/conda/make_roots.py

The output is committed; tests/test_conda_env.py checks that it is what this script writes.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
ROOT = REPO / "tests" / "roots" / "conda-envs"
GPU_HOST = REPO / "tests" / "roots" / "torch-cpu-on-gpu-host"  # proc/ and sys/ of an H100 host, driver 580.95.05
LOCK = HERE / "drdmannturb-conda-lock-linux-64-excerpt.yml"
CONDA_FORGE = "https://conda.anaconda.org/conda-forge/"


def lock_records() -> dict[str, dict]:
    """conda-lock entries -> conda-meta records as conda writes them (conda's PrefixRecord:
    the repodata fields plus fn, url, channel, files). `depends` is conda-lock's mapping
    turned back into match specs ("cudnn >=8.9.7.29,<9.0a0"); a spec of '' is the bare name."""
    data = yaml.safe_load(LOCK.read_text())
    out = {}
    for pkg in data["package"]:
        fn = pkg["url"].rsplit("/", 1)[1]
        stem = fn[: -len(".conda")] if fn.endswith(".conda") else fn[: -len(".tar.bz2")]
        build = stem.rsplit("-", 2)[2]
        subdir = pkg["url"].rsplit("/", 2)[1]
        out[pkg["name"]] = {
            "build": build,
            "build_number": int(build.rsplit("_", 1)[1]) if build.rsplit("_", 1)[-1].isdigit() else 0,
            "channel": CONDA_FORGE,
            "depends": [f"{name} {spec}".strip() for name, spec in (pkg.get("dependencies") or {}).items()],
            "fn": fn,
            "md5": pkg["hash"]["md5"],
            "name": pkg["name"],
            "sha256": pkg["hash"]["sha256"],
            "subdir": subdir,
            "url": pkg["url"],
            "version": str(pkg["version"]),
            "files": [],
        }
    return out


def write(path: Path, text: str | bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)


def record(prefix: Path, rec: dict, files: list[str] | None = None) -> None:
    rec = dict(rec, files=list(files or rec.get("files") or []))
    write(prefix / "conda-meta" / f"{rec['name']}-{rec['version']}-{rec['build']}.json", json.dumps(rec, indent=2, sort_keys=True) + "\n")


def version_py(version: str, cuda: str | None) -> str:
    # The layout of torch/version.py that tools/generate_torch_version.py writes (see
    # tests/data/torch/version-2.13.0+cpu.py, a real one).
    return (
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = '{version}'\n"
        "debug = False\n"
        f"cuda: Optional[str] = {repr(cuda)}\n"
        "git_version = 'fwdoctor-fixture'\n"
        "hip: Optional[str] = None\n"
    )


def python_env(prefix: Path, minor: str) -> Path:
    write(prefix / "bin" / "python", "", 0o755)  # content never read: python.py reads conda-meta
    (prefix / "bin" / f"python{minor}").parent.mkdir(parents=True, exist_ok=True)
    site = prefix / "lib" / f"python{minor}" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    return site


def dist_info(site: Path, name: str, version: str, installer: str) -> str:
    folder = f"{name}-{version}.dist-info"
    write(site / folder / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    write(site / folder / "INSTALLER", installer + "\n")
    return folder


def train(recs: dict[str, dict], prefix: Path) -> None:
    """conda-forge's pytorch 2.4.0 for CUDA 11.8 with its cudnn 8.9.7.29 and nccl 2.22.3.1."""
    site = python_env(prefix, "3.9")
    rel = "lib/python3.9/site-packages"
    torch_di = dist_info(site, "torch", "2.4.0", "conda")
    write(site / "torch" / "__init__.py", "")
    write(site / "torch" / "version.py", version_py("2.4.0", "11.8"))
    numpy_di = dist_info(site, "numpy", "1.26.4", "conda")
    for name, rec in recs.items():
        files: list[str] = []
        if name == "pytorch":
            files = [f"{rel}/torch/__init__.py", f"{rel}/torch/version.py", f"{rel}/{torch_di}/INSTALLER", f"{rel}/{torch_di}/METADATA"]
        elif name == "numpy":
            files = [f"{rel}/{numpy_di}/INSTALLER", f"{rel}/{numpy_di}/METADATA"]
        elif name == "cudnn":
            files = ["include/cudnn_version.h", "lib/libcudnn.so.8", "lib/libcudnn.so.8.9.7"]
        elif name == "nccl":
            files = ["include/nccl.h", "lib/libnccl.so.2", "lib/libnccl.so.2.22.3"]
        record(prefix, rec, files)
    # cudnn_version.h / nccl.h: the define lines of the real headers, with the record's version.
    write(prefix / "include" / "cudnn_version.h", "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n")
    write(prefix / "lib" / "libcudnn.so.8.9.7", "")
    (prefix / "lib" / "libcudnn.so.8").symlink_to("libcudnn.so.8.9.7")
    write(prefix / "include" / "nccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 22\n#define NCCL_PATCH 3\n")
    write(prefix / "lib" / "libnccl.so.2.22.3", "")
    (prefix / "lib" / "libnccl.so.2").symlink_to("libnccl.so.2.22.3")


def pipover(recs: dict[str, dict], prefix: Path) -> None:
    """The train env after `pip install torch==2.4.1 --index-url .../cu121`: pip's files
    replaced torch/, its dist-info sits beside the one conda's record lists."""
    site = python_env(prefix, "3.9")
    rel = "lib/python3.9/site-packages"
    dist_info(site, "torch", "2.4.1+cu121", "pip")
    write(site / "torch" / "__init__.py", "")
    write(site / "torch" / "version.py", version_py("2.4.1+cu121", "12.1"))
    for name in ("pytorch", "python", "cuda-version", "cudatoolkit", "libstdcxx-ng"):
        files = [f"{rel}/torch/__init__.py", f"{rel}/torch/version.py", f"{rel}/torch-2.4.0.dist-info/INSTALLER", f"{rel}/torch-2.4.0.dist-info/METADATA"] if name == "pytorch" else []
        record(prefix, recs[name], files)


def cpu(prefix: Path) -> None:
    """The pytorch channel's CPU build pytorch 1.9.0 py3.8_cpu_0 (pytorch/pytorch#69202)."""
    site = python_env(prefix, "3.8")
    write(site / "torch" / "__init__.py", "")
    write(site / "torch" / "version.py", version_py("1.9.0", None))
    record(prefix, {
        "build": "py3.8_cpu_0", "build_number": 0, "channel": "https://conda.anaconda.org/pytorch/linux-64",
        "depends": [], "fn": "pytorch-1.9.0-py3.8_cpu_0.tar.bz2", "name": "pytorch", "subdir": "linux-64",
        "url": "https://conda.anaconda.org/pytorch/linux-64/pytorch-1.9.0-py3.8_cpu_0.tar.bz2", "version": "1.9.0",
    }, [f"lib/python3.8/site-packages/torch/__init__.py", f"lib/python3.8/site-packages/torch/version.py"])


ENVS = {
    "train.env": "# conda activate train (conda-forge pytorch 2.4.0 for CUDA 11.8)\nCONDA_PREFIX=/opt/conda/envs/train\nPATH=/opt/conda/envs/train/bin:/usr/bin:/bin\nHOME=/home/user\n",
    "train-ldpath.env": "# the same, with a system cuDNN 9 folder on LD_LIBRARY_PATH\nCONDA_PREFIX=/opt/conda/envs/train\nPATH=/opt/conda/envs/train/bin:/usr/bin:/bin\nHOME=/home/user\nLD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu\n",
    "train-usersite.env": "# the same, for a user whose ~/.local has a pip --user triton and cuDNN wheel\nCONDA_PREFIX=/opt/conda/envs/train\nPATH=/opt/conda/envs/train/bin:/usr/bin:/bin\nHOME=/home/leak\n",
    "train-nousersite.env": "# the same user, with the user site switched off\nCONDA_PREFIX=/opt/conda/envs/train\nPATH=/opt/conda/envs/train/bin:/usr/bin:/bin\nHOME=/home/leak\nPYTHONNOUSERSITE=1\n",
    "pipover.env": "# conda activate pipover (pip installed torch over conda's pytorch)\nCONDA_PREFIX=/opt/conda/envs/pipover\nPATH=/opt/conda/envs/pipover/bin:/usr/bin:/bin\nHOME=/home/user\n",
    "cpu.env": "# conda activate cpu (the pytorch channel's CPU build)\nCONDA_PREFIX=/opt/conda/envs/cpu\nPATH=/opt/conda/envs/cpu/bin:/usr/bin:/bin\nHOME=/home/user\n",
    "python-train.env": "# nothing activated: `fwdoctor check --root R --python /opt/conda/envs/train/bin/python`\nPATH=/usr/bin:/bin\nHOME=/home/user\n",
}

README = """Conda environments on an H100 host (proc/ and sys/ copied from torch-cpu-on-gpu-host: driver 580.95.05).
Written by tests/data/conda/make_roots.py; tests/data/conda/NOTE.md says where every record came from.
opt/conda/envs/train: conda-forge pytorch 2.4.0 cuda118_py39hbf661d7_301 with cudnn 8.9.7.29, nccl 2.22.3.1,
  cudatoolkit 11.8.0, libstdcxx-ng 14.1.0, python 3.9.16 (real records of a conda-lock lockfile, converted
  to conda-meta records; `files` lists only the files of this fixture). Libraries are empty stand-ins,
  headers hold only the version defines; torch/version.py has the generated layout with CUDA 11.8.
opt/conda/envs/pipover: the same pytorch record, but site-packages holds pip's torch-2.4.1+cu121.dist-info
  (INSTALLER pip) and pip's torch/ files; the record lists torch-2.4.0.dist-info, which is gone.
opt/conda/envs/cpu: pytorch 1.9.0 py3.8_cpu_0 from the pytorch channel (pytorch/pytorch#69202).
usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0: an empty system cuDNN 9 (for train-ldpath.env).
home/leak/.local/lib/python3.9/site-packages: triton 2.1.0 and nvidia-cudnn-cu12 8.9.2.26 dist-infos
  (pip --user), which the train env does not have.
train.env: no conda finding (CUDA 11.8 build, matching cuDNN/NCCL, driver 580 runs CUDA 11.8).
train-ldpath.env: conda-cuda-libs-mismatch (LD_LIBRARY_PATH puts cuDNN 9 ahead of conda's 8.9.7).
train-usersite.env: conda-user-site-leak; train-nousersite.env: quiet (PYTHONNOUSERSITE=1).
pipover.env: conda-pip-torch-over-conda. cpu.env: conda-cpu-pytorch-on-gpu-host.
python-train.env: no CONDA_PREFIX; `--python /opt/conda/envs/train/bin/python` still finds the env.
"""


def main(root: Path = ROOT) -> int:
    global ROOT
    ROOT = root
    if ROOT.exists():
        shutil.rmtree(ROOT)
    for sub in ("proc", "sys"):
        shutil.copytree(GPU_HOST / sub, ROOT / sub, symlinks=True)
    recs = lock_records()
    train(recs, ROOT / "opt" / "conda" / "envs" / "train")
    pipover(recs, ROOT / "opt" / "conda" / "envs" / "pipover")
    cpu(ROOT / "opt" / "conda" / "envs" / "cpu")
    write(ROOT / "usr" / "lib" / "x86_64-linux-gnu" / "libcudnn.so.9.1.0", "")
    (ROOT / "usr" / "lib" / "x86_64-linux-gnu" / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")
    leak = ROOT / "home" / "leak" / ".local" / "lib" / "python3.9" / "site-packages"
    dist_info(leak, "triton", "2.1.0", "pip")
    dist_info(leak, "nvidia_cudnn_cu12", "8.9.2.26", "pip")
    (ROOT / "home" / "user").mkdir(parents=True, exist_ok=True)
    write(ROOT / "home" / "user" / ".keep", "")
    for name, text in ENVS.items():
        write(ROOT / name, text)
    write(ROOT / "README.fixture", README)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
