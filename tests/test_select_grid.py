"""The selection grid: drivers x GPUs x Pythons, each answer derived here from published
sources, not from the KB under test; and `fwdoctor select grid`, which prints the table.

Reads the SHIPPED KB (doctor/kb), unlike the logic tests (tests/kb): the question is
whether the knowledge we ship answers every host right, so it must be the shipped rows.

Where each expectation comes from:
- Driver branches per GPU family (NVIDIA): Kepler runs only up to the R470 legacy branch
  ("Current graphics driver releases", https://forums.developer.nvidia.com/t/current-graphics-driver-releases/28500/12:
  "470.239.06 (x86_64) - GKxxx "Kepler" GPUs"; the driver itself: "NVRM: The NVIDIA Tesla K80
  GPU installed in this system is supported through the NVIDIA 470.xx Legacy drivers",
  https://github.com/charmed-kubernetes/kubernetes-docs/pull/647); "The release 580 series will
  be the last to support GPUs based on the Maxwell, Pascal, and Volta architectures" (NVIDIA's
  Unix graphics feature deprecation schedule, quoted in
  https://www.neowin.net/amp/nvidia-is-soon-ending-driver-support-for-some-of-its-most-legendary-graphics-cards/);
  Hopper first appears in the R520 open-module table and Ada in CUDA 11.8 (driver 520.61.05);
  Blackwell from 570.86.15/570.86.16
  (NVIDIA/open-gpu-kernel-modules@54d69484da940413ba6017df9cf43bed8b75da46:README.md,
  NVIDIA/open-gpu-kernel-modules@81fe4fb417c8ac3b9bdcc1d56827d116743892a5:README.md).
- CUDA per driver (minor-version compatibility, https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html):
  CUDA 11.x needs >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580.65.06. So R470 runs at most
  CUDA 11.8 wheels, R525-R570 CUDA 12.x, R580+ CUDA 13.x.
- Wheels: cu118 was last built for torch 2.7 (pytorch/pytorch RELEASE.md "Release
  Compatibility Matrix": 2.7 CUDA 11.8/12.6/12.8, 2.8 CUDA 12.6/12.8/12.9), and its arch list
  kept 3.7 to the end: 11.8 appends ";3.7;9.0" to "5.0;6.0;7.0;7.5;8.0;8.6"
  (qognitive/pytorch@a695639ff67bc2ca7d073ed4196dbdfa583d261b:.ci/manywheel/build_cuda.sh, the
  2.7-cycle script). Python 3.8's last torch is 2.4 (RELEASE.md: 2.4 ">=3.8, <=3.12", 2.5
  ">=3.9"); 2.4.1 cu118 has 3.7 (pytorch/builder release/2.4 manywheel/build_cuda.sh). No
  cu118 release has Python 3.14 wheels (RELEASE.md: 2.7 "<=3.13").
- Maxwell/Pascal kernels left the CUDA 12.8+ builds ("Support for Maxwell and Pascal
  architectures is removed for CUDA 12.8+ builds ... Please install CUDA 12.6 builds",
  https://github.com/pytorch/pytorch/pull/158700); from 2.10/2.11 "Only 12.6 includes legacy
  Maxwell/Pascal/Volta" (the 12.6 arm of build_cuda.sh, quoted in
  https://github.com/jhj0517/Whisper-WebUI/issues/653); CUDA 13 dropped them altogether
  (https://github.com/Differentiable-Electron-Crystallography/diffBloch/issues/144). So a
  Pascal or Volta host on R525-R580 gets a cu126 wheel of 2.8 or later.
- sm_100 and sm_120 kernels first shipped in the cu128 wheels of 2.7
  (https://github.com/pytorch/pytorch/issues/147607 and RELEASE.md).
- uv: `uv pip install --torch-backend=auto` picks the backend from the driver version alone
  and ignores the GPU's architecture (https://github.com/astral-sh/uv/issues/14742): on a
  driver that runs CUDA 12.8+ it installs a CUDA >= 12.8 build, which has no Pascal kernels.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from fwdoctor.kb import KB, KB_DIR
from fwdoctor import selection as sel

DRIVERS = {470: "470.239.06", 525: "525.147.05", 535: "535.230.02", 550: "550.163.01", 570: "570.211.01", 580: "580.126.18", 590: "590.48.01"}
GPUS = {  # name -> (CC, first branch, last branch) from the NVIDIA sources above
    "Tesla K80": ("3.7", None, 470),
    "GeForce GTX 1080 Ti": ("6.1", None, 580),
    "Tesla V100": ("7.0", None, 580),
    "Tesla T4": ("7.5", None, None),
    "A100": ("8.0", None, None),
    "GeForce RTX 3090": ("8.6", None, None),
    "GeForce RTX 4090": ("8.9", 520, None),
    "H100": ("9.0", 520, None),
    "B200": ("10.0", 570, None),
    "GeForce RTX 5090": ("12.0", 570, None),
}
PYTHONS = ("3.10", "3.12")


@pytest.fixture(scope="module")
def kb():
    return KB.load(KB_DIR)


def _cu118_arch_missing() -> bool:
    kb = KB.load(KB_DIR, areas=("torch",))
    rows = [v for v in kb.torch.variants() if v.torch == "2.7.1" and v.cuda == "11.8"]
    return not rows or rows[0].arch_list is None


CU118_XFAIL = pytest.mark.xfail(
    _cu118_arch_missing(), strict=True,
    reason="doctor/kb/torch.yaml: torch 2.7.1 cu118 arch_list not recorded (issue 16 item 3, part B)",
)


def expected(gpu: str, branch: int, python: str) -> tuple[str, object]:
    """("refused", branch that runs it) or ("wheel", predicate text) from the sources."""
    _, first, last = GPUS[gpu]
    if last is not None and branch > last:
        return "refused", last
    if first is not None and branch < first:
        return "refused", first
    return "wheel", None


CASES = [(gpu, branch, py) for gpu in GPUS for branch in DRIVERS for py in PYTHONS]


def _select(kb, gpu: str, branch: int, python: str) -> sel.Selection:
    return sel.select_torch(kb, sel.Target(python, DRIVERS[branch], (sel.Gpu(gpu, GPUS[gpu][0]),)))


def _param(gpu, branch, py):
    marks = [CU118_XFAIL] if branch == 470 and expected(gpu, branch, py)[0] == "wheel" else []
    return pytest.param(gpu, branch, py, marks=marks, id=f"{gpu}-R{branch}-py{py}")


@pytest.mark.parametrize(("gpu", "branch", "python"), [_param(*c) for c in CASES])
def test_grid(kb, gpu, branch, python):
    cc = GPUS[gpu][0]
    result = _select(kb, gpu, branch, python)
    kind, value = expected(gpu, branch, python)
    if kind == "refused":
        assert not result.ok, result.choice.local_version
        assert f"R{value}" in result.driver_problems[0]
        return
    assert result.ok, result.reason
    choice = result.choice
    cuda = Version(choice.cuda)
    if branch == 470:
        # R470 runs CUDA 11.x only; cu118's last release is 2.7.1 and it has 3.7 ... 8.6.
        assert choice.local_version == "2.7.1+cu118"
    elif cc in ("6.1", "7.0"):
        assert choice.cuda == "12.6" and Version(choice.torch) >= Version("2.8")
    elif branch < 580:
        assert cuda.major == 12, choice.local_version
        if cc in ("10.0", "12.0"):
            assert cuda >= Version("12.8") and Version(choice.torch) >= Version("2.7")
    else:
        assert cuda.major >= 13, choice.local_version


@pytest.mark.parametrize(("python", "answer"), [
    pytest.param("3.8", "2.4.1+cu118", id="py3.8"),
    pytest.param("3.9", "2.7.1+cu118", marks=CU118_XFAIL, id="py3.9"),
    pytest.param("3.13", "2.7.1+cu118", marks=CU118_XFAIL, id="py3.13"),
    pytest.param("3.14", None, id="py3.14"),
])
def test_a_k80_on_r470_across_pythons(kb, python, answer):
    result = _select(kb, "Tesla K80", 470, python)
    assert (result.choice.local_version if result.ok else None) == answer


@CU118_XFAIL
def test_a_1080_ti_on_r470_gets_the_last_cu118_torch(kb):
    # The case: without the 2.6/2.7 cu118 arch lists it was sent to 2.5.1.
    assert _select(kb, "GeForce GTX 1080 Ti", 470, "3.11").choice.local_version == "2.7.1+cu118"


@CU118_XFAIL
def test_the_refusal_names_what_r470_would_get(kb):
    result = _select(kb, "Tesla K80", 535, "3.11")
    assert result.driver_hints == ("on R470 (e.g. 470.239.06) the newest torch is 2.7.1+cu118",)


# ----------------------------------------------------------------------------- uv comparison
def uv_auto_cuda(driver: str) -> Version:
    """The lowest CUDA `uv --torch-backend=auto` would install on this driver: it picks the
    newest backend the driver runs (minor-version compatibility floors), whatever the GPU."""
    if Version(driver) >= Version("580.65.06"):
        return Version("13.0")
    if Version(driver) >= Version("525.60.13"):
        return Version("12.8")  # cu128/cu129 exist for every release since 2.7
    return Version("11.8")


@pytest.mark.parametrize("branch", [525, 535, 550, 570, 580])
@pytest.mark.parametrize("gpu", ["GeForce GTX 1080 Ti", "Tesla V100"])
def test_where_uv_is_wrong_we_pick_cu126(kb, gpu, branch):
    ours = _select(kb, gpu, branch, "3.12").choice
    assert ours is not None and ours.cuda == "12.6"
    uv = uv_auto_cuda(DRIVERS[branch])
    # uv's build lacks these kernels: CUDA >= 12.8 builds dropped Pascal (PR #158700), and
    # CUDA 13 builds dropped Volta too; for Volta on CUDA 12.8/12.9 the newest release's
    # builds carry it "only [in] 12.6" (2.11's build_cuda.sh).
    assert uv >= Version("12.8") and Version(ours.cuda) < uv


def test_where_both_are_blind_is_now_refused(kb):
    # The shared blind spot: uv installs a cu12x wheel for a K80 on R535 or an RTX
    # 5090 on R550 (it looks at the driver only); we now refuse both.
    assert uv_auto_cuda(DRIVERS[535]) == Version("12.8")
    assert not _select(kb, "Tesla K80", 535, "3.12").ok
    assert not _select(kb, "GeForce RTX 5090", 550, "3.12").ok


# ----------------------------------------------------------------------------- the command
def test_select_grid_prints_every_decision(cli):
    result = cli("select", "grid", "--kb", str(KB_DIR), "--driver", "535.230.02", "--driver", "570.211.01",
                 "--gpu", "Tesla K80", "--gpu", "GeForce RTX 5090", "--gpu", "6.1", "--python", "3.12")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "# torch for Python 3.12: drivers down, GPUs across"
    assert lines[1].split("  ")[0] == "driver" and "Tesla K80 (sm_37)" in lines[1] and "6.1 (sm_61)" in lines[1]
    r535, r570 = lines[2].split(), lines[3].split()
    assert r535[:5] == ["535.230.02", "no:", "R470", "max", "no:"] and r535[5:7] == ["R570+", r535[6]]
    assert r535[6].endswith("+cu126") and r570[1:4] == ["no:", "R470", "max"]
    assert "+cu12" in r570[4] and r570[5].endswith("+cu126")
    # Every cell is what `select torch` says for that host.
    one = sel.select_torch(KB.load(KB_DIR), sel.Target("3.12", "570.211.01", (sel.Gpu("GeForce RTX 5090", "12.0"),)))
    assert r570[4] == one.choice.local_version


def test_select_grid_markdown(cli):
    result = cli("select", "grid", "--kb", str(KB_DIR), "--driver", "590.48.01", "--gpu", "Tesla V100", "--gpu", "H100", "--format", "markdown")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[2:4] == ["| driver | Tesla V100 (sm_70) | H100 (sm_90) |", "|---|---|---|"]
    cells = [c.strip() for c in lines[4].strip("|").split("|")]
    assert cells[:2] == ["590.48.01", "no: R580 max"] and "+cu1" in cells[2]


def test_select_grid_rejects_bad_input(cli):
    assert cli("select", "grid", "--driver", "R535").exit_code == 2
    bad_gpu = cli("select", "grid", "--gpu", "Voodoo 5")
    assert bad_gpu.exit_code == 2 and "not a GPU name the KB knows" in bad_gpu.output


def test_the_default_grid_covers_every_family(kb):
    rows = sel.decision_grid(kb, sel.GRID_DRIVERS, sel.GRID_GPUS, "3.12")
    assert len(rows) == len(sel.GRID_DRIVERS) and all(len(r) == len(sel.GRID_GPUS) for r in rows)
    families = {kb.gpus.family_for_cc(c.gpu.cc).family for c in rows[0]}
    assert {"Kepler", "Pascal", "Volta", "Turing", "Hopper", "Ada Lovelace", "Blackwell GeForce/RTX PRO"} <= families
