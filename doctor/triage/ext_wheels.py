"""Prebuilt torch extension wheels a report shows, and the torch they were built for (issue 26,
build-ext): flash-attn, mamba-ssm and causal-conv1d name theirs
"flash_attn-2.5.5+cu118torch2.2cxx11abiFALSE-cp310-cp310-linux_x86_64.whl" (their setup.py's
get_wheel_url, doctor/kb/extensions.yaml); PyG's torch-scatter/-sparse/-cluster carry
"+pt21cu121" and come from `-f https://data.pyg.org/whl/torch-2.1.0+cu121.html`; detectron2
from `-f https://dl.fbaipublicfiles.com/detectron2/wheels/cu102/torch1.9/index.html`. Read in
a wheel file name, a release-asset URL (with "%2B" for "+"), `pip install ...`, pip's
"Successfully installed", pip list / freeze rows.

Each such wheel links against the C++ symbols of one torch release, CUDA major and (flash-attn's
family) C++ ABI flag. The rule here compares them with the torch the report shows: its
torch.version/torch.cuda (collect_env, pip list, `torch.__version__`), else a torch version the
report states in words ("PyTorch version 2.2.0", "torch==2.1.0", an issue form's "PyTorch
Version (e.g., 1.0): 2.1.1"), and the ABI flag printed by
`torch._C._GLIBCXX_USE_CXX11_ABI` / `torch.compiled_with_cxx11_abi()`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, rule
from fwdoctor.triage.base import Fragment
from fwdoctor.triage.text import Lines
from fwdoctor.versions import major as version_major, release

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# short enough to stay one copyable line in an 80-column report (tests/test_text_width.py)
ABI_COMMAND = 'python -c "import torch;print(torch._C._GLIBCXX_USE_CXX11_ABI)"'

_PLUS = r"(?:\+|%2[Bb])"  # a release-asset URL writes the local version's "+" as %2B
# flash-attn / mamba-ssm / causal-conv1d: NAME-VERSION+cu{118|122|12}torch{X.Y}cxx11abi{TRUE|FALSE},
# as a wheel name (then -cpXY-cpXY-PLATFORM.whl) or a pip list / freeze row ("flash_attn 2.5.5+cu...").
_DAO = re.compile(
    rf"(?<![\w.-])(?P<name>[A-Za-z][\w.-]{{0,40}}?)(?:-|==|\s{{1,40}})(?P<version>\d{{1,4}}(?:\.\d{{1,6}}){{0,3}}(?:\.post\d{{1,4}})?)"
    rf"{_PLUS}cu(?P<cuda>\d{{2,3}})torch(?P<torch>\d{{1,2}}\.\d{{1,3}})cxx11abi(?P<abi>TRUE|FALSE)"
    r"(?:-(?P<python>cp\d{2,3})-[\w]{1,12}-(?P<platform>[\w]{1,40}?)\.whl)?", re.IGNORECASE)
# PyG's wheels: torch_scatter-2.1.2+pt20cu117-cp310-..., "torch-scatter 2.1.2+pt21cu121", "+pt113cpu"
_PYG = re.compile(
    rf"(?<![\w.-])(?P<name>(?:torch[_-](?:scatter|sparse|cluster|spline[_-]conv)|pyg[_-]lib))(?:-|==|\s{{1,40}})"
    rf"(?P<version>\d{{1,4}}(?:\.\d{{1,6}}){{0,3}}(?:\.post\d{{1,4}})?){_PLUS}pt(?P<pt>\d)(?P<ptminor>\d{{1,2}})(?:cu(?P<cuda>\d{{2,3}})|cpu)(?![\w])",
    re.IGNORECASE)
# PyG's local tag alone is PyG's: "attempted with version 2.1.2+pt20cu118" names no package
_PYG_BARE = re.compile(rf"(?<![\w.+-])(?P<version>\d{{1,4}}(?:\.\d{{1,6}}){{1,3}}){_PLUS}pt(?P<pt>\d)(?P<ptminor>\d{{1,2}})(?:cu(?P<cuda>\d{{2,3}})|cpu)(?![\w])")
# PyG's find-links pages: https://data.pyg.org/whl/torch-2.1.0+cu121.html (pytorch-geometric.com before)
_PYG_PAGE = re.compile(rf"(?:data\.pyg\.org|pytorch-geometric\.com)/whl/torch-(?P<torch>\d{{1,2}}\.\d{{1,3}})(?:\.\d{{1,3}})?{_PLUS}(?:cu(?P<cuda>\d{{2,3}})|cpu)",
                       re.IGNORECASE)
# detectron2's find-links index: .../detectron2/wheels/cu102/torch1.9/index.html
_D2_PAGE = re.compile(r"detectron2/wheels/(?:cu(?P<cuda>\d{2,3})|cpu)/torch(?P<torch>\d{1,2}\.\d{1,3})/", re.IGNORECASE)

# The torch a report states in words. The issue form's "(e.g., 1.0)" hint is skipped; "torch2.2"
# inside a wheel name never counts (the wheel patterns are cut out of the line first).
_TORCH_SAID = re.compile(
    r"(?<![\w./-])(?:py)?torch(?:\s{0,3}version)?(?:\s{0,3}\(e\.g\.,?\s{0,3}[\d.]{1,10}\))?\s{0,3}(?:[:=]{1,2}|\bis\b)?\s{0,3}[\"'`]?"
    r"v?(?P<version>\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:(?:a|b|rc)\d{1,3})?(?:\+[\w.]{1,40})?)(?![\w.]*\d)",
    re.IGNORECASE)
# torch._C._GLIBCXX_USE_CXX11_ABI / torch.compiled_with_cxx11_abi(): inline ("...: False"), at a
# prompt with the answer on the next line, or the documented one-liner's printed "2.2.0+cu121 12.1 False".
_ABI_EXPR = r"torch(?:\._C\._GLIBCXX_USE_CXX11_ABI|\.compiled_with_cxx11_abi\(\))"
_ABI_INLINE = re.compile(rf"{_ABI_EXPR}\)?\s{{0,8}}(?:[:=]|->|returns)\s{{0,8}}[\"'`]?(?P<flag>True|False)\b")
_ABI_ASK = re.compile(rf"^\s*(?:>>>\s*|In \[\d+\]:\s*)?(?:print\()?{_ABI_EXPR}\)?\s*$")
_ONE_LINER = re.compile(rf"print\([^)]{{0,200}}?{_ABI_EXPR}\)?\s*\)")  # bounded: linear in the line
_FLAG_LAST = re.compile(r"(?:^|\s)(?P<flag>True|False)\s*$")


def _wheels(text: str, line: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in _DAO.finditer(text):
        out.append({"package": m.group("name").replace("_", "-").lower(), "version": m.group("version"), "line": line,
                    "torch": m.group("torch"), "cuda": m.group("cuda"), "cxx11_abi": m.group("abi").upper() == "TRUE",
                    "platform": (m.group("platform") or None), "text": m.group(0)})
    for m in _PYG.finditer(text):
        out.append({"package": m.group("name").replace("_", "-").lower(), "version": m.group("version"), "line": line,
                    "torch": f"{m.group('pt')}.{m.group('ptminor')}", "cuda": m.group("cuda"), "cxx11_abi": None,
                    "platform": None, "text": m.group(0)})
    named = [m.span("version") for m in _PYG.finditer(text)]
    for m in _PYG_BARE.finditer(text):
        if m.span("version") not in named:
            out.append({"package": "a PyG wheel", "version": m.group("version"), "line": line,
                        "torch": f"{m.group('pt')}.{m.group('ptminor')}", "cuda": m.group("cuda"), "cxx11_abi": None,
                        "platform": None, "text": m.group(0)})
    for pattern, package in ((_PYG_PAGE, "pyg find-links page"), (_D2_PAGE, "detectron2 find-links index")):
        for m in pattern.finditer(text):
            out.append({"package": package, "version": None, "line": line, "torch": m.group("torch"), "cuda": m.group("cuda"),
                        "cxx11_abi": None, "platform": None, "text": m.group(0)})
    return out


def find(lines: Lines) -> list[Fragment]:
    """A fragment with `report.ext_wheels` (each prebuilt extension wheel: package, version,
    line, the torch X.Y, CUDA tag and ABI flag it was built for), with `report.torch_stated`
    (torch versions the report states in words) and `torch.cxx11_abi` where it prints the flag.
    None when the report names no such wheel."""
    wheels: list[dict[str, Any]] = []
    stated: list[dict[str, Any]] = []
    abi: tuple[bool, int] | None = None
    norm = lines.norm
    for i, text in enumerate(norm):
        if not text:
            continue
        found = _wheels(text, i + 1)
        wheels += found
        rest = text
        for w in found:
            rest = rest.replace(w["text"], " ")
        if "torch" in rest.lower():
            for m in _TORCH_SAID.finditer(rest):
                stated.append({"version": m.group("version"), "line": i + 1})
        if "cxx11_abi" in text.lower():
            flag = _ABI_INLINE.search(text)
            if flag:
                abi = (flag.group("flag") == "True", i + 1)
            elif (_ABI_ASK.match(text) or _ONE_LINER.search(text)) and i + 1 < len(norm):
                answer = _FLAG_LAST.search(norm[i + 1])
                if answer:
                    abi = (answer.group("flag") == "True", i + 2)
    if not wheels:
        return []
    frag = Fragment("extension wheels", wheels[0]["line"], wheels[-1]["line"])
    frag.add("report.ext_wheels", [{k: v for k, v in w.items() if k != "text"} | {"as_written": w["text"]} for w in wheels])
    if stated:
        frag.add("report.torch_stated", stated, stated[0]["line"])
    if abi is not None:
        frag.add("torch.cxx11_abi", abi[0], abi[1])
    return [frag]


def _series(version: str | None) -> tuple[int, int] | None:
    parts = release(version)
    return (parts[0], parts[1] if len(parts) > 1 else 0) if parts else None


def _pytorch_wheel(version: str) -> bool:
    """Whether `version` is how PyTorch's own wheels name themselves: "2.2.0", "2.2.0+cu118",
    "2.2.0+cpu". A source or NGC build ("2.4.0a0+07cecf4168") or a nightly is not."""
    return re.fullmatch(r"\d+\.\d+(?:\.\d+)?(?:\+(?:cu\d{2,3}|cpu))?", version) is not None


def _cuda_major(tag: str | None) -> int | None:
    """"118" -> 11, "122" -> 12, "12" -> 12 (the wheel's cu tag); None for a CPU wheel."""
    if not tag:
        return None
    return int(tag[:2]) if len(tag) >= 2 else None


def _judge(wheel: dict[str, Any], torch: str, torch_cuda: str | None, abi: bool | None, said: bool,
           kb: KB) -> tuple[str, Severity, tuple[str, ...]] | None:
    """Why `wheel` cannot load beside `torch` (said: torch is only stated in words), its
    severity and the sources; None when nothing shown says so."""
    name = wheel["package"] if wheel.get("version") is None else f"{wheel['package']} {wheel['version']}"
    built = f"{name} is built for torch {wheel['torch']}"
    have, want = _series(torch), _series(wheel["torch"])
    if have and want and have != want:
        return f"{built}, but torch {torch} is installed", Severity.WARNING if said else Severity.ERROR, ()
    major = version_major(torch_cuda)
    wheel_major = _cuda_major(wheel.get("cuda"))
    if major and wheel_major and major != wheel_major:
        return (f"{built} with CUDA {wheel_major}.x, but torch {torch} is built for CUDA {torch_cuda}",
                Severity.WARNING if said else Severity.ERROR, ())
    if wheel.get("cxx11_abi") is None:
        return None
    flag = "TRUE" if wheel["cxx11_abi"] else "FALSE"
    if abi is not None:
        if abi == wheel["cxx11_abi"]:
            return None
        return (f"{built} with the C++ ABI flag cxx11abi{flag}, but this torch reports _GLIBCXX_USE_CXX11_ABI={abi}",
                Severity.ERROR, ())
    if not _pytorch_wheel(torch) or (wheel.get("platform") and "x86_64" not in str(wheel["platform"])):
        return None
    row = kb.extensions.pytorch_wheel_abi(torch, torch_cuda or _local_cuda(torch))
    if row is None or row.cxx11_abi == wheel["cxx11_abi"]:
        return None
    # A bare "2.2.0" may be conda-forge's or a source build (new ABI); "+cu118" is PyTorch's index.
    sure = "+" in torch and not said
    return (f"{built} with cxx11abi{flag}, but PyTorch's Linux x86_64 wheel of torch {torch} uses "
            f"_GLIBCXX_USE_CXX11_ABI={row.cxx11_abi}" + ("" if sure else f" (if this torch is that wheel; `{ABI_COMMAND}` says)"),
            Severity.ERROR if sure else Severity.WARNING, row.source)


def _local_cuda(version: str) -> str | None:
    match = re.search(r"\+cu(\d{2})(\d)\b", version)
    return f"{int(match.group(1))}.{match.group(2)}" if match else None


@rule("extension-built-for-other-torch", needs=("report.ext_wheels",),
      optional=("torch.version", "torch.cuda", "torch.cxx11_abi", "report.torch_stated"))
def prebuilt_wheel_for_other_torch(facts: Facts, kb: KB) -> Hit | None:
    """A prebuilt extension wheel (flash-attn's "+cu118torch2.2cxx11abiTRUE", PyG's "+pt21cu121",
    a pyg or detectron2 find-links page) built for another torch release, CUDA major or C++ ABI
    flag than the torch the report shows (see extension-built-for-other-torch)."""
    wheels = [w for w in facts.get("report.ext_wheels") or [] if isinstance(w, dict)]
    torch = facts.get("torch.version")
    said = False
    if not torch:
        stated = [s for s in facts.get("report.torch_stated") or [] if isinstance(s, dict) and s.get("version")]
        if not stated or len({_series(s["version"]) for s in stated}) != 1:
            return None  # none, or two torch releases stated: which one ran is not said
        torch, said = str(stated[0]["version"]), True
    torch_cuda = facts.get("torch.cuda") or _local_cuda(str(torch))
    for wheel in wheels:
        verdict = _judge(wheel, str(torch), torch_cuda, facts.get("torch.cxx11_abi"), said, kb)
        if verdict is None:
            continue
        why, severity, sources = verdict
        cited = " (doctor/kb/extensions.yaml)" if sources else ""
        return Hit(
            f"{why}{cited}: report line {wheel['line']} ({wheel['as_written']})",
            evidence={"report.ext_wheels": [wheel], "torch.version": torch, "torch.cuda": torch_cuda,
                      "torch.cxx11_abi": facts.get("torch.cxx11_abi"), "sources": list(sources)},
            fix=FixRef(commands=(ABI_COMMAND,),
                       note="install the wheel built for this torch's release, CUDA major and C++ ABI flag (flash-attn: "
                            "+cu12torch2.2cxx11abiFALSE for pip's torch 2.2), or build it against this torch: "
                            "pip install --no-build-isolation --no-binary :all: PACKAGE"),
            severity=severity,
        )
    return None


RULES = (prebuilt_wheel_for_other_torch,)
