#!/usr/bin/env python3
"""Written by fwdoctor build torch: check the installed torch against the build request."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", required=True)
parser.add_argument("--nccl")
parser.add_argument("--cudnn")
parser.add_argument("--arch", required=True)
args = parser.parse_args()

import torch

problems = []
seen = {"torch": torch.__version__, "file": torch.__file__, "cuda": torch.version.cuda}
if torch.version.cuda is None or torch.version.cuda.split(".")[:2] != args.cuda.split(".")[:2]:
    problems.append(f"torch.version.cuda is {torch.version.cuda}, wanted {args.cuda}")
if args.nccl:
    have = ".".join(map(str, torch.cuda.nccl.version()))
    seen["nccl"] = have
    if have.split(".")[:3] != args.nccl.split(".")[:3]:
        problems.append(f"torch.cuda.nccl.version() is {have}, wanted {args.nccl}")
if args.cudnn:
    code = torch.backends.cudnn.version()
    seen["cudnn"] = code
    parts = [int(p) for p in args.cudnn.split(".")[:3]] + [0, 0]
    want = parts[0] * 10000 + parts[1] * 100 + parts[2] if parts[0] >= 9 else parts[0] * 1000 + parts[1] * 100 + parts[2]
    if code != want:
        problems.append(f"torch.backends.cudnn.version() is {code}, wanted {want} ({args.cudnn})")
flags = torch._C._cuda_getArchFlags().split()
seen["arch_flags"] = flags
for entry in filter(None, args.arch.replace(",", ";").split(";")):
    cc = entry.replace("+PTX", "")
    name = "sm_" + cc.replace(".", "")
    if name not in flags:
        problems.append(f"{name} missing from the built arch list {flags}")
    if entry.endswith("+PTX") and "compute_" + cc.replace(".", "") not in flags:
        problems.append(f"compute_{cc.replace('.', '')} (PTX) missing from the built arch list {flags}")
if torch.cuda.is_available():
    x = torch.randn(256, 256, device="cuda")
    seen["matmul"] = float((x @ x).sum().item())
    if args.cudnn:
        conv = torch.nn.Conv2d(3, 8, 3).cuda()
        seen["conv"] = list(conv(torch.randn(1, 3, 16, 16, device="cuda")).shape)
else:
    seen["smoke"] = "skipped: no GPU visible"
seen["problems"] = problems
print(json.dumps(seen, indent=2))
sys.exit(1 if problems else 0)
