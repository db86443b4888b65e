"""GPU kernel smoke test, run by `fwdoctor smoke kernel` in the interpreter under test.

Standard library and torch only. Prints ONE JSON object on stdout (the last line) and
exits 0 whenever it could report, even when kernels failed: the parent judges.

For each device: matmul in fp32, fp16 and bf16 (bf16 only on compute capability >= 8.0,
where the tensor cores support it), an elementwise op and a reduction, each compared with
a float64 CPU reference computed from the same (already rounded) inputs. The error is the
largest absolute difference divided by the largest absolute reference value; the
tolerances are stated in TOLERANCE and copied into the output. A broken kernel (garbage,
zeros, a wrong arch) gives errors of order 1, far above any of them.

The CUDA error text is kept verbatim ("no kernel image is available for execution on the
device", "CUBLAS_STATUS_...", "an illegal memory access was encountered"): the parent
maps it to a diagnosis.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

# Relative tolerances: max|gpu - ref| / max|ref|, K = 256 products per output element.
# fp32 allows TF32 (10-bit mantissa) in case NVIDIA_TF32_OVERRIDE or a library default
# turns it on; fp16 output rounding is 2**-11 relative, bf16 2**-8, plus accumulation.
TOLERANCE = {
    "matmul_fp32": 2e-3,
    "matmul_fp16": 5e-3,
    "matmul_bf16": 2e-2,
    "elementwise_fp32": 1e-5,  # exp(a) * b + c: a few ulps between CPU and GPU libm
    "reduction_fp32": 1e-4,  # sum of 2**20 values in [0, 1): order-dependent rounding only
}
MATMUL_N = 256
GEMM_N = 2048  # the TFLOP/s figure: small enough for any GPU, big enough to time
GEMM_ITERS = 10


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=int, action="append", default=None)
    parser.add_argument("--no-gemm", action="store_true", help="skip the TFLOP/s figure")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    out: dict = {"tolerance": TOLERANCE}
    try:
        import torch
    except Exception as exc:  # no torch, or a torch that fails to import (missing libs)
        out.update(torch=None, error=f"{type(exc).__name__}: {exc}")
        print(json.dumps(out))
        return 0
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    try:
        out["arch_list"] = torch.cuda.get_arch_list()
    except Exception:
        out["arch_list"] = None
    try:
        count = torch.cuda.device_count()
    except Exception as exc:
        count = 0
        out["init_error"] = f"{type(exc).__name__}: {exc}"
    out["device_count"] = count
    if count == 0 and torch.version.cuda is not None and "init_error" not in out:
        # Why no device: torch.cuda.init() raises with the driver's own words.
        try:
            torch.cuda.init()
        except Exception as exc:
            out["init_error"] = f"{type(exc).__name__}: {exc}"
    devices = args.device if args.device is not None else list(range(count))
    out["devices"] = [test_device(torch, index, count, not args.no_gemm) for index in devices]
    print(json.dumps(out))
    return 0


def test_device(torch, index: int, count: int, gemm: bool) -> dict:
    result: dict = {"index": index, "checks": [], "tflops": {}}
    if index < 0 or index >= count:
        result["error"] = f"no CUDA device {index}: torch sees {count}"
        return result
    try:
        device = torch.device("cuda", index)
        props = torch.cuda.get_device_properties(device)
        result["name"] = props.name
        result["cc"] = f"{props.major}.{props.minor}"
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        return result
    gen = torch.Generator().manual_seed(1234 + index)
    dtypes = [("fp32", torch.float32), ("fp16", torch.float16)]
    if props.major >= 8:
        dtypes.append(("bf16", torch.bfloat16))
    else:
        result["checks"].append({"name": "matmul_bf16", "status": "skipped", "why": f"compute capability {result['cc']} < 8.0: no bf16 tensor cores"})
    for label, dtype in dtypes:
        result["checks"].append(check(f"matmul_{label}", lambda d=dtype: matmul(torch, device, d, gen)))
    result["checks"].append(check("elementwise_fp32", lambda: elementwise(torch, device, gen)))
    result["checks"].append(check("reduction_fp32", lambda: reduction(torch, device, gen)))
    if gemm:
        for label, dtype in dtypes[:2]:
            try:
                result["tflops"][label] = round(gemm_tflops(torch, device, dtype), 3)
            except Exception as exc:
                result["tflops"][label] = None
                result.setdefault("gemm_error", f"{type(exc).__name__}: {exc}")
    return result


def check(name: str, func) -> dict:
    try:
        err = func()
    except Exception as exc:
        return {"name": name, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
    tol = TOLERANCE[name]
    ok = err == err and err <= tol  # NaN fails
    return {"name": name, "status": "pass" if ok else "fail", "max_rel_error": err, "tolerance": tol}


def _rel_error(torch, got, ref) -> float:
    got64 = got.detach().to("cpu", torch.float64)
    scale = ref.abs().max().item() or 1.0
    return float((got64 - ref).abs().max().item() / scale)


def matmul(torch, device, dtype, gen) -> float:
    a = (torch.rand(MATMUL_N, MATMUL_N, generator=gen) * 2 - 1).to(dtype)
    b = (torch.rand(MATMUL_N, MATMUL_N, generator=gen) * 2 - 1).to(dtype)
    ref = a.to(torch.float64) @ b.to(torch.float64)
    got = a.to(device) @ b.to(device)
    torch.cuda.synchronize(device)
    return _rel_error(torch, got, ref)


def elementwise(torch, device, gen) -> float:
    a, b, c = (torch.rand(1 << 20, generator=gen) * 2 - 1 for _ in range(3))
    ref = torch.exp(a.to(torch.float64)) * b.to(torch.float64) + c.to(torch.float64)
    got = torch.exp(a.to(device)) * b.to(device) + c.to(device)
    torch.cuda.synchronize(device)
    return _rel_error(torch, got, ref)


def reduction(torch, device, gen) -> float:
    a = torch.rand(1 << 20, generator=gen)
    ref = a.to(torch.float64).sum()
    got = a.to(device).sum()
    torch.cuda.synchronize(device)
    return _rel_error(torch, got.reshape(1), ref.reshape(1))


def gemm_tflops(torch, device, dtype) -> float:
    a = torch.randn(GEMM_N, GEMM_N, device=device, dtype=dtype)
    b = torch.randn(GEMM_N, GEMM_N, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(GEMM_ITERS):
        a @ b
    torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    return 2.0 * GEMM_N**3 * GEMM_ITERS / elapsed / 1e12


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
