"""A stand-in for PyTorch's setup.py, reduced to how it drives CMake.

Like pytorch/pytorch setup.py + tools/setup_helpers/cmake.py it
- configures ./build with `-DPython_EXECUTABLE=<the interpreter running this file>` (new
  PyTorch; old PyTorch passed -DPYTHON_EXECUTABLE, so both are passed here),
- forwards every BUILD_*/USE_*/CMAKE_* environment variable and a fixed list of others
  (CUDNN_*, TORCH_CUDA_ARCH_LIST, CUDA_NVCC_EXECUTABLE, ...) as -D definitions,
- uses Ninja when `ninja` is on PATH, builds with `-j $MAX_JOBS`,
- stops after configuring for `python setup.py build --cmake-only` or CMAKE_ONLY=1.
The wheel it builds holds the build's record (fwdoctor-probe.json) and nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_DIR = os.path.join(HERE, "build")

CMAKE_ONLY = os.environ.pop("CMAKE_ONLY", "") in ("1", "ON", "on", "true", "TRUE")
if "--cmake-only" in sys.argv:
    sys.argv.remove("--cmake-only")
    CMAKE_ONLY = True

# tools/setup_helpers/cmake.py: env vars passed through under the same or another name.
ADDITIONAL = {"CUDNN_LIB_DIR": "CUDNN_LIBRARY"}
ADDITIONAL.update({v: v for v in ("CUDA_HOST_COMPILER", "CUDA_NVCC_EXECUTABLE", "CUDNN_LIBRARY", "CUDNN_INCLUDE_DIR", "CUDNN_ROOT", "TORCH_CUDA_ARCH_LIST")})
LOW_PRIORITY_ALIASES = {
    "CUDA_HOST_COMPILER": "CMAKE_CUDA_HOST_COMPILER",
    "CUDAHOSTCXX": "CUDA_HOST_COMPILER",
    "CMAKE_CUDA_HOST_COMPILER": "CUDA_HOST_COMPILER",
    "CMAKE_CUDA_COMPILER": "CUDA_NVCC_EXECUTABLE",
    "CUDACXX": "CUDA_NVCC_EXECUTABLE",
}


def cmake_args() -> list[str]:
    options: dict[str, str] = {}
    for var, val in os.environ.items():
        true_var = ADDITIONAL.get(var)
        if true_var is not None:
            options[true_var] = val
        elif var.startswith(("BUILD_", "USE_", "CMAKE_")):
            options[var] = val
        if var in LOW_PRIORITY_ALIASES and LOW_PRIORITY_ALIASES[var] not in options:
            options[LOW_PRIORITY_ALIASES[var]] = val
    options["Python_EXECUTABLE"] = sys.executable
    options["PYTHON_EXECUTABLE"] = sys.executable
    args = ["-GNinja"] if shutil.which("ninja") and os.environ.get("USE_NINJA", "1") not in ("0", "OFF") else []
    args += [f"-D{k}={v}" for k, v in sorted(options.items())]
    return args + [HERE]


def run_cmake() -> None:
    os.makedirs(BUILD_DIR, exist_ok=True)
    subprocess.check_call(["cmake", *cmake_args()], cwd=BUILD_DIR, timeout=600)
    if CMAKE_ONLY:
        print("fwdoctor-probe: CMAKE_ONLY: configured, not building", flush=True)
        return
    build = ["cmake", "--build", "."]
    if os.environ.get("MAX_JOBS"):
        build += ["-j", os.environ["MAX_JOBS"]]
    subprocess.check_call(build, cwd=BUILD_DIR, timeout=600)


class CMakeBuild(build_ext):
    def run(self) -> None:
        run_cmake()
        if CMAKE_ONLY:
            sys.exit(0)
        os.makedirs(self.build_lib, exist_ok=True)
        shutil.copy(os.path.join(BUILD_DIR, "fwdoctor-probe.json"), os.path.join(self.build_lib, "fwdoctor-probe.json"))

    def get_outputs(self) -> list[str]:
        return [os.path.join(self.build_lib, "fwdoctor-probe.json")]


setup(
    name="fwdoctor-cmake-probe",
    version="0.0.0",
    ext_modules=[Extension("fwdoctor_probe_stub", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
