"""Hostile input, second round (issue 24, items 3, 4 and 6): parsing linear in its input,
one bad fleet document costing one row, host files of any size.

- Every pattern a triage reader holds is timed on adversarial lines built from its own
  literals and from runs of blanks, digits, dots, slashes ... (`adversarial`): a pattern
  that backtracks super-linearly takes seconds on 4 KB where a linear one takes well under
  a millisecond, and 16x on 8x the line. Each reader is timed the same way, and the whole
  triage on 65 KB lines (GitHub's largest issue body) must take under a second.
- `fleet report` with 50 good nodes and one document damaged in one field (a type
  replaced at random, seeded): every good node is judged, the bad document is one
  unreadable row naming its file and the field.
- Hosts files of 60,000 names, duplicates and long names; pdsh reads them from a file.

Times are bounded generously (many times the linear cost on a busy two-core machine);
quadratic behaviour misses them by orders of magnitude.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TEST_KB_DIR
from fwdoctor.triage import PARSERS, base, text as triage_text, triage
from fwdoctor.triage.text import MAX_PARSED_LINE, Lines

try:  # Python 3.11+
    import re._constants as _sc
    import re._parser as _sp
except ImportError:  # Python 3.10
    import sre_constants as _sc  # type: ignore[no-redef]
    import sre_parse as _sp  # type: ignore[no-redef]


# --------------------------------------------------------------------------- adversarial lines
BLANK_UNITS = (" ", "\t", "0", "9", ".", "-", "/", ":", "_", "a", "a ", "0 ", ". ", "1.", "a.", "(", "|", "- ", "sm_0 ")
PREFIXES = ("", "a", "- a", "| 0 ", "GPU 0", "ii  a", "torch 1 ")


def literals(pattern: re.Pattern[str]) -> set[str]:
    """The literal runs of a pattern ("NVIDIA-SMI", " with CUDA capability sm_" ...)."""
    found: set[str] = set()

    def walk(items) -> None:
        run = ""
        for op, av in items:
            if op == _sc.LITERAL:
                run += chr(av)
                continue
            if run:
                found.add(run)
                run = ""
            if op == _sc.SUBPATTERN:
                walk(av[-1])
            elif op in (_sc.MAX_REPEAT, _sc.MIN_REPEAT):
                walk(av[2])
            elif op == _sc.BRANCH:
                for branch in av[1]:
                    walk(branch)
        if run:
            found.add(run)

    walk(_sp.parse(pattern.pattern, pattern.flags))
    return found


def adversarial(pattern: re.Pattern[str], size: int) -> dict[str, str]:
    """Lines of about `size` characters that make a backtracking pattern try every split:
    runs of one unit after a prefix that starts a match, and repeats of the pattern's own
    literals (each a fresh start that fails late). Each ends in "x": normalize() strips
    trailing blanks, and a match must fail at the end, not succeed at once."""
    units = set(BLANK_UNITS)
    lits = sorted(literals(pattern), key=len, reverse=True)[:8]
    units |= set(lits) | {lit + " " for lit in lits} | {lit + "0" for lit in lits}
    prefixes = set(PREFIXES) | set(lits[:4])
    lines = {}
    for unit in units:
        body = unit * max(1, size // len(unit))
        for prefix in prefixes:
            lines[f"{prefix!r} + {unit!r} * n"] = prefix + body + "x"
    joined = "".join(lits[:3])
    if joined:
        lines[f"{joined!r} * n"] = joined * max(1, size // len(joined)) + "x"
    return lines


def _seconds(run, *args) -> float:
    start = time.perf_counter()
    run(*args)
    return time.perf_counter() - start


def triage_patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern of the triage readers (module globals; inline patterns of
    the readers are short literals or anchored, and are timed through their reader)."""
    found = {"base.VERSION": re.compile(base.VERSION)}
    modules = [triage_text, base] + [sys.modules[p.__module__] for p in PARSERS]
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = value
    from fwdoctor.triage.errors import signatures  # the error-text rows of doctor/kb/errors.yaml

    for sig in signatures().signatures:
        found[f"errors.yaml.{sig.id}"] = sig.pattern
    return found


PATTERNS = triage_patterns()
SMALL, BIG = 4096, 32768
# A linear search of 4 KB takes well under a millisecond; a quadratic one ~0.3-10 s.
SMALL_BUDGET_S = 0.05


def _search(pattern: re.Pattern[str], line: str) -> None:
    pattern.search(line)
    pattern.match(line)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_triage_pattern_is_linear_in_its_line(name):
    pattern = PATTERNS[name]
    timed = sorted(((min(_seconds(_search, pattern, line) for _ in range(2)), label)
                    for label, line in adversarial(pattern, SMALL).items()), reverse=True)
    worst, label = timed[0]
    assert worst < SMALL_BUDGET_S, f"{name}: {worst:.3f} s on a {SMALL} B line {label}"
    for small, label in timed[:3]:  # the slowest lines again, 8x as long: linear is ~8x
        line = adversarial(pattern, BIG)[label]
        big = min(_seconds(_search, pattern, line) for _ in range(2))
        assert big < max(0.05, 20 * small), f"{name}: {small * 1e3:.2f} ms at {SMALL} B but {big * 1e3:.1f} ms at {BIG} B on {label}"


READER_LINES = {
    "blanks": "a" + " " * 60000 + "x",
    "tabs": "a" + "\t" * 60000 + "x",
    "digits": "9" * 65000 + "x",
    "dots": "a" + "." * 65000 + "x",
    "list items": "- a" + " " * 65000 + "x",
    "table row": "| 0 a" + " " * 65000 + "b",
    "slashes": "/" * 65000 + "x",
    "spaced dots": "a" + " ." * 32000 + "x",
    "words": "a" + " a" * 32000 + "x",
    "sm warning": "x with CUDA capability sm_" + " a" * 32000,
    "cudnn libs": "libcudnn.so" * 6000 + "x",
    "uuids": "GPU 0: x" + "(UUID" * 13000 + "x",
    "pip sites": "torch 1 " + "site-packages" * 5000 + " x y",
    "versions": "1." * 32000 + "!",
    "nvcc blanks": "nvcc" + " " * 65000 + "x Cuda compilation tools, release 12.1",
    "nvrm": "NVRM version: NVIDIA UNIX " + " " * 65000 + "x",
    "api": "API mismatch: the client " + " NVRM:" * 10000 + "x",
    "arch list": "torch.cuda.get_arch_list(): " + "[" * 65000,
}


def _run_parser(parse, text: str) -> None:
    parse(Lines.of(text))


@pytest.mark.parametrize("parse", PARSERS, ids=lambda p: p.__module__.rsplit(".", 1)[-1])
def test_each_triage_reader_is_linear_on_adversarial_lines(parse, monkeypatch):
    # The reader itself, without the line cap that protects it in triage().
    monkeypatch.setattr(triage_text, "MAX_PARSED_LINE", 10**9)
    for label, line in READER_LINES.items():
        small = line[:4096] + line[-40:]
        took = min(_seconds(_run_parser, parse, small) for _ in range(2))
        assert took < 0.1, f"{parse.__module__}: {took:.3f} s on a 4 KB line of {label}"
        big = line[:32768] + line[-40:]
        took_big = min(_seconds(_run_parser, parse, big) for _ in range(2))
        assert took_big < max(0.1, 20 * took), f"{parse.__module__}: {took * 1e3:.1f} ms at 4 KB, {took_big * 1e3:.1f} ms at 32 KB on {label}"


def test_65_kb_adversarial_lines_triage_in_under_a_second_each():
    for label, line in READER_LINES.items():
        took = _seconds(triage, line)
        assert took < 1.0, f"triage took {took:.2f} s on a 65 KB line of {label}"


def test_lines_just_under_the_cap_are_parsed_and_a_megabyte_of_them_stays_fast():
    lines = [line[: MAX_PARSED_LINE - 41] + line[-40:] for line in READER_LINES.values()]
    text = "\n".join(lines * max(1, (1 << 20) // sum(len(x) for x in lines)))
    assert all(len(x) <= MAX_PARSED_LINE for x in lines)
    took = _seconds(triage, text)
    assert took < 20, f"triage of {len(text)} bytes of {MAX_PARSED_LINE}-character adversarial lines took {took:.1f} s"


def test_a_line_over_the_cap_is_kept_as_text_but_not_matched():
    long_error = "Torch not compiled with CUDA enabled " + "y" * MAX_PARSED_LINE
    lines = Lines.of(f"first\n{long_error}\nTorch not compiled with CUDA enabled\n")
    assert lines.raw[1] == long_error and lines.norm[1] == "" and len(lines) == 3
    facts, fragments = triage(f"first\n{long_error}\nTorch not compiled with CUDA enabled\n")
    assert [(f.start, f.notes) for f in fragments] == [(3, ["torch-not-compiled-with-cuda"])]
    assert facts["torch.cuda"] is None


def test_the_rewritten_readers_read_what_they_read_before():
    # One line each of the shapes whose patterns were restructured (split, then match).
    report = "\n".join([
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
        "",
        "",
        "",
        "ImportError: /x/libcudnn_cnn_infer.so.8: undefined symbol: _ZN5cudnn3fooEv, version libcudnn_ops_infer.so.8",
        "",
        "",
        "",
        "torch version .................... 2.0.1+cu117",
        "torch cuda version ............... 11.7",
        "nvcc version ..................... 11.8",
        "deepspeed info ................... 0.9.5, unknown, unknown",
    ])
    facts, fragments = triage(report)
    errors = {e["kind"]: e for e in facts["report.errors"]}
    assert errors["sm-incompatible"]["gpu"] == "NVIDIA GeForce RTX 5090" and errors["sm-incompatible"]["cc"] == "12.0"
    assert errors["cudnn-undefined-symbol"]["library"] == "libcudnn_cnn_infer.so.8"
    assert errors["cudnn-undefined-symbol"]["symbol"] == "_ZN5cudnn3fooEv,"
    assert facts["cuda.active"]["version"] == "11.8"
    assert facts["torch.version"] == "2.0.1+cu117"


def _wrapper_target(text):
    from fwdoctor.probes.cuda import wrapper_target

    return wrapper_target(text)


def _wrapper_choices(text):
    from fwdoctor.probes.compilers import wrapper_choices

    return wrapper_choices(text)


def _xid(text):
    from fwdoctor.probes.topology import parse_xid_lines

    return parse_xid_lines(text)


def _proc_version(text):
    from fwdoctor.probes.driver import parse_proc_version

    return parse_proc_version(text)


def _ib(text):
    from fwdoctor.smoke.nccl_log import _IB_DEVICE

    return _IB_DEVICE.findall(text)


# Patterns elsewhere that read files of an inspected root or image, or a child's output.
@pytest.mark.parametrize("read, text", [
    (_wrapper_target, "#!/bin/sh\nexec " + "/" * 32000 + "x"),
    (_wrapper_target, "#!/bin/sh\nexec " + "/bin/nvcc" * 4000 + "`"),
    (_wrapper_choices, "#!/bin/sh\nexec $prog\n" + "\n" * 32000 + "x"),
    (_xid, "NVRM: Xid (" * 3000),
    (_ib, "-." * 16000),
    (_proc_version, "NVRM version: Kernel Module" * 2000),
], ids=["nvcc-wrapper-slashes", "nvcc-wrapper-repeats", "gcc-wrapper-blank-lines", "xid-unclosed", "nccl-ib-names", "proc-version-repeats"])
def test_host_file_readers_elsewhere_are_linear(read, text):
    took = min(_seconds(read, text) for _ in range(2))
    assert took < 0.25, f"{took:.2f} s on {len(text)} characters"


def test_the_rewritten_host_file_readers_read_what_they_read_before():
    assert _wrapper_target('#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n') == "/usr/local/cuda-13.0/bin/nvcc"
    assert _wrapper_target("#!/bin/sh\nexec x/bin/nvcc\n") is None
    assert _wrapper_target("#!/bin/sh\nexec /opt/bin/nvcc|tee\n") is None
    assert _wrapper_target("#!/bin/sh\nexec /opt/bin/nvcc") == "/opt/bin/nvcc"
    assert _xid("[ 1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.") == [
        {"bus": "PCI:0000:18:00", "xid": 79, "text": "pid=1, GPU has fallen off the bus."}]
    assert _proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\nGCC version: 12\n") \
        == (__import__("fwdoctor.probes.driver").probes.driver.ModuleVersion("580.95.05", "open"))
    assert _proc_version("x\nNVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12\n").flavor == "proprietary"
    assert _ib("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB") == [("mlx5_0", "1", "IB"), ("mlx5_1", "1", "RoCE")]


# --------------------------------------------------------------------------- fleet documents
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fleet_report as fleet_gen  # noqa: E402  (the fleet generator tests/test_fleet_report.py uses)

DAMAGE = (5, -1.5, "x", "", True, None, [], [1], {"a": 1}, [{"a": 1}])


def _good_fleet(folder: Path, nodes: int = 51) -> None:
    fleet_gen.write_fleet(folder, nodes)


def _fleet(paths: list[str]):
    from fwdoctor.fleet.report import build
    from fwdoctor.kb import KB

    return build(paths, KB.load(TEST_KB_DIR))


def _paths(doc, prefix=()):
    """Every (path, value) below `doc`: the fields damage can replace."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key), value
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc[:3]):
            yield (*prefix, index), value
            yield from _paths(value, (*prefix, index))


def _set(doc, path, value):
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value


@pytest.fixture(scope="module")
def fleet_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet2") / "nodes"
    _good_fleet(folder)
    return folder


@pytest.mark.parametrize("seed", range(24))
def test_one_damaged_field_costs_one_document_and_every_other_node_is_judged(fleet_folder, tmp_path, seed):
    rng = random.Random(seed)
    folder = tmp_path / "nodes"
    shutil.copytree(fleet_folder, folder)
    victim = folder / rng.choice(["node-0007.facts.json", "node-0007.smoke.json"])
    doc = json.loads(victim.read_text())
    fields = [p for p, _ in _paths(doc) if p[0] != "kind"]
    path = rng.choice(fields)
    old = copy.deepcopy(doc)
    for _ in range(5):  # a value of another type than the field's
        value = rng.choice(DAMAGE)
        if type(value) is not type(_get(old, path)):
            break
    _set(doc, path, value)
    victim.write_text(json.dumps(doc))
    report = _fleet([str(folder)])  # never raises
    names = {row.name for row in report.rows}
    good = {fleet_gen.node_name(i) for i in range(51)} - {"node-0007"}
    assert good <= names, f"{path} = {value!r}: nodes missing {sorted(good - names)[:5]}"
    for row in report.rows:
        if row.name in good:
            assert row.cells.get("driver") and row.cells.get("busbw"), (row.name, row.cells)
    for item in report.bad:  # the damage either did no harm or is named where it is
        assert item.where == str(victim), item
    if report.bad:
        assert report.exit_code == 2


def _get(doc, path):
    for step in path:
        doc = doc[step]
    return doc


@pytest.mark.parametrize("where, damage, named", [
    ("smoke", lambda d: d["results"][0].__setitem__("details", [1, 2]), '"results[0].details" is a list, not an object'),
    ("smoke", lambda d: d["results"][0].__setitem__("details", "x"), '"results[0].details" is a string, not an object'),
    ("smoke", lambda d: d["results"][-1].__setitem__("details", 7), '"results[8].details" is an int, not an object'),
    ("smoke", lambda d: d["results"][0]["details"].__setitem__("checks", 3), '"results[0].details.checks" is an int, not a list'),
    ("smoke", lambda d: d["results"].__setitem__(1, "x"), '"results[1]" is a string, not an object'),
    ("facts", lambda d: d["facts"]["gpus.list"].__setitem__("value", 8), 'fact "gpus.list" is an int, not a list'),
    ("facts", lambda d: d["facts"]["gpus.list"].__setitem__("value", ["H100"]), 'fact "gpus.list" item 0 is a string, not an object'),
    ("facts", lambda d: d["facts"]["driver.version"].__setitem__("value", [580]), 'fact "driver.version" is a list, not a string'),
    ("facts", lambda d: d["facts"]["nccl.env"].__setitem__("value", 5), 'rule nccl-transport-disabled could not read "nccl.env"'),
    ("smoke", lambda d: d.__setitem__("collected_at", "last week"), '"collected_at" \'last week\' is not an ISO 8601 date'),
])
def test_a_malformed_document_is_one_unreadable_row_naming_file_and_field_in_every_format(fleet_folder, tmp_path, where, damage, named):
    folder = tmp_path / "nodes"
    shutil.copytree(fleet_folder, folder)
    victim = folder / f"node-0007.{where}.json"
    doc = json.loads(victim.read_text())
    damage(doc)
    victim.write_text(json.dumps(doc))
    from test_fleet_report import fleet_cli

    code, out, _ = fleet_cli(str(folder), "--format", "json")
    body = json.loads(out)
    assert code == 2 and body["exit_code"] == 2
    assert body["summary"]["nodes"] == 51 and body["summary"]["unreadable"] == 1
    assert [u["file"] for u in body["unreadable"]] == [str(victim)] and named in body["unreadable"][0]["reason"]
    field = re.search(r'"([^"]+)"', named).group(1)  # results[0].details, gpus.list, ...
    for fmt in ("text", "markdown", "html"):
        code, out, _ = fleet_cli(str(folder), "--format", fmt)
        assert code == 2 and victim.name in out and field in out, (fmt, out[-1500:])


def test_a_stamp_that_is_no_date_never_beats_a_real_one(fleet_folder, tmp_path):
    folder = tmp_path / "nodes"
    shutil.copytree(fleet_folder, folder)
    # Today's run says busbw 180; an older copy claims "last week" (text "l" > "2") and 30.
    smoke = json.loads((folder / "node-0003.smoke.json").read_text())
    stale = copy.deepcopy(smoke)
    stale["collected_at"] = "last week"
    stale["results"][-1]["details"]["avg_busbw_gbps"] = 30.0
    (folder / "node-0003.old.smoke.json").write_text(json.dumps(stale))
    report = _fleet([str(folder)])
    row = next(r for r in report.rows if r.name == "node-0003")
    assert row.figures["busbw"] == smoke["results"][-1]["details"]["avg_busbw_gbps"]
    assert [b.where for b in report.bad] == [str(folder / "node-0003.old.smoke.json")]


def test_stamps_with_offsets_order_by_time_not_text():
    from fwdoctor.fleet.documents import StampError, utc_stamp

    # 10:00+02:00 is 08:00Z: earlier than 09:00Z, though it sorts after it as text.
    assert utc_stamp("2026-12-01T10:00:00+02:00") < utc_stamp("2026-12-01T09:00:00Z")
    assert utc_stamp("2026-12-01T09:00:00Z") == "2026-12-01T09:00:00.000000Z"
    for bad in ("last week", "", "2026-13-01T00:00:00Z", 20261201, "9" * 100):
        with pytest.raises(StampError):
            utc_stamp(bad)


# --------------------------------------------------------------------------- hosts files
def test_sixty_thousand_hosts_with_repeats_are_read_in_linear_time():
    from fwdoctor.fleet.collect import parse_hosts_file

    names = [f"gpu-{i:05d}.rack{i % 40}.cluster.example" for i in range(60000)]
    text = "\n".join(names + names[::7]) + "\n"
    took = _seconds(parse_hosts_file, text, "--hosts h.txt")
    assert parse_hosts_file(text, "--hosts h.txt") == names  # first occurrence order, no repeat
    assert took < 2.0, f"60,000 hosts took {took:.1f} s"


def test_pdsh_reads_the_hosts_from_a_file_not_one_argument(tmp_path):
    from fwdoctor.fleet import collect as fc

    hosts = [f"h{i:05d}-" + "a" * 200 for i in range(3000)] + ["admin@node-x"]
    path = fc.write_pdsh_hosts(hosts, str(tmp_path))
    try:
        argv = fc.pdsh_argv(hosts, "fwdoctor facts", 32, path)
        assert argv[argv.index("-w") + 1] == f"^{path}"
        assert max(len(a) for a in argv) < 4096  # not one 600 KB argument
        assert Path(path).read_text().splitlines() == hosts[:-1]
        assert argv[-4:] == ["-w", "admin@node-x", "--", "fwdoctor facts"]
    finally:
        os.unlink(path)


def test_real_pdsh_takes_a_thousand_long_names_from_the_file(tmp_path):
    pdsh = shutil.which("pdsh")
    if pdsh is None:
        pytest.skip("pdsh not installed (run .ci/setup-slurm.sh)")
    from fwdoctor.fleet import collect as fc

    hosts = [f"h{i:05d}-" + "a" * 200 for i in range(1000)]  # 207 KB: over the 128 KiB an argument may hold
    path = fc.write_pdsh_hosts(hosts, str(tmp_path))
    try:
        argv = fc.pdsh_argv(hosts, "echo %h", 64, path, pdsh=pdsh)
        # pdsh's exec module runs the command here, once per host, instead of over ssh.
        argv[argv.index("ssh")] = "exec"
        done = subprocess.run([*argv[:-2], "echo", "%h"], capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(path)
    assert done.returncode == 0, done.stderr[-500:]
    seen = {line.split(": ", 1)[0] for line in done.stdout.splitlines()}
    assert seen == set(hosts)
    # The old form, all hosts in one -w argument, is refused before pdsh starts.
    with pytest.raises(OSError, match="Argument list too long"):
        subprocess.run([pdsh, "-R", "exec", "-w", ",".join(hosts), "--", "echo", "%h"], capture_output=True, timeout=60)


def test_collect_pdsh_removes_its_hosts_file(tmp_path, monkeypatch):
    from fwdoctor import runner
    from fwdoctor.fleet import collect as fc

    seen = {}
    real_stream = runner.stream

    def fake_stream(argv, **kwargs):
        target = argv[argv.index("-w") + 1][1:]
        seen["file"], seen["hosts"] = target, Path(target).read_text().split()
        return real_stream(["true"], timeout=10)

    monkeypatch.setattr(fc.runner, "stream", fake_stream)
    fc.collect_pdsh(["node1", "node2", "node1.x"], "fwdoctor", "facts", [], timeout=10, connect_timeout=5, fanout=4)
    assert seen["hosts"] == ["node1", "node2", "node1.x"]
    assert not os.path.exists(seen["file"])
