"""cpu-lacks-avx, glibc-too-old and python-arch-mismatch (fwdoctor.rules.platform): the probe's
parsers on recorded text, the rules on a fixture root through the CLI (with its near miss),
and their report-side twins on the texts that state the cause and on those beside it that
do not. The errors.yaml rows' own examples run in tests/test_triage_corpus.py."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOTS
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.platform import glibc_of_tags, parse_cpuinfo
from fwdoctor.rules.platform import cpu_lacks_avx, glibc_too_old
from fwdoctor.triage import triage
from fwdoctor.triage.judge import run

pytestmark = pytest.mark.usefixtures("use_test_kb")
ROOT = ROOTS / "platform-no-avx-old-glibc"
X5690 = (ROOT / "proc" / "cpuinfo").read_text()


def ids(text: str, kb) -> set[str]:
    return {f.id for f in run(text, kb).report.findings}


def test_triage_reads_the_same_simd_flags_as_the_probe():
    from fwdoctor.probes import platform
    from fwdoctor.triage import cpu

    assert cpu.SIMD_FLAGS == platform.SIMD_FLAGS


def test_cpuinfo_gives_the_model_and_only_the_simd_flags_of_the_first_processor():
    assert parse_cpuinfo(X5690) == {"model": "Intel(R) Xeon(R) CPU X5690 @ 3.47GHz", "flags": []}
    assert parse_cpuinfo("model name\t: EPYC\nflags\t\t: fpu sse2 avx fma avx2 avx512f\n")["flags"] == ["avx", "avx2", "fma", "avx512f"]
    # an arm64 cpuinfo has "Features", no flags line: not an x86 CPU
    assert parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n") is None


@pytest.mark.parametrize("wheel, expected", [
    ("Tag: cp311-cp311-manylinux_2_27_x86_64\n", ("manylinux_2_27_x86_64", "2.27")),
    # several tags: the oldest glibc any of them accepts
    ("Tag: cp310-cp310-manylinux_2_28_x86_64\nTag: cp310-cp310-manylinux2014_x86_64\n", ("manylinux2014_x86_64", "2.17")),
    ("Tag: cp39-cp39-manylinux_2_17_x86_64.manylinux2014_x86_64\n", ("manylinux_2_17_x86_64", "2.17")),
    ("Tag: cp36-cp36m-manylinux1_x86_64\n", ("manylinux1_x86_64", "2.5")),
    ("Tag: py3-none-any\n", None),
    ("Tag: cp312-cp312-macosx_11_0_arm64\n", None),
    ("Tag: cp312-cp312-musllinux_1_2_x86_64\n", None),
])
def test_a_wheels_glibc_floor_is_the_oldest_its_manylinux_tags_accept(wheel, expected):
    assert glibc_of_tags("Wheel-Version: 1.0\n" + wheel) == expected


def check(cli, root) -> tuple[int, dict]:
    result = cli("check", "--root", str(root), "--env-file", str(root / "fixture.env"), "--json")
    return result.exit_code, json.loads(result.output)


def test_a_root_without_avx_and_with_an_old_glibc_fires_both_with_the_cpu_and_the_wheel_named(cli):
    code, report = check(cli, ROOT)
    found = {f["id"]: f["message"] for f in report["findings"]}
    assert code == 1
    assert "X5690" in found["cpu-lacks-avx"] and "jaxlib 0.6.0" in found["cpu-lacks-avx"]
    assert "2.17" in found["glibc-too-old"] and "manylinux_2_27_x86_64" in found["glibc-too-old"]


def test_the_same_root_with_avx_and_glibc_235_is_quiet(cli, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ROOT, root, symlinks=True)
    cpuinfo = root / "proc" / "cpuinfo"
    cpuinfo.write_text(X5690.replace(" sse4_2 ", " sse4_2 avx avx2 fma "))
    (root / "lib64" / "libc.so.6").unlink()
    (root / "lib64" / "libc-2.35.so").write_bytes(b"")
    (root / "lib64" / "libc.so.6").symlink_to("libc-2.35.so")
    code, report = check(cli, root)
    assert not {"cpu-lacks-avx", "glibc-too-old"} & {f["id"] for f in report["findings"]}
    assert not {"cpu-lacks-avx", "glibc-too-old"} & {n["rule"] for n in report["not_checked"]}


def test_a_cpu_without_avx_is_no_finding_where_no_installed_framework_needs_it(test_kb):
    facts = Facts([Fact("platform.cpu", {"model": "Atom", "flags": []}, source="t"),
                   Fact("frameworks.installed", [{"framework": "tensorflow", "version": "1.5.0"}], source="t")])
    assert cpu_lacks_avx.evaluate(facts, test_kb)[0] == []
    facts = Facts([Fact("platform.cpu", {"model": "Atom", "flags": []}, source="t"),
                   Fact("frameworks.installed", [{"framework": "tensorflow", "version": "2.15.0"}], source="t")])
    assert [f.id for f in cpu_lacks_avx.evaluate(facts, test_kb)[0]] == ["cpu-lacks-avx"]


def test_an_unknown_or_musl_glibc_is_never_a_glibc_finding(test_kb):
    wheels = Fact("platform.wheel_glibc", [{"dist": "torch", "version": "2.8.0", "tag": "manylinux_2_28_x86_64", "glibc": "2.28"}], source="t")
    found, skipped = glibc_too_old.evaluate(Facts([Fact.unknown("system.glibc", "no libc"), wheels]), test_kb)
    assert found == [] and skipped is not None
    assert glibc_too_old.evaluate(Facts([Fact("system.glibc", None, source="musl"), wheels]), test_kb) == ([], None)


JAXLIB_LINUX = ("RuntimeError: This version of jaxlib was built using AVX instructions, which your CPU and/or operating system "
                "do not support. You may be able work around this issue by building jaxlib from source.\n")
JAXLIB_MACOS = ("This version of jaxlib was built using AVX instructions, which your CPU and/or operating system do not support. "
                "This error is frequently encountered on macOS when running an x86 Python installation on ARM hardware. "
                "In this case, try installing an ARM build of Python.\n")


@pytest.mark.parametrize("text, expected", [
    (JAXLIB_LINUX, "cpu-lacks-avx"),
    (">>> import tensorflow as tf\nIllegal instruction (core dumped)\n", "cpu-lacks-avx"),
    ("python\n>>> import paddle\nIllegal instruction (core dumped)\n", "cpu-lacks-avx"),
    ("ImportError: /lib64/libm.so.6: version `GLIBC_2.23' not found (required by lib/python3.7/site-packages/jaxlib/xla_extension.so)\n",
     "glibc-too-old"),
    ("I am using macOS 14.4 with an apple m3 pro chip.\n" + JAXLIB_MACOS, "python-arch-mismatch"),
])
def test_each_platform_text_raises_its_finding(text, expected, test_kb):
    assert expected in ids(text, test_kb)


@pytest.mark.parametrize("text, absent", [
    # jaxlib's macOS build: the CPU is an M-series under Rosetta, not a CPU without AVX
    ("I am using macOS 14.4 with an apple m3 pro chip.\n" + JAXLIB_MACOS, "cpu-lacks-avx"),
    # a SIGILL after torch, or after no framework at all, is not said to be AVX
    (">>> import torch\nIllegal instruction (core dumped)\n", "cpu-lacks-avx"),
    ("$ ./train\nIllegal instruction (core dumped)\n", "cpu-lacks-avx"),
    # the report's own lscpu shows AVX: the SIGILL has another cause
    ("Architecture:            x86_64\nModel name:              AMD EPYC 7763\nFlags:                   fpu sse sse2 avx avx2 fma\n"
     ">>> import tensorflow\nIllegal instruction (core dumped)\n", "cpu-lacks-avx"),
    # libstdc++'s versions are GLIBCXX_, another finding's
    ("ImportError: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by x.so)\n", "glibc-too-old"),
])
def test_a_text_beside_the_cause_raises_no_platform_finding(text, absent, test_kb):
    assert absent not in ids(text, test_kb)


def test_lscpu_flags_without_avx_judge_the_regular_rule_where_the_report_shows_the_framework(test_kb):
    text = ("Architecture:            x86_64\nVendor ID:               GenuineIntel\nModel name:              Intel(R) Celeron(R) N4020\n"
            "Flags:                   fpu vme sse sse2 ssse3 sse4_1 sse4_2\n")
    facts, _ = triage(text)
    assert facts["platform.cpu"] == {"model": "Intel(R) Celeron(R) N4020", "flags": []}
    # an lscpu without its Flags line gives the model only: the regular rule cannot judge
    facts, _ = triage("lscpu: Architecture:             x86_64\n  CPU op-mode(s):         32-bit, 64-bit\n"
                      "  Model name:             Intel(R) Xeon(R) CPU           X5690  @ 3.47GHz\n")
    assert facts["platform.cpu"] == {"model": "Intel(R) Xeon(R) CPU X5690 @ 3.47GHz", "flags": None}
    facts, _ = triage("Architecture:        aarch64\nCPU op-mode(s):      64-bit\nModel name:          Neoverse-N1\n")
    assert facts["platform.cpu"] is None


# tensorflow/b50b-tf114-q9650-no-avx-flags-illegal-instruction.md (tensorflow/tensorflow#46496,
# a development report): only `flags` lines of /proc/cpuinfo (no processor/vendor_id rows), a
# bare "Illegal instruction (core dumped)", TensorFlow named in the prose around them.
Q9650_FLAGS = ("flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx "
               "fxsr sse sse2 ht tm pbe syscall nx lm constant_tsc arch_perfmon pebs bts rep_good nopl cpuid aperfmperf "
               "pni dtes64 monitor ds_cpl vmx smx est tm2 ssse3 cx16 xtpr pdcm sse4_1 lahf_lm pti tpr_shadow vnmi\n")
SIGILL_TF = ("On a Intel Q9659 cpu that does not support AVX instructions, I have a `Illegal instruction (core dumped)`.\n\n"
             "```\n" + Q9650_FLAGS * 2 + "```\n\nStarting with v1.6, TensorFlow binaries use AVX instructions.\n")


def test_flags_lines_alone_are_read_and_a_bare_sigill_beside_one_named_framework_is_its_missing_avx(test_kb):
    facts, _ = triage(SIGILL_TF)
    assert facts["platform.cpu"] == {"model": None, "flags": []}
    assert "cpu-lacks-avx" in ids(SIGILL_TF, test_kb)
    assert "cpu-lacks-avx" in ids(SIGILL_TF.replace("\n", "\r\n"), test_kb)


@pytest.mark.parametrize("change", [
    lambda t: t.replace(" vnmi", " avx vnmi"),                         # the flags show AVX: another cause
    lambda t: t.replace("TensorFlow", "my program"),                   # no framework named
    lambda t: t + "I also tried PaddlePaddle and jax.\n",              # several frameworks: whose SIGILL?
    lambda t: t.replace("flags\t\t:", "flags\t\t: x"),                 # not an x86 flag list any more? still one: fpu, sse2 stay
])
def test_a_bare_sigill_is_not_called_missing_avx_without_all_three(test_kb, change):
    text = change(SIGILL_TF)
    expected = "flags\t\t: x" in text  # the last case keeps all three: still the finding
    assert ("cpu-lacks-avx" in ids(text, test_kb)) is expected
