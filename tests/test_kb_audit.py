"""Audit of the shipped KB against the sources quoted in the repository.

tests/data/kb-sources/ holds verbatim excerpts of the documents some KB rows were read from
(build scripts, NVIDIA's cuDNN support matrices, measurements of PyPI wheels, pip's answer),
each with a header naming the source and the date it was read. This test parses the value
out of each excerpt and compares it with the KB row that cites it, so a row edited to
disagree with its quoted source fails here (the last tests prove that on an edited copy).
The quotes inside the KB's own `sources:` maps are read the same way: a GPU row's compute
capability against the nvidia-smi/torch output its source quotes, a torch arch list against
the wheel measurements quoted for it; every arch list is audited or named in NOT_AUDITED
with the reason no source here states it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.version import Version

from fwdoctor.kb import KB, KB_DIR
from fwdoctor.kb.libs import NoData

SOURCES = Path(__file__).resolve().parent / "data" / "kb-sources"


# ----------------------------------------------------------------------------- excerpts
@dataclass(frozen=True)
class Excerpt:
    name: str
    header: dict[str, str]
    body: list[str]


def excerpt(name: str) -> Excerpt:
    """Split a file into its `# key: value` header (continuation lines start with "#   ")
    and the verbatim lines that follow it."""
    lines = (SOURCES / name).read_text().splitlines()
    header: dict[str, str] = {}
    key = None
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        line = lines[i]
        match = re.match(r"# (\w+): ?(.*)", line)
        if match:
            key = match.group(1)
            header[key] = match.group(2)
        elif line.startswith("#   ") and key:
            header[key] += " " + line[4:].strip()
        else:
            break
        i += 1
        if key == "kept" and not (i < len(lines) and lines[i].startswith("#   ")):
            break
    return Excerpt(name, header, lines[i:])


EXCERPTS = sorted(p.name for p in SOURCES.glob("*.txt"))


@pytest.mark.parametrize("name", EXCERPTS)
def test_every_excerpt_names_its_source_when_it_was_read_and_what_was_kept(name):
    found = excerpt(name)
    assert {"source", "read", "kept"} <= found.header.keys(), name
    source = found.header["source"]
    assert re.search(r"https?://\S+|[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+", source), source
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", found.header["read"].strip())
    assert found.body and any(line.strip() for line in found.body)


def test_every_excerpt_is_audited():
    assert set(EXCERPTS) == set(AUDITED), set(EXCERPTS) ^ set(AUDITED)


# ----------------------------------------------------------------------------- TORCH_CUDA_ARCH_LIST
ASSIGN = re.compile(r'TORCH_CUDA_ARCH_LIST="([^"]*)"')
EXPAND = re.compile(r"\$\{TORCH_CUDA_ARCH_LIST(?://([^/}]*)/([^}]*))?\}")


def _expand(value: str, base: str) -> str:
    return EXPAND.sub(lambda m: base.replace(m.group(1), m.group(2)) if m.group(1) is not None else base, value)


def arch_lists(body: list[str]) -> dict[str, str]:
    """{"11.8": "5.0;6.0;...;3.7;9.0"} from a build_cuda.sh excerpt: the base assignment
    before `case`, then per `X.Y)` case the x86_64 wheel's assignment (one directly under an
    `if` is the aarch64 or libtorch branch and is skipped), with ${TORCH_CUDA_ARCH_LIST} and
    ${TORCH_CUDA_ARCH_LIST//a/b} expanded."""
    base = ""
    found: dict[str, str] = {}
    label = None
    previous = ""
    for raw in body:
        line = raw.split("#", 1)[0] if not raw.lstrip().startswith("#") else ""
        # The 1.9-1.12 builder scripts match globs ("11.[356])", "10.*)"): kept as the label.
        case = re.match(r"\s*(\d+\.(?:\d+|\[\d+\]|\*)(?:\s*\|\s*\d+\.\d+)*)\)", line)
        if case:
            label = case.group(1)
        assign = ASSIGN.search(line)
        if assign:
            if label is None:
                base = _expand(assign.group(1), base)
            elif not previous.strip().startswith("if ") and label not in found:
                for one in re.split(r"\s*\|\s*", label):
                    found[one] = _expand(assign.group(1), base)
        if line.strip() == ";;":  # end of a multi-line case
            label = None
        if line.strip():
            previous = line
    return found


def _targets(text: str) -> tuple[set[Version], set[Version]]:
    """(SASS archs, PTX archs) of an arch list string or tuple."""
    items = [t for t in (text.split(";") if isinstance(text, str) else text) if t]
    sass = {Version(t.replace("+PTX", "")) for t in items}
    ptx = {Version(t.replace("+PTX", "")) for t in items if t.endswith("+PTX")}
    return sass, ptx


# (excerpt, CUDA case) -> the KB variants whose arch list it is the source of.
ARCH_ROWS = {
    ("torch-build_cuda-2.6-cycle.txt", "11.8"): ["2.6.0+cu118"],
    ("torch-build_cuda-2.6-cycle.txt", "12.4"): ["2.6.0+cu124"],
    ("torch-build_cuda-2.6-cycle.txt", "12.6"): ["2.6.0+cu126"],
    ("torch-build_cuda-2.7-cycle.txt", "11.8"): ["2.7.0+cu118", "2.7.1+cu118"],
    ("torch-build_cuda-2.7-cycle.txt", "12.6"): ["2.7.0+cu126", "2.7.1+cu126"],
    ("torch-build_cuda-2.8.txt", "12.6"): ["2.8.0+cu126"],
    ("torch-build_cuda-2.8.txt", "12.8"): ["2.8.0+cu128"],
    ("torch-build_cuda-2.8.txt", "12.9"): ["2.8.0+cu129"],
    ("torch-build_cuda-2.11-cycle.txt", "12.6"): ["2.11.0+cu126"],
    ("torch-build_cuda-2.11-cycle.txt", "12.8"): ["2.11.0+cu128"],
    ("torch-build_cuda-2.11-cycle.txt", "12.9"): ["2.11.0+cu129"],
    ("torch-release-2.12-cu129.txt", "12.9"): ["2.12.1+cu129"],
    ("torch-builder-release-1.9.txt", "10.*"): ["1.9.0+cu102", "1.9.1+cu102"],
    ("torch-builder-release-1.9.txt", "11.[123]"): ["1.9.0+cu111", "1.9.1+cu111"],
    ("torch-builder-release-1.10.txt", "10.*"): ["1.10.0+cu102", "1.10.1+cu102"],
    ("torch-builder-release-1.10.txt", "11.[123]"): ["1.10.0+cu111", "1.10.1+cu111"],
    ("torch-builder-release-1.11.txt", "10.*"): ["1.11.0+cu102"],
    ("torch-builder-release-1.11.txt", "11.[1235]"): ["1.11.0+cu113"],
    ("torch-builder-release-1.12.txt", "10.*"): ["1.12.0+cu102", "1.12.1+cu102"],
    ("torch-builder-release-1.12.txt", "11.[356]"): ["1.12.0+cu113", "1.12.1+cu113", "1.12.0+cu116", "1.12.1+cu116"],
}


def audit_arch_lists(kb: KB) -> list[str]:
    """Disagreements between KB arch lists and the quoted scripts. The SASS sets must be
    equal; the KB may leave out a quoted "+PTX" (the wheels read had none, torch.yaml says
    why) but never claim PTX the quote lacks."""
    bad = []
    for (name, cuda), versions in ARCH_ROWS.items():
        quoted = arch_lists(excerpt(name).body).get(cuda)
        if quoted is None:
            bad.append(f"{name}: no TORCH_CUDA_ARCH_LIST for CUDA {cuda}")
            continue
        q_sass, q_ptx = _targets(quoted)
        for version in versions:
            row = kb.torch.variant_for(version).arch_list
            if row is None:
                bad.append(f"{version}: arch list null, {name} says {quoted}")
                continue
            k_sass, k_ptx = _targets(row)
            if k_sass != q_sass or not k_ptx <= q_ptx:
                bad.append(f"{version}: KB {';'.join(row)} != {name} {cuda}) {quoted}")
    return bad


def test_the_parser_reads_each_case_of_a_script():
    lists = arch_lists(excerpt("torch-build_cuda-2.6-cycle.txt").body)
    assert lists == {"12.6": "5.0;6.0;7.0;7.5;8.0;8.6;9.0+PTX", "12.4": "5.0;6.0;7.0;7.5;8.0;8.6;9.0",
                     "12.1": "5.0;6.0;7.0;7.5;8.0;8.6;9.0", "11.8": "5.0;6.0;7.0;7.5;8.0;8.6;3.7;9.0"}
    # ${TORCH_CUDA_ARCH_LIST//10.0/} drops Blackwell from the 12.6 build of 2.11.
    assert _targets(arch_lists(excerpt("torch-build_cuda-2.11-cycle.txt").body)["12.6"])[0] == {
        Version(v) for v in ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")}


def test_torch_arch_lists_agree_with_the_quoted_build_scripts():
    assert audit_arch_lists(KB.load()) == []


# ----------------------------------------------------------------------------- NCCL of cu118
def newest_cu11_nccl() -> Version:
    (line,) = [l for l in excerpt("torch-nccl-cu118.txt").body if l.startswith("nvidia-nccl-cu11 (")]
    return Version(re.search(r"\(([\d.]+)\)", line).group(1))


def audit_cu118_nccl(kb: KB) -> list[str]:
    """A cu118 wheel's NCCL is an nvidia-nccl-cu11 release, so it is at most the newest one;
    2.6 and 2.7 pin exactly that one (torch.yaml, S-PT146073)."""
    newest = newest_cu11_nccl()
    bad = []
    for v in kb.torch.variants():
        if v.variant != "cu118" or v.nccl is None:
            continue
        if Version(v.nccl) > newest:
            bad.append(f"{v.torch}+cu118: NCCL {v.nccl} is newer than any nvidia-nccl-cu11 ({newest})")
    for version in ("2.6.0+cu118", "2.7.0+cu118", "2.7.1+cu118"):
        nccl = kb.torch.variant_for(version).nccl
        if nccl is None or Version(nccl) != newest:
            bad.append(f"{version}: NCCL {nccl}, expected nvidia-nccl-cu11 {newest}")
    if kb.libs.pip_package("nvidia-nccl-cu11").last != newest:
        bad.append(f"libs.yaml nvidia-nccl-cu11 last {kb.libs.pip_package('nvidia-nccl-cu11').last} != {newest}")
    return bad


def test_cu118_nccl_rows_agree_with_pypi():
    assert audit_cu118_nccl(KB.load()) == []


# ----------------------------------------------------------------------------- cuDNN matrices
def matrix(name: str) -> dict[tuple[str, int], list[Version]]:
    """{("9.17.0", 12): [12.0, 10.0, ...]} from a support-matrix excerpt: the compute
    capabilities after each "cuDNN X for CUDA N.x" row's driver cells, up to the hardware
    names (several rows of one package are merged)."""
    rows: dict[tuple[str, int], list[Version]] = {}
    key = None
    seen_driver = False
    for line in excerpt(name).body:
        head = re.match(r"cuDNN ([\d.]+) for CUDA (\d+)\.x", line.strip())
        if head:
            key, seen_driver = (head.group(1), int(head.group(2))), False
            rows.setdefault(key, [])
            continue
        text = line.strip().lstrip("•").strip()
        if key is None:
            continue
        if text.startswith("NVIDIA"):  # the hardware column: the compute capabilities are over
            key = None
            continue
        if text.startswith(">=") or text == "N/A":
            seen_driver = True
            continue
        cc = re.fullmatch(r"(\d+\.\d)\d?(?: \[?\d\]?)?", text)
        if cc and (seen_driver or name.endswith("8.9.6.txt")):
            rows[key].append(Version(cc.group(1)))
    return {k: v for k, v in rows.items() if v}


# The 8.9.6 page renders the CUDA 12.x and 11.x packages with one shared compute capability
# cell, read under the first of them; it holds for both (the KB row covers CUDA 11 and 12).
MATRICES = ("cudnn-matrix-8.9.6.txt", "cudnn-matrix-9.0.0.txt", "cudnn-matrix-9.5.1.txt",
            "cudnn-matrix-9.10.2.txt", "cudnn-matrix-9.17.0.txt")


def audit_cudnn_matrices(kb: KB) -> list[str]:
    bad = []
    for name in MATRICES:
        found = matrix(name)
        if not found:
            bad.append(f"{name}: no rows parsed")
        for (version, major), ccs in found.items():
            majors = (11, 12) if name.endswith("8.9.6.txt") else (major,)
            for cuda in majors:
                try:
                    row = kb.libs.cudnn_arch_row(version, cuda)
                except NoData as exc:
                    bad.append(f"{name}: {exc}")
                    continue
                if row.min_cc != min(ccs):
                    bad.append(f"cuDNN {version} CUDA {cuda}: KB min_cc {row.min_cc}, {name} lists down to {min(ccs)}")
                if row.max_cc is not None and row.max_cc < max(ccs):
                    bad.append(f"cuDNN {version} CUDA {cuda}: KB max_cc {row.max_cc}, {name} lists up to {max(ccs)}")
    return bad


def test_the_matrix_parser_reads_both_packages_of_9_17():
    assert [str(v) for v in matrix("cudnn-matrix-8.9.6.txt")[("8.9.6", 12)]] == ["9.0", "8.9", "8.6", "8.0", "7.5", "7.0", "6.1", "6.0", "5.0"]
    found = matrix("cudnn-matrix-9.17.0.txt")
    assert [str(v) for v in found[("9.17.0", 13)]] == ["12.0", "10.0", "9.0", "8.9", "8.6", "8.0", "7.5"]
    assert min(found[("9.17.0", 12)]) == Version("7.5")
    assert min(matrix("cudnn-matrix-9.10.2.txt")[("9.10.2", 11)]) == Version("5.0")


def test_cudnn_arch_rows_agree_with_the_quoted_support_matrices():
    assert audit_cudnn_matrices(KB.load()) == []


# ----------------------------------------------------------------------------- cuDNN wheels
CORE = ("libcudnn_ops.so.9", "libcudnn_ops_infer.so.8")


def wheels() -> dict[tuple[str, int], dict[str, list[str]]]:
    """{("9.11.0.98", 12): {"libcudnn_ops.so.9": ["ptx_120", "sass_75", ...]}}."""
    found: dict[tuple[str, int], dict[str, list[str]]] = {}
    key = None
    for line in excerpt("cudnn-wheels-sass.txt").body:
        head = re.match(r"== nvidia_cudnn_cu(\d+)-([\d.]+)-", line)
        if head:
            key = (head.group(2), int(head.group(1)))
            found[key] = {}
        elif key and line.strip():
            lib, *entries = line.split()
            found[key][lib] = [e.split(":")[0] for e in entries]
    return found


def _sm(entry: str) -> Version:
    digits = entry.split("_")[1]
    return Version(f"{digits[:-1]}.{digits[-1]}")


def audit_cudnn_wheels(kb: KB) -> list[str]:
    """The lowest SASS in the core library (libcudnn_ops) is the row's min_cc, and a wheel
    that carries PTX gets no ceiling."""
    bad = []
    for (version, major), libs in wheels().items():
        core = next(libs[name] for name in CORE if name in libs)
        lowest = min(_sm(e) for e in core if e.startswith("sass_"))
        try:
            row = kb.libs.cudnn_arch_row(version, major)
        except NoData as exc:
            bad.append(str(exc))
            continue
        if row.min_cc != lowest:
            bad.append(f"cuDNN {version} CUDA {major}: KB min_cc {row.min_cc}, the wheel's {next(n for n in CORE if n in libs)} starts at {lowest}")
        if any(e.startswith("ptx_") for e in core) and row.max_cc is not None:
            bad.append(f"cuDNN {version} CUDA {major}: KB max_cc {row.max_cc} but the wheel carries PTX")
    return bad


def test_the_cut_at_9_11_is_in_the_measurements():
    found = wheels()
    assert "sass_70" in found[("9.10.2.21", 12)]["libcudnn_ops.so.9"]
    assert not any(_sm(e) < Version("7.5") for e in found[("9.11.0.98", 12)]["libcudnn_ops.so.9"])


def test_cudnn_arch_rows_agree_with_the_measured_wheels():
    assert audit_cudnn_wheels(KB.load()) == []


AUDITED = {
    "torch-build_cuda-2.6-cycle.txt", "torch-build_cuda-2.7-cycle.txt", "torch-build_cuda-2.8.txt",
    "torch-build_cuda-2.11-cycle.txt", "torch-release-2.12-cu129.txt", "torch-nccl-cu118.txt",
    *MATRICES, "cudnn-wheels-sass.txt",
    *(f"torch-builder-release-1.{n}.txt" for n in (9, 10, 11, 12)),
}


# ----------------------------------------------------------------------------- the audit bites
def _edited_kb(tmp_path: Path, file: str, old: str, new: str) -> KB:
    folder = tmp_path / "kb"
    shutil.copytree(KB_DIR, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = folder / file
    text = path.read_text()
    assert old in text, f"{file}: {old!r} not found"
    path.write_text(text.replace(old, new, 1))
    return KB.load(folder)


def test_a_cu118_nccl_row_edited_back_to_2_26_2_fails_the_audit(tmp_path):
    kb = _edited_kb(tmp_path, "torch.yaml", 'cudnn: "9.1.0.70", nccl: "2.21.5", source: [S-RELMD, S-PTBC27',
                    'cudnn: "9.1.0.70", nccl: "2.26.2", source: [S-RELMD, S-PTBC27')
    assert any("2.7.1+cu118: NCCL 2.26.2 is newer" in b for b in audit_cu118_nccl(kb))


def test_an_arch_list_edited_away_from_its_script_fails_the_audit(tmp_path):
    kb = _edited_kb(tmp_path, "torch.yaml", 'arch_list: "3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0", cudnn: "9.1.0.70", nccl: "2.21.5", source: [S-RELMD, S-PTBC26',
                    'arch_list: "5.0;6.0;7.0;7.5;8.0;8.6;9.0", cudnn: "9.1.0.70", nccl: "2.21.5", source: [S-RELMD, S-PTBC26')
    assert [b for b in audit_arch_lists(kb) if b.startswith("2.6.0+cu118")]


def test_claiming_ptx_the_script_lacks_fails_the_audit(tmp_path):
    kb = _edited_kb(tmp_path, "torch.yaml", 'arch_list: "7.0;7.5;8.0;8.6;9.0;10.0;12.0", cudnn: "9.10.2.21", nccl: "2.27.3"',
                    'arch_list: "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX", cudnn: "9.10.2.21", nccl: "2.27.3"')
    assert any(b.startswith("2.8.0+cu128") for b in audit_arch_lists(kb))


def test_a_cudnn_floor_edited_to_keep_volta_fails_the_audit(tmp_path):
    kb = _edited_kb(tmp_path, "libs.yaml", 'cuda_majors: [12]\n    min_cc: "7.5"', 'cuda_majors: [12]\n    min_cc: "7.0"')
    matrix_bad, wheel_bad = audit_cudnn_matrices(kb), audit_cudnn_wheels(kb)
    assert any("cuDNN 9.17.0 CUDA 12: KB min_cc 7.0" in b for b in matrix_bad)
    assert any("cuDNN 9.11.0.98 CUDA 12: KB min_cc 7.0" in b for b in wheel_bad)


# ----------------------------------------------------------------------------- quoted compute capabilities
# A GPU row's compute capability against the output its source quotes (gpus.yaml `sources:`):
# nvidia-smi's name/compute_cap CSV, torch's "X with CUDA capability sm_NN" warning,
# get_device_properties' major/minor, get_device_capability's tuple, collect_env's "GPU 0: X"
# with "Compute Capability". Each (name, cc) the quote gives is matched to a row the way a
# reported name is (KB.gpus.model_for_name), so a row whose cc disagrees with its quote fails.
_SM = re.compile(r"(?:NVIDIA )?([A-Za-z][\w -]*?) with CUDA capability sm_(\d+)(\d)\b")
_PROPS = re.compile(r"name='(?:NVIDIA )?([^']+)', major=(\d+), minor=(\d+)")
_CSV = re.compile(r'"([^"]*NVIDIA [^"]*)"')
_LIST = re.compile(r"compute_cap on [^:]*?\) (.*)")
_LIST_ITEM = re.compile(r"^([A-Z][\w -]*?) (\d{1,2}\.\d)\b")
_CAPABILITY = re.compile(r'Jetson (?:AGX )?(\w+) "torch\.cuda\.get_device_capability\(\) returns \((\d+), (\d+)\)"')
_COLLECT_ENV = re.compile(r'"GPU 0: (?:NVIDIA )?(\w+)", "GPU 0 Compute Capability: (\d+\.\d+)"')
_SM_FROM = re.compile(r'"GPU 0: NVIDIA (\w+)"; sm_(\d+)(\d) from CUDA')


def quoted_ccs(text: str) -> list[tuple[str, str]]:
    """(product name, compute capability) pairs a source's quoted output states."""
    found = [(m.group(1), f"{m.group(2)}.{m.group(3)}") for m in _SM.finditer(text)]
    found += [(m.group(1), f"{m.group(2)}.{m.group(3)}") for m in _PROPS.finditer(text)]
    for m in _CSV.finditer(text):  # nvidia-smi --query-gpu=...,name,compute_cap: "a, NVIDIA X, 8.9"
        fields = [f.strip() for f in m.group(1).split(",")]
        names = [f for f in fields if f.startswith("NVIDIA ")]
        ccs = [f for f in fields if re.fullmatch(r"\d{1,2}\.\d", f)]
        if len(names) == 1 and len(ccs) == 1:
            found.append((names[0], ccs[0]))
    for m in _LIST.finditer(text):  # "... compute_cap on rented (Modal) B300 SXM6 AC 10.3, B200 10.0, ..."
        for item in m.group(1).split(", "):
            if one := _LIST_ITEM.match(item):
                found.append((one.group(1), one.group(2)))
    found += [(m.group(1), f"{m.group(2)}.{m.group(3)}") for m in _CAPABILITY.finditer(text)]
    found += [(m.group(1), m.group(2)) for m in _COLLECT_ENV.finditer(text)]
    found += [(m.group(1), f"{m.group(2)}.{m.group(3)}") for m in _SM_FROM.finditer(text)]
    return found


def _gpu_sources() -> dict[str, str]:
    import yaml

    return yaml.safe_load((KB_DIR / "gpus.yaml").read_text())["sources"]


def audit_quoted_ccs(kb: KB, sources: dict[str, str]) -> list[str]:
    bad = []
    for key, text in sorted(sources.items()):
        if not key.startswith("S-FX-"):
            continue
        pairs = quoted_ccs(text)
        if not pairs:
            bad.append(f"{key}: no (product, compute capability) could be read from its quote")
        for name, cc in pairs:
            model = kb.gpus.model_for_name(name)
            if model is not None:
                if model.cc != cc:
                    bad.append(f"{model.name}: cc {model.cc}, but {key} quotes {name} at {cc}")
                continue
            family = [f for f in kb.gpus.families if key in f.source]
            if not family or cc not in family[0].ccs:
                bad.append(f"{key}: quotes {name} at {cc}, which no GPU row or family citing it holds")
    for model in kb.gpus.models:
        for key in model.source:
            if key.startswith("S-FX-") and not any(kb.gpus.model_for_name(n) == model for n, _ in quoted_ccs(sources.get(key, ""))):
                bad.append(f"{model.name}: cites {key}, whose quote does not name it")
    return bad


def test_the_quote_parser_reads_each_form_of_quoted_output():
    sources = _gpu_sources()
    assert quoted_ccs(sources["S-FX-H20"]) == [("H20", "9.0")]
    assert quoted_ccs(sources["S-FX-L20"]) == [("L20", "8.9")]
    assert quoted_ccs(sources["S-FX-B300"]) == [("NVIDIA B300 SXM6 AC", "10.3")]
    assert ("A100-SXM4-80GB", "8.0") in quoted_ccs(sources["S-FX-MODAL"]) and len(quoted_ccs(sources["S-FX-MODAL"])) == 6
    assert quoted_ccs(sources["S-FX-XAVIER"]) == [("Xavier", "7.2")]
    assert quoted_ccs(sources["S-FX-ORIN"]) == [("Orin", "8.7")]
    assert quoted_ccs(sources["S-FX-THOR"]) == [("Thor", "11.0")]


def test_gpu_compute_capabilities_agree_with_their_quoted_output():
    assert audit_quoted_ccs(KB.load(), _gpu_sources()) == []


def test_a_compute_capability_edited_away_from_its_quote_fails_the_audit(tmp_path):
    kb = _edited_kb(tmp_path, "gpus.yaml", '{name: H20, cc: "9.0"', '{name: H20, cc: "8.9"')
    assert any(b.startswith("H20: cc 8.9, but S-FX-H20 quotes H20 at 9.0") for b in audit_quoted_ccs(kb, _gpu_sources()))


# ----------------------------------------------------------------------------- every arch list
# Arch lists quoted as measured from the wheels themselves (torch.yaml `sources:`): the
# -gencode list in libtorch_cuda.so per wheel, and torch.cuda.get_arch_list() outputs.
_WHEEL_GENCODE = re.compile(r"(\d+\.\d+\.\d+\+cu\d+)(?: git [0-9a-f]+)?: sm_(\d+(?: \d+)*)(, no PTX)?")
_GET_ARCH_LIST = re.compile(r"torch (\d+\.\d+\.\d+)((?:,? CUDA \d+\.\d \[[^\]]*\])+)")
_GET_ARCH_LIST_CUDA = re.compile(r"CUDA (\d+)\.(\d) \[([^\]]*)\]")
_WHEEL_FILE = re.compile(r"says (\S+\+cu\d+) / cuda [\d.]+; torch\.cuda\.get_arch_list\(\) = ((?:sm_\d+ ?)+)\(no compute_\*\)")


def _cc(sm: str) -> Version:
    return Version(f"{sm[:-1]}.{sm[-1]}")


def quoted_wheel_arch_lists(sources: dict[str, str]) -> list[tuple[str, str, set[Version], set[Version] | None]]:
    """(torch version+variant, source key, SASS archs, PTX archs or None when the quote does not say)."""
    found = []
    for key, text in sorted(sources.items()):
        for m in _WHEEL_GENCODE.finditer(text):
            found.append((m.group(1), key, {_cc(n) for n in m.group(2).split()}, set() if m.group(3) else None))
        for m in _GET_ARCH_LIST.finditer(text):  # "torch 2.7.1 CUDA 12.6 ['sm_50', ...], CUDA 12.8 [...]"
            for case in _GET_ARCH_LIST_CUDA.finditer(m.group(2)):
                items = re.findall(r"'(sm|compute)_(\d+)'", case.group(3))
                found.append((f"{m.group(1)}+cu{case.group(1)}{case.group(2)}", key, {_cc(n) for kind, n in items if kind == "sm"},
                              {_cc(n) for kind, n in items if kind == "compute"}))
        for m in _WHEEL_FILE.finditer(text):
            found.append((m.group(1), key, {_cc(n) for n in re.findall(r"sm_(\d+)", m.group(2))}, set()))
    return found


def _torch_sources() -> dict[str, str]:
    import yaml

    return yaml.safe_load((KB_DIR / "torch.yaml").read_text())["sources"]


def audit_wheel_arch_lists(kb: KB, sources: dict[str, str]) -> list[str]:
    bad = []
    for version, key, q_sass, q_ptx in quoted_wheel_arch_lists(sources):
        row = kb.torch.variant_for(version)
        if row is None or row.arch_list is None:
            bad.append(f"{version}: {key} quotes its arch list, the KB has {'no row' if row is None else 'none'}")
            continue
        if key not in row.source:
            bad.append(f"{version}: {key} quotes its arch list, but the row does not cite it")
        k_sass, k_ptx = _targets(row.arch_list)
        if k_sass != q_sass or (q_ptx is not None and k_ptx != q_ptx):
            bad.append(f"{version}: KB {';'.join(row.arch_list)} != {key}: SASS {sorted(map(str, q_sass))} PTX {q_ptx}")
    return bad


def test_the_wheel_quote_parser_reads_each_form():
    sources = _torch_sources()
    quoted = {(v, k): (s, p) for v, k, s, p in quoted_wheel_arch_lists(sources)}
    assert quoted[("2.14.1+cu130", "S-WHEEL2141")] == ({Version(x) for x in ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")}, set())
    assert quoted[("2.7.1+cu128", "S-CORRIDORKEY141")][1] == {Version("12.0")}
    assert quoted[("2.8.0+cu128", "S-PYPIWHEELS")] == ({Version(x) for x in ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0")}, set())


def test_torch_arch_lists_agree_with_the_quoted_wheel_measurements():
    assert audit_wheel_arch_lists(KB.load(), _torch_sources()) == []


def test_an_arch_list_edited_away_from_its_wheel_fails_the_audit(tmp_path):
    kb = _edited_kb(tmp_path, "torch.yaml", 'arch_list: "7.5;8.0;8.6;9.0;10.0;12.0", cudnn: "9.24.0.43"',
                    'arch_list: "8.0;8.6;9.0;10.0;12.0", cudnn: "9.24.0.43"')
    assert any(b.startswith("2.14.1+cu130: KB") for b in audit_wheel_arch_lists(kb, _torch_sources()))


# Arch lists no source readable here states, each with the reason. The coverage test fails
# on a list that is neither audited nor named here, and on a name here that is audited.
_OLD = "read from RELEASE.md's matrix and pytorch/builder's scripts (S-RELMD, S-BUILDER), cited but not excerpted in tests/data/kb-sources"
_PR = "read from pytorch/pytorch#164471's tables (S-PT164471), cited but not excerpted; no wheel of this variant was measured"
_LATE = "a non-default variant (download.pytorch.org only): its list is from the release matrix (S-RELMD/S-PYPIMETA), not excerpted; only the PyPI default wheels were measured"
# Before release/1.9 the builder script was an if/elif chain on $CUDA_VERSION that the parser above does not read.
_PRE19 = "read from pytorch/builder's main-branch manywheel/build.sh of the release's era (torch.yaml S-BLD2018/S-BLD2020/S-BLD2021, commits cited), not excerpted"
NOT_AUDITED = {
    **dict.fromkeys(["1.0.0+cu90", "1.0.1+cu90", "1.1.0+cu90", "1.1.0+cu100", "1.2.0+cu92", "1.2.0+cu100", "1.4.0+cu92",
                     "1.4.0+cu101", "1.5.0+cu92", "1.5.0+cu101", "1.5.0+cu102", "1.5.1+cu92", "1.5.1+cu101", "1.5.1+cu102",
                     "1.8.1+cu101"], _PRE19),
    **dict.fromkeys(["1.13.0+cu116", "1.13.0+cu117", "1.13.1+cu116", "1.13.1+cu117", "2.0.0+cu117", "2.0.0+cu118",
                     "2.0.1+cu117", "2.0.1+cu118", "2.1.0+cu118", "2.1.0+cu121", "2.1.1+cu118", "2.1.1+cu121",
                     "2.1.2+cu118", "2.1.2+cu121", "2.2.0+cu118", "2.2.0+cu121", "2.2.1+cu118", "2.2.1+cu121",
                     "2.2.2+cu118", "2.2.2+cu121", "2.3.0+cu118", "2.3.0+cu121", "2.3.1+cu118", "2.3.1+cu121",
                     "2.4.0+cu118", "2.4.0+cu121", "2.4.0+cu124", "2.4.1+cu118", "2.4.1+cu121", "2.4.1+cu124",
                     "2.5.0+cu118", "2.5.0+cu121", "2.5.0+cu124", "2.5.1+cu118", "2.5.1+cu121", "2.5.1+cu124"], _OLD),
    "2.7.0+cu128": "the 2.7 excerpt is a fork's pre-release script whose 12.8 case the release changed (pytorch/pytorch#147607); the measured wheel (S-CORRIDORKEY141) is 2.7.1+cu128",
    "2.9.0+cu128": "S-PYPIWHEELS measured 2.9.1+cu128, not 2.9.0; " + _PR,
    **dict.fromkeys(["2.9.0+cu126", "2.9.0+cu130", "2.9.1+cu126", "2.9.1+cu130", "2.10.0+cu126", "2.10.0+cu130"], _PR),
    "2.13.0+cu129": "S-PT188443's excerpt gives release/2.12's 12.9 case (audited for 2.12.1+cu129) and 2.13's table as a Python set the script parser does not read",
    **dict.fromkeys(["2.12.0+cu126", "2.12.0+cu132", "2.12.1+cu126", "2.12.1+cu132", "2.13.0+cu126", "2.13.0+cu132",
                     "2.14.0+cu126", "2.14.0+cu132", "2.14.1+cu126", "2.14.1+cu132"], _LATE),
}


def test_every_arch_list_is_audited_or_named_with_the_reason_it_cannot_be():
    kb = KB.load()
    audited = {v for versions in ARCH_ROWS.values() for v in versions} | {v for v, *_ in quoted_wheel_arch_lists(_torch_sources())}
    lists = {f"{v.torch}+{v.variant}" for v in kb.torch.variants() if v.arch_list}
    assert sorted(lists - audited - set(NOT_AUDITED)) == [], "arch lists neither audited nor named in NOT_AUDITED"
    assert sorted(set(NOT_AUDITED) & audited) == [], "named as not auditable, but audited"
    assert sorted(set(NOT_AUDITED) - lists) == [], "named, but no such arch list in the KB"
    print(f"\narch lists: {len(lists & audited)} of {len(lists)} audited against a quoted source; {len(NOT_AUDITED)} named")
