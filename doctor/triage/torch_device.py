"""What torch itself says of a GPU: `print(torch.cuda.get_device_properties(0))`

    _CudaDeviceProperties(name='GeForce GT 740', major=3, minor=0, total_memory=1991MB, multi_processor_count=2)
    _CudaDeviceProperties(name='NVIDIA GeForce RTX 3090', major=8, minor=6, total_memory=24259MB, multi_processor_count=82, uuid=..., L2_cache_size=6MB)

-> gpus.list with each GPU's name and its compute capability (major.minor) as the CUDA
runtime reported it, so a GPU the KB cannot name a capability for (a GeForce GT 740 shipped
on chips of two capabilities, doctor/kb/gpus.yaml) is still judged. The repr has read the
same from torch 1.0 to 2.x (pytorch/pytorch#31285, #36062). A ROCm build prints the same
class for an AMD GPU (gcnArchName=..., major=9 is a gfx9 part, no NVIDIA capability): not read.
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment, gpu_entry
from fwdoctor.triage.text import Lines

_PROPS = re.compile(r"_CudaDeviceProperties\(name='(?P<name>[^'\n]{1,100})', major=(?P<major>\d{1,2}), minor=(?P<minor>\d{1,2})(?P<rest>[^)\n]{0,400})")
_NOT_NVIDIA = re.compile(r"gcnArchName|^(?:AMD|Radeon)\b", re.IGNORECASE)


def find(lines: Lines) -> list[Fragment]:
    seen: dict[tuple[str, str], int] = {}  # (name, cc) -> first line: a GPU printed twice is one GPU
    for i, text in enumerate(lines.norm):
        if "_CudaDeviceProperties(" not in text:
            continue
        for match in _PROPS.finditer(text):
            name = match.group("name").strip()
            if not name or _NOT_NVIDIA.search(name) or _NOT_NVIDIA.search(match.group("rest")):
                continue
            seen.setdefault((name, f"{int(match.group('major'))}.{int(match.group('minor'))}"), i + 1)
    if not seen:
        return []
    first, last = min(seen.values()), max(seen.values())
    frag = Fragment("torch device properties", first, last)
    frag.add("gpus.list", [gpu_entry(index, name, cc=cc) for index, (name, cc) in enumerate(seen)])
    frag.notes.append(f"line {first}: torch.cuda.get_device_properties: " + ", ".join(f"{name} (cc {cc})" for name, cc in seen))
    return [frag]
