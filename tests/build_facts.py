"""The facts of a build request, by hand: what doctor/probes/build.py reports about a
healthy host for `build torch --version 2.9.1 --cuda 12.8 --nccl 2.27.5 --cudnn 9.10.2.21
--arch "8.0;9.0+PTX" --python /v/bin/python --workdir /w`, any key replaceable. The build
rule, plan and golden tests start from these instead of probing the machine.
"""

from __future__ import annotations

from typing import Any, Mapping

from fwdoctor.model import Fact, Facts

GIB = 1024**3
ARCHS = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0")


class Unknown:
    """A fact the probes could not establish, with why."""

    def __init__(self, why: str) -> None:
        self.why = why


def toolkit(release: str = "12.8", root: str | None = None, archs: tuple[str, ...] | None = ARCHS, gcc_max: int | None = 14,
            gcc_min: int | None = None) -> dict[str, Any]:
    root = root or f"/usr/local/cuda-{release}"
    return {"root": root, "nvcc": f"{root}/bin/nvcc", "release": release, "gpu_archs": list(archs) if archs is not None else None,
            "host_gcc_min": gcc_min, "host_gcc_max": gcc_max, "host_config": f"{root}/include/crt/host_config.h"}


def pip_lib(lib: str, version: str, major: int) -> dict[str, Any]:
    return {"lib": lib, "kind": "pip", "version": version, "package": f"nvidia-{lib}-cu{major}", "cuda_major": major,
            "cuda_major_source": f"nvidia-{lib}-cu{major}"}


def path_lib(lib: str, version: str | None, include_dir: str | None, library_file: str | None, cuda_major: int | None,
             source: str = "the path") -> dict[str, Any]:
    return {"lib": lib, "kind": "path", "path": (include_dir or "/nowhere").rsplit("/", 1)[0], "version": version, "include_dir": include_dir,
            "library_file": library_file, "cuda_major": cuda_major, "cuda_major_source": source}


def kind_lib(lib: str, kind: str) -> dict[str, Any]:
    return {"lib": lib, "kind": kind}


def python_env(path: str = "/v/bin/python", isolated: bool = True, has_pip: bool | None = True, error: str = "") -> dict[str, Any]:
    prefix = path.rsplit("/", 2)[0]
    return {"executable": path, "version": "3.11.9", "prefix": prefix, "base_prefix": "/usr" if isolated else prefix,
            "isolated": isolated, "has_pip": has_pip, "error": error}


def tool(path: str | None, version: str | None = None) -> dict[str, Any] | None:
    return None if path is None else {"path": path, "version": version}


def gxx(path: str, version: str | None, where: str = "g++ on PATH") -> dict[str, Any]:
    return {"path": path, "version": version, "from": where}


HEALTHY: dict[str, Any] = {
    "request.build.torch": "2.9.1",
    "request.build.cuda": "12.8",
    "request.build.nccl": "2.27.5",
    "request.build.cudnn": "9.10.2.21",
    "request.build.arch": "8.0;9.0+PTX",
    "request.build.python": "/v/bin/python",
    "request.build.workdir": "/w",
    "request.build.source": None,
    "request.build.git": None,
    "request.build.jobs": None,
    "request.build.ccache": False,
    "request.build.debug": False,
    "request.build.cmake_only": False,
    "build.torch": "2.9.1",
    "build.source": None,
    "build.toolkit": toolkit(),
    "build.arch": {"list": "8.0;9.0+PTX", "from": "--arch"},
    "build.nccl": pip_lib("nccl", "2.27.5", 12),
    "build.cudnn": pip_lib("cudnn", "9.10.2.21", 12),
    "build.python": python_env(),
    "build.host_cxx": gxx("/usr/bin/g++", "12.2.0"),
    "build.gxx_installed": [],
    "build.cmake": tool("/usr/bin/cmake", "3.30.0"),
    "build.ninja": tool("/usr/bin/ninja", "1.11.1"),
    "build.ccache": None,
    "build.git": "/usr/bin/git",
    "build.path": "/usr/local/bin:/usr/bin:/bin",
    "build.cores": 16,
    "build.mem_available_bytes": 64 * GIB,
    "build.disk_free": {"path": "/w", "checked_at": "/", "bytes": 300 * GIB},
}


def build_facts(changes: Mapping[str, Any] | None = None, base: Mapping[str, Any] = HEALTHY) -> Facts:
    """HEALTHY with `changes` applied (an `Unknown` value makes that fact unknown)."""
    values = {**base, **(changes or {})}
    return Facts(Fact.unknown(k, v.why) if isinstance(v, Unknown) else Fact(k, v, source="test") for k, v in values.items())
