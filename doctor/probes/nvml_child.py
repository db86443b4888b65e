"""Ask NVML about the driver and each GPU, and print the answer as one JSON object.

Run in a child process (`python doctor/probes/nvml_child.py`, or `python -m
fwdoctor.probes.nvml_child`) by doctor/probes/driver.py, under a timeout: loading
libnvidia-ml talks to the kernel driver, and a wedged driver can hang or crash the caller.
This file imports nothing from the doctor so that it runs by path in any interpreter
that has nvidia-ml-py.

Output (always one JSON object on stdout, exit status 0 when it could print it):
    {"ok": true, "driver_version": "580.95.05", "cuda_driver_version": "13.0",
     "gpus": [{"index": 0, "name": ..., "cc": "9.0", "memory_mib": 81559, "uuid": ...,
               "bus_id": "00000000:62:00.0", "mig": false, "persistence": true,
               "nvlink": {"links": 18, "active": 18} or null,
               "health": {"retired_pages_pending": false, "remapped_rows_pending": false,
                          "remapping_failed": false, "remapped_rows_correctable": 0,
                          "remapped_rows_uncorrectable": 0, "ecc_uncorrected_volatile": 0,
                          "ecc_uncorrected_aggregate": 0} (each null where not supported),
               "clocks_event_reasons": 0 (nvmlClocksEventReason* bits) or null}]}
    {"ok": false, "kind": "no-pynvml" | "no-library" | "init-failed", "error": "..."}
A field NVML cannot answer for one GPU is null (like nvidia-smi's "N/A"), never an error.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _field(call: Callable[[], Any]) -> Any:
    """One per-GPU query; any failure (Not Supported, GPU lost...) reads as None."""
    try:
        return call()
    except Exception:  # noqa: BLE001 - per-field failure is "N/A", by design
        return None


def _cuda_version(pynvml: Any) -> str | None:
    # NVML encodes CUDA 13.0 as 13000 (major * 1000 + minor * 10).
    for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        func = getattr(pynvml, name, None)
        value = _field(func) if func else None
        if isinstance(value, int) and value > 0:
            return f"{value // 1000}.{(value % 1000) // 10}"
    return None


def _nvlink(pynvml: Any, handle: Any) -> dict[str, int] | None:
    """How many NVLinks NVML reports for this GPU and how many are up; None when it has none.

    nvmlDeviceGetNvLinkState answers for each link the GPU has (1 = up) and raises for the
    others, so the count of answers is the number of links."""
    links = active = 0
    for link in range(int(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18))):
        state = _field(lambda: pynvml.nvmlDeviceGetNvLinkState(handle, link))
        if state is None:
            continue
        links += 1
        active += 1 if state == 1 else 0
    return {"links": links, "active": active} if links else None


def _health(pynvml: Any, handle: Any) -> dict[str, bool | None]:
    """Memory repairs waiting for a GPU reset, readable without root: retired pages
    (before Ampere) and row remapping (Ampere and later); None where not supported."""
    pending = _field(lambda: pynvml.nvmlDeviceGetRetiredPagesPendingStatus(handle))
    rows = _field(lambda: pynvml.nvmlDeviceGetRemappedRows(handle))  # (corr, unc, pending, failed)
    rows_ok = isinstance(rows, tuple) and len(rows) == 4
    # nvml.h: NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1; NVML_VOLATILE_ECC = 0 (since the last
    # driver load), NVML_AGGREGATE_ECC = 1 (the GPU's lifetime).
    volatile = _field(lambda: pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, 0))
    aggregate = _field(lambda: pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, 1))
    return {
        "retired_pages_pending": bool(pending) if isinstance(pending, int) else None,
        "remapped_rows_pending": bool(rows[2]) if rows_ok else None,
        "remapping_failed": bool(rows[3]) if rows_ok else None,
        "remapped_rows_correctable": int(rows[0]) if rows_ok else None,
        "remapped_rows_uncorrectable": int(rows[1]) if rows_ok else None,
        "ecc_uncorrected_volatile": int(volatile) if isinstance(volatile, int) else None,
        "ecc_uncorrected_aggregate": int(aggregate) if isinstance(aggregate, int) else None,
    }


def _clock_events(pynvml: Any, handle: Any) -> int | None:
    """Why the clocks are held down now (a bit mask); the older name before driver 535."""
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        func = getattr(pynvml, name, None)
        value = _field(lambda: func(handle)) if func else None
        if isinstance(value, int):
            return value
    return None


def _gpu(pynvml: Any, index: int) -> dict[str, Any]:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    cc = _field(lambda: pynvml.nvmlDeviceGetCudaComputeCapability(handle))
    memory = _field(lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).total)
    mig = _field(lambda: pynvml.nvmlDeviceGetMigMode(handle)[0])
    persistence = _field(lambda: pynvml.nvmlDeviceGetPersistenceMode(handle))
    name = _field(lambda: _text(pynvml.nvmlDeviceGetName(handle)))
    uuid = _field(lambda: _text(pynvml.nvmlDeviceGetUUID(handle)))
    bus_id = _field(lambda: _text(pynvml.nvmlDeviceGetPciInfo(handle).busId))
    return {
        "index": index,
        "name": name,
        "cc": f"{cc[0]}.{cc[1]}" if cc else None,
        "memory_mib": int(memory) // (1024 * 1024) if isinstance(memory, int) else None,
        "uuid": uuid,
        "bus_id": bus_id,
        "mig": bool(mig) if isinstance(mig, int) else None,
        "persistence": bool(persistence) if isinstance(persistence, int) else None,
        "nvlink": _nvlink(pynvml, handle),
        "health": _health(pynvml, handle),
        "clocks_event_reasons": _clock_events(pynvml, handle),
    }


def query() -> dict[str, Any]:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError as exc:
        return {"ok": False, "kind": "no-pynvml", "error": f"cannot import pynvml (pip install nvidia-ml-py): {exc}"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, OSError from ctypes
        code = getattr(exc, "value", None)
        missing = code == getattr(pynvml, "NVML_ERROR_LIBRARY_NOT_FOUND", object())
        return {"ok": False, "kind": "no-library" if missing else "init-failed", "error": _text(exc)}
    try:
        driver = _field(lambda: _text(pynvml.nvmlSystemGetDriverVersion()))
        count = pynvml.nvmlDeviceGetCount()
        gpus = []
        for index in range(count):
            try:
                gpus.append(_gpu(pynvml, index))
            except Exception as exc:  # noqa: BLE001 - one bad GPU must not hide the others
                gpus.append({"index": index, "name": None, "cc": None, "memory_mib": None, "uuid": None,
                             "bus_id": None, "mig": None, "persistence": None, "nvlink": None, "health": None,
                             "clocks_event_reasons": None,
                             "error": _text(exc)})
        return {"ok": True, "driver_version": driver, "cuda_driver_version": _cuda_version(pynvml), "gpus": gpus}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "kind": "init-failed", "error": _text(exc)}
    finally:
        _field(pynvml.nvmlShutdown)


def main() -> int:
    sys.stdout.write(json.dumps(query()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
