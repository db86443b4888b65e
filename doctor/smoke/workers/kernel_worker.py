"""GPU kernel smoke test, run by `fwdoctor smoke kernel` in the interpreter under test.

Standard library and torch only. Prints ONE JSON object on stdout (the last line) and
exits 0 whenever it could report, even when kernels failed: the parent judges.

For each device: matmul in fp32, fp16 and bf16 (bf16 only on compute capability >= 8.0,
where the tensor cores support it), an elementwise op, a reduction, and conv2d forward
and backward (input and weight gradients) in NCHW and channels_last, each compared with
a float64 CPU reference computed from the same (already rounded) inputs. The error is the
largest absolute difference divided by the largest absolute reference value; the
tolerances are stated in TOLERANCE and copied into the output. A broken kernel (garbage,
zeros, a wrong arch) gives errors of order 1, far above any of them. Then a few steps of
mixed-precision training (autocast + GradScaler) on a fixed batch: the loss must stay
finite and fall, gradients stay finite, and the scaler must not skip most steps.

Convolution goes to cuDNN on a GPU and to oneDNN (mkldnn) on the CPU; which backend
torch dispatched to (torch._C._select_conv_backend, the function torch's own tests use)
is reported beside the cuDNN version the process loaded (cudnnGetVersion through
torch.backends.cudnn.version()) and the libcudnn path from /proc/self/maps.

`--cpu` runs the same checks on the CPU (fp32 and bf16), so the worker's logic runs on
every machine and a CPU-only host gets a smoke test too.

The GEMM figure (`gemm_tflops`, with `gemm`: the size, dtype, iterations and seconds
timed) is what `fleet report` compares nodes by: a square matmul timed for about
GEMM_BUDGET_S per dtype, fp16 on a GPU (the tensor-core rate), fp32 on the CPU.
`tflops` keeps the figure per dtype (GPU: fp32 and fp16).

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
# conv2d: 3x3 over 16 channels = 144 products per output, 4*12*12 = 576 per weight
# gradient. fp32 allows TF32 (cuDNN's default for convolutions on Ampere and later,
# torch.backends.cudnn.allow_tf32); fp16/bf16 are bounded by output rounding (2**-11,
# 2**-8) plus accumulation, as for matmul. Forward, input and weight gradients alike.
for _layout in ("nchw", "nhwc"):
    for _label, _tol in (("fp32", 2e-3), ("fp16", 5e-3), ("bf16", 2e-2)):
        TOLERANCE[f"conv2d_{_label}_{_layout}"] = _tol
# AMP: not a tolerance but the thresholds of a healthy few steps on one fixed batch.
AMP_STEPS = 12
AMP_MIN_DROP = 0.2  # the last loss at most 80 % of the first (measured on the CPU in bf16: 2.27 -> 1.10,
# so a few steps the scaler skips on overflow still leave a clear fall)
AMP_MAX_SKIPPED = AMP_STEPS // 2  # GradScaler skips a step on inf/NaN grads; more is "stuck"
CONV = {"n": 4, "c": 16, "h": 12, "w": 12, "k": 32}  # small: the float64 reference runs on the CPU
# What torch must dispatch a convolution to for the check to count as the library's own.
CONV_BACKEND = {"cuda": "Cudnn", "cpu": "Mkldnn"}
MATMUL_N = 256
# The TFLOP/s figure. 4096^3 * 2 = 137 GFLOP a product: ~0.2 ms on an H100 in fp16, ~10 ms
# on a V100 in fp32, so a 0.15 s budget times tens to hundreds of products, never only the
# launch overhead; 3 x 4096^2 half floats is 100 MB, fine on any GPU. The CPU gets 1024
# (2 GFLOP, ~30 ms on two cores).
GEMM_N = {"cuda": 4096, "cpu": 1024}
GEMM_HEADLINE = {"cuda": "fp16", "cpu": "fp32"}
GEMM_BUDGET_S = 0.15  # per dtype: the whole figure stays well under a second
GEMM_MIN_ITERS = 3


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=int, action="append", default=None)
    parser.add_argument("--no-gemm", action="store_true", help="skip the TFLOP/s figure")
    parser.add_argument("--cpu", action="store_true", help="run the checks on the CPU (oneDNN), not on GPUs")
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
    if args.cpu:
        out["mode"] = "cpu"
        out["devices"] = [test_cpu(torch, not args.no_gemm)]
        print(json.dumps(out))
        return 0
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
    if count:
        out["cudnn"] = cudnn_info(torch)
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
        result["checks"].extend({"name": f"conv2d_bf16_{layout}", "status": "skipped", "why": f"compute capability {result['cc']} < 8.0: no bf16 tensor cores"} for layout in ("nchw", "nhwc"))
    common_checks(torch, device, dtypes, gen, result)
    amp = [("fp16", torch.float16)] + ([("bf16", torch.bfloat16)] if props.major >= 8 else [])
    for label, dtype in amp:
        result["checks"].append(amp_check(torch, device, label, dtype))
    if props.major < 8:
        result["checks"].append({"name": "amp_bf16", "status": "skipped", "why": f"compute capability {result['cc']} < 8.0: no bf16 tensor cores"})
    if gemm:
        gemm_figures(torch, device, dtypes[:2], result)
    return result


def test_cpu(torch, gemm: bool = True) -> dict:
    """The same checks on the CPU: fp32 and bf16 (oneDNN), bf16 autocast, the fp32 GEMM figure."""
    result: dict = {"index": "cpu", "name": "CPU", "checks": [], "tflops": {},
                    "threads": torch.get_num_threads(), "mkldnn": bool(torch.backends.mkldnn.is_available())}
    device = torch.device("cpu")
    gen = torch.Generator().manual_seed(1234)
    common_checks(torch, device, [("fp32", torch.float32), ("bf16", torch.bfloat16)], gen, result)
    result["checks"].append(amp_check(torch, device, "bf16", torch.bfloat16))
    if gemm:
        gemm_figures(torch, device, [("fp32", torch.float32)], result)
    return result


def gemm_figures(torch, device, dtypes, result: dict) -> None:
    """`tflops` per dtype, and the headline `gemm_tflops` with what was timed (`gemm`)."""
    headline = GEMM_HEADLINE[device.type]
    result["gemm_tflops"] = None
    for label, dtype in dtypes:
        try:
            timed = gemm_tflops(torch, device, dtype)
        except Exception as exc:
            result["tflops"][label] = None
            result.setdefault("gemm_error", f"{type(exc).__name__}: {exc}")
            continue
        result["tflops"][label] = timed["tflops"]
        if label == headline:
            result["gemm_tflops"] = timed["tflops"]
            result["gemm"] = {"dtype": label, **{k: v for k, v in timed.items() if k != "tflops"}}


def common_checks(torch, device, dtypes, gen, result: dict) -> None:
    """matmul per dtype, elementwise, reduction, conv2d per dtype and layout, into result."""
    for label, dtype in dtypes:
        result["checks"].append(check(f"matmul_{label}", lambda d=dtype: matmul(torch, device, d, gen)))
    result["checks"].append(check("elementwise_fp32", lambda: elementwise(torch, device, gen)))
    result["checks"].append(check("reduction_fp32", lambda: reduction(torch, device, gen)))
    backends = {}
    for label, dtype in dtypes:
        for layout in ("nchw", "nhwc"):
            name = f"conv2d_{label}_{layout}"
            seen: dict = {}
            entry = check(name, lambda d=dtype, cl=layout == "nhwc": conv2d(torch, device, d, cl, gen, seen))
            entry.update(seen)
            backends[name] = seen.get("backend")
            result["checks"].append(entry)
    result["conv_backends"] = backends


def _sync(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
    _sync(torch, device)
    return _rel_error(torch, got, ref)


def elementwise(torch, device, gen) -> float:
    a, b, c = (torch.rand(1 << 20, generator=gen) * 2 - 1 for _ in range(3))
    ref = torch.exp(a.to(torch.float64)) * b.to(torch.float64) + c.to(torch.float64)
    got = torch.exp(a.to(device)) * b.to(device) + c.to(device)
    _sync(torch, device)
    return _rel_error(torch, got, ref)


def reduction(torch, device, gen) -> float:
    a = torch.rand(1 << 20, generator=gen)
    ref = a.to(torch.float64).sum()
    got = a.to(device).sum()
    _sync(torch, device)
    return _rel_error(torch, got.reshape(1), ref.reshape(1))


def conv_backend(torch, x, w) -> str | None:
    """The convolution backend torch dispatches these tensors to ("Cudnn", "Mkldnn",
    "Slow2d" ...), or None when this torch lacks the (private) selector."""
    select = getattr(torch._C, "_select_conv_backend", None)
    if select is None:
        return None
    try:
        backend = select(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, None)
    except Exception:
        return None
    return str(backend).rpartition(".")[2]


def conv2d(torch, device, dtype, channels_last: bool, gen, seen: dict) -> float:
    """3x3 conv2d (padding 1): forward, grad input, grad weight vs float64 on the CPU.

    The worst of the three relative errors. `seen` gets the backend torch chose; a
    convolution that did not go to the library this device should use (cuDNN, oneDNN)
    raises, so the check fails saying where it went."""
    F = torch.nn.functional
    n, c, h, w, k = CONV["n"], CONV["c"], CONV["h"], CONV["w"], CONV["k"]
    x = (torch.rand(n, c, h, w, generator=gen) * 2 - 1).to(dtype)
    wt = ((torch.rand(k, c, 3, 3, generator=gen) * 2 - 1) / 12).to(dtype)
    gy = (torch.rand(n, k, h, w, generator=gen) * 2 - 1).to(dtype)
    x64, w64 = x.to(torch.float64).requires_grad_(), wt.to(torch.float64).requires_grad_()
    y64 = F.conv2d(x64, w64, padding=1)
    y64.backward(gy.to(torch.float64))
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    xd = x.to(device).to(memory_format=fmt).requires_grad_()
    wd = wt.to(device).to(memory_format=fmt).requires_grad_()
    backend = conv_backend(torch, xd.detach(), wd.detach())
    seen["backend"] = backend
    want = CONV_BACKEND.get(device.type)
    if backend is not None and want is not None and backend != want:
        raise RuntimeError(f"torch dispatched this convolution to {backend}, not {want}")
    yd = F.conv2d(xd, wd, padding=1)
    yd.backward(gy.to(device).to(memory_format=fmt))
    _sync(torch, device)
    seen["output_channels_last"] = bool(yd.is_contiguous(memory_format=torch.channels_last)) if channels_last else False
    return max(_rel_error(torch, yd, y64.detach()), _rel_error(torch, xd.grad, x64.grad), _rel_error(torch, wd.grad, w64.grad))


def amp_check(torch, device, label: str, dtype) -> dict:
    """A few training steps under autocast with a GradScaler, judged on their own terms."""
    name = f"amp_{label}"
    try:
        steps = amp_steps(torch, device, dtype)
    except Exception as exc:
        return {"name": name, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
    return {"name": name, **judge_amp(steps)}


def amp_steps(torch, device, dtype) -> list[dict]:
    """AMP_STEPS steps of a small conv net on one fixed batch: per step the loss, whether
    every gradient was finite (after unscaling), and the scaler's scale after update()."""
    nn = torch.nn
    torch.manual_seed(4321)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(16 * 16, 10)).to(device)
    x = torch.randn(16, 3, 16, 16).to(device)
    target = torch.randint(0, 10, (16,)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, init_scale=2.0**16)
    steps = []
    for _ in range(AMP_STEPS):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=dtype):
            out = model(x)
            loss = nn.functional.cross_entropy(out, target)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        finite = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
        scaler.step(opt)
        scaler.update()
        steps.append({"loss": float(loss.detach().float().item()), "autocast_dtype": str(out.dtype).replace("torch.", ""),
                      "grads_finite": finite, "scale": float(scaler.get_scale())})
    _sync(torch, device)
    return steps


def judge_amp(steps: list[dict]) -> dict:
    """pass/fail of a recorded AMP run, with the figures and the reason when it fails."""
    losses = [s["loss"] for s in steps]
    finite_losses = all(l == l and abs(l) != float("inf") for l in losses)
    # GradScaler halves the scale and skips the step when it found inf/NaN gradients.
    skipped = sum(1 for s in steps if not s["grads_finite"])
    out = {"losses": [round(l, 5) for l in losses], "skipped_steps": skipped, "final_scale": steps[-1]["scale"] if steps else None,
           "autocast_dtype": steps[0]["autocast_dtype"] if steps else None, "min_drop": AMP_MIN_DROP, "max_skipped": AMP_MAX_SKIPPED}
    why = ""
    if not finite_losses:
        why = "a loss was inf or NaN"
    elif skipped > AMP_MAX_SKIPPED:
        why = f"the gradient scaler skipped {skipped} of {len(steps)} steps (inf/NaN gradients): stuck"
    elif not (losses[-1] <= losses[0] * (1 - AMP_MIN_DROP)):
        why = f"the loss did not fall: {losses[0]:.4g} -> {losses[-1]:.4g} (needs <= {losses[0] * (1 - AMP_MIN_DROP):.4g})"
    elif not steps[-1]["grads_finite"]:
        why = "the last step's gradients were not finite"
    out["status"] = "fail" if why else "pass"
    if why:
        out["why"] = why
    return out


def cudnn_info(torch) -> dict:
    """The cuDNN this process loaded: cudnnGetVersion() and the library's path."""
    info: dict = {"enabled": bool(torch.backends.cudnn.enabled)}
    try:
        info["available"] = bool(torch.backends.cudnn.is_available())
        info["version"] = torch.backends.cudnn.version()
    except Exception as exc:
        info["error"] = f"{type(exc).__name__}: {exc}"
    info["library"] = loaded_library("libcudnn")
    return info


def loaded_library(stem: str) -> str | None:
    """The first mapped file named `stem`.so* (Linux /proc/self/maps), or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                _, slash, rest = line.rstrip("\n").partition("/")
                path = slash + rest
                if slash and path.rpartition("/")[2].startswith(stem + ".so"):
                    return path
    except OSError:
        return None
    return None


def gemm_tflops(torch, device, dtype) -> dict:
    """{"tflops", "n", "iters", "seconds"}: N x N products timed for at least GEMM_BUDGET_S
    (batches double until the budget is spent; the device is synchronised around each
    batch, so the time is the kernels', not their launches')."""
    n = GEMM_N[device.type]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = a @ b  # warm-up: the library picks its kernel (cuBLAS heuristics, oneDNN primitive)
    _sync(torch, device)
    iters, batch, elapsed = 0, 1, 0.0
    while elapsed < GEMM_BUDGET_S or iters < GEMM_MIN_ITERS:
        start = time.perf_counter()
        for _ in range(batch):
            c = torch.matmul(a, b, out=c)
        _sync(torch, device)
        elapsed += time.perf_counter() - start
        iters += batch
        batch *= 2
    return {"tflops": round(2.0 * n**3 * iters / elapsed / 1e12, 4), "n": n, "iters": iters, "seconds": round(elapsed, 4)}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
