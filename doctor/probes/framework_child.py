"""Run INSIDE the inspected interpreter by doctor/probes/framework_deep.py (never imported
by fwdoctor): import one framework (argv[1]: jax | tensorflow | paddle), list the devices it
sees, run one small op on its first GPU, and print one JSON line prefixed with
FWDOCTOR_JSON: on stdout. Every error is reported verbatim (its last line).

Passed as `python -c SOURCE NAME` from `/`, so no folder in the user's working directory can
shadow the real package. Written for any Python >= 3.8; every step is guarded.
"""

import json
import sys
import traceback

MARKER = "FWDOCTOR_JSON:"
# The CUDA stack a framework maps: the same words as torch_child.py.
LIB_WORDS = (
    "libcuda.", "libcudart", "libcudnn", "libnccl", "libcublas", "libcufft", "libcusolver",
    "libcusparse", "libnvrtc", "libnvJitLink", "libnvshmem", "libcupti", "libnvidia-ml",
)


def last_line(exc):
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


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


def probe_jax(out):
    import jax  # noqa: F401

    out["imported"] = True
    out["version"] = str(jax.__version__)
    try:
        import jaxlib

        out["runtime_versions"]["jaxlib"] = str(getattr(jaxlib, "__version__", None))
    except BaseException as exc:
        out["warnings"].append("import jaxlib: " + last_line(exc))
    devices = jax.devices()
    out["devices"] = [{"platform": str(d.platform), "kind": str(getattr(d, "device_kind", "")), "id": int(d.id)} for d in devices]
    out["default_backend"] = str(jax.default_backend())
    try:
        gpus = jax.devices("gpu")
        out["gpu_count"] = len(gpus)
    except BaseException as exc:  # "Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present..."
        out["gpu_count"] = 0
        out["gpu_error"] = last_line(exc)
        return
    try:
        import jax.numpy as jnp

        value = jax.device_put(jnp.ones((4,)), gpus[0])
        float((value * 2).sum().block_until_ready())
    except BaseException as exc:
        out["op_error"] = last_line(exc)


def probe_tensorflow(out):
    import tensorflow as tf

    out["imported"] = True
    out["version"] = str(tf.__version__)
    try:
        info = dict(tf.sysconfig.get_build_info())
        out["runtime_versions"] = {k: str(v) for k, v in info.items() if k in ("cuda_version", "cudnn_version", "is_cuda_build")}
    except BaseException as exc:
        out["warnings"].append("get_build_info: " + last_line(exc))
    devices = tf.config.list_physical_devices()
    out["devices"] = [{"platform": str(d.device_type).lower(), "kind": str(d.name), "id": i} for i, d in enumerate(devices)]
    gpus = tf.config.list_physical_devices("GPU")
    out["gpu_count"] = len(gpus)
    out["default_backend"] = "gpu" if gpus else "cpu"
    if not gpus:
        return
    try:
        with tf.device("/GPU:0"):
            float(tf.reduce_sum(tf.ones((4,)) * 2.0).numpy())
    except BaseException as exc:
        out["op_error"] = last_line(exc)


def probe_paddle(out):
    import paddle

    out["imported"] = True
    out["version"] = str(paddle.__version__)
    compiled = bool(paddle.device.is_compiled_with_cuda())
    out["runtime_versions"] = {"cuda": str(paddle.version.cuda()), "cudnn": str(paddle.version.cudnn()), "compiled_with_cuda": str(compiled)}
    count = 0
    if compiled:
        try:
            count = int(paddle.device.cuda.device_count())
        except BaseException as exc:
            out["gpu_error"] = last_line(exc)
    out["gpu_count"] = count
    out["devices"] = [{"platform": "cpu", "kind": "cpu", "id": 0}] + [{"platform": "gpu", "kind": "gpu", "id": i} for i in range(count)]
    out["default_backend"] = "gpu" if count else "cpu"
    if not count:
        return
    try:
        value = paddle.to_tensor([1.0, 2.0], place=paddle.CUDAPlace(0))
        float((value * 2).sum())
    except BaseException as exc:
        out["op_error"] = last_line(exc)


def main(name):
    out = {
        "framework": name,
        "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
        "imported": False,
        "import_error": None,
        "version": None,
        "devices": [],
        "default_backend": None,
        "gpu_count": None,
        "gpu_error": None,
        "op_error": None,
        "runtime_versions": {},
        "warnings": [],
        "loaded_libs": None,
    }
    run = {"jax": probe_jax, "tensorflow": probe_tensorflow, "paddle": probe_paddle}.get(name)
    if run is None:
        out["import_error"] = "unknown framework %r" % name
        return out
    try:
        run(out)
    except BaseException as exc:  # ImportError, OSError from a missing .so, even SystemExit
        key = "import_error" if not out["imported"] else "gpu_error"
        out[key] = last_line(exc)
    out["loaded_libs"] = loaded_libs()
    return out


if __name__ == "__main__":
    try:
        result = main(sys.argv[1] if len(sys.argv) > 1 else "")
    except BaseException as exc:  # keep the contract: always one JSON line
        result = {"fatal": last_line(exc)}
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
