"""Run INSIDE the inspected interpreter by doctor/probes/torch_deep.py (never imported by
fwdoctor itself): import torch, ask it what it was built with and what it can do, and print
one JSON line prefixed with FWDOCTOR_JSON: on stdout.

It is passed as `python -c SOURCE` from `/`, so neither doctor/probes/torch.py nor a
`torch/` folder in the user's working directory can shadow the real torch. Written for
any Python >= 3.7 and any torch >= 1.13; every step is guarded so one failure (no driver,
a missing libcudnn) still reports the rest.
"""

import json
import sys
import traceback
import warnings

MARKER = "FWDOCTOR_JSON:"
# Libraries worth reporting from /proc/self/maps: the CUDA stack torch actually loaded.
# This script cannot import fwdoctor; "libcudnn" and "libnccl" must stay the sonames of
# fwdoctor/libraries.py (CUDNN.soname, NCCL.soname), and cudnn_version / nccl_version are
# reported raw for torch_deep.py to read with that description (tests/test_libraries.py).
LIB_WORDS = (
    "libcuda.", "libcudart", "libcudnn", "libnccl", "libcublas", "libcufft", "libcurand",
    "libcusolver", "libcusparse", "libnvrtc", "libnvJitLink", "libnvshmem", "libcupti",
    "libnvidia-ml", "libtorch_cuda", "libc10_cuda", "libnvToolsExt",
)


def last_line(exc):
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def loaded_libs():
    paths = []
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                name = path.rsplit("/", 1)[-1]
                if path.startswith("/") and any(name.startswith(w) for w in LIB_WORDS) and path not in paths:
                    paths.append(path)
    except OSError:
        return None
    return paths


def main():
    out = {
        "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
        "imported": False,
        "import_error": None,
        "version": None,
        "cuda": None,
        "location": None,
        "is_available": None,
        "error": None,
        "warnings": [],
        "device_count": None,
        "devices": [],
        "cudnn_version": None,
        "cudnn_error": None,
        "nccl_version": None,
        "nccl_error": None,
        "arch_list": None,
        "loaded_libs": None,
    }
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch  # noqa: F401  (the point of this script)
        out["warnings"] += [str(w.message) for w in caught]
    except BaseException as exc:  # ImportError, OSError from a missing .so, even SystemExit
        out["import_error"] = last_line(exc)
        out["loaded_libs"] = loaded_libs()
        return out
    out["imported"] = True
    out["version"] = str(getattr(torch, "__version__", None))
    out["cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
    out["location"] = getattr(torch, "__file__", None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out["is_available"] = bool(torch.cuda.is_available())
            out["device_count"] = int(torch.cuda.device_count())
        messages = [str(w.message) for w in caught]
        out["warnings"] += messages
        # is_available() reports a broken driver only as a warning: that text is the error.
        if not out["is_available"] and messages:
            out["error"] = messages[0]
    except BaseException as exc:
        out["error"] = last_line(exc)
    if out["is_available"]:
        for index in range(out["device_count"] or 0):
            try:
                major, minor = torch.cuda.get_device_capability(index)
                out["devices"].append({"index": index, "name": torch.cuda.get_device_name(index), "cc": "%d.%d" % (major, minor)})
            except BaseException as exc:
                out["devices"].append({"index": index, "error": last_line(exc)})
    try:
        version = torch.backends.cudnn.version()
        out["cudnn_version"] = int(version) if version is not None else None
    except BaseException as exc:
        out["cudnn_error"] = last_line(exc)
    try:
        nccl = getattr(torch.cuda, "nccl", None)
        if nccl is not None and out["cuda"]:
            version = nccl.version()
            out["nccl_version"] = ".".join(str(p) for p in version) if isinstance(version, tuple) else str(version)
    except BaseException as exc:
        out["nccl_error"] = last_line(exc)
    try:
        out["arch_list"] = [str(a) for a in torch.cuda.get_arch_list()]
    except BaseException as exc:
        out["arch_list"] = None
        out["warnings"].append("get_arch_list: " + last_line(exc))
    out["loaded_libs"] = loaded_libs()
    return out


if __name__ == "__main__":
    try:
        result = main()
    except BaseException as exc:  # keep the contract: always one JSON line
        result = {"fatal": last_line(exc)}
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
