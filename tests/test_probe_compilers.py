"""The host-compiler probe: the default gcc and every gcc-N, from names along symlink chains
under --root and from `gcc -dumpfullversion` on a live host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.probes import compilers
from fwdoctor.probes.compilers import parse_dumpversion, version_from_name

DATA = Path(__file__).resolve().parent / "data" / "cuda"
ROOTS = Path(__file__).resolve().parent / "roots"
STANDIN = "#!/bin/sh\n# stand-in for gcc (test); nothing runs under --root\n"


@pytest.mark.parametrize(
    "name, version",
    [
        ("gcc-12", "12"),
        ("/usr/bin/x86_64-linux-gnu-gcc-12", "12"),
        ("gcc-4.8", "4.8"),
        ("gcc", None),
        ("gcc-ar-12", None),
        ("x86_64-linux-gnu-gcc-nm-12", None),
        ("gcc-12-backup", None),
    ],
)
def test_a_gcc_name_carries_its_version_only_in_the_gcc_n_form(name, version):
    assert version_from_name(name) == version


def test_the_real_dumpfullversion_output_parses():
    assert parse_dumpversion((DATA / "gcc-12-dumpfullversion.txt").read_text()) == "12.2.0"
    assert parse_dumpversion((DATA / "gcc-12-dumpversion.txt").read_text()) == "12"


@pytest.mark.parametrize("text", ["", "gcc: error: unrecognized command-line option\n", "12.2.0\n13.1.0\n", "twelve\n"])
def test_anything_but_one_bare_version_line_is_no_version(text):
    assert parse_dumpversion(text) is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=100))
def test_the_parsers_answer_none_or_a_version_for_any_text(text):
    for parse in (parse_dumpversion, version_from_name):
        result = parse(text)
        assert result is None or all(part.isdigit() for part in result.split("."))


# ----------------------------------------------------------------------------- roots
def put(root: Path, rel: str, text: str = STANDIN, mode: int = 0o755) -> None:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)


def facts_at(root: Path, env: dict[str, str] | None = None):
    return collect(Host.at_root(root, env or {}), compilers.PROBES)


def test_debians_gcc_link_chain_gives_the_default_version():
    facts = facts_at(ROOTS / "toolkit-clean")
    assert facts["compilers.gcc_default"] == {"path": "/usr/bin/gcc", "version": "12"}
    assert facts["compilers.gcc_installed"] == [{"path": "/usr/bin/gcc-12", "version": "12"}]


def test_every_gcc_n_on_path_is_listed_once():
    facts = facts_at(ROOTS / "toolkit-gcc")
    assert facts["compilers.gcc_default"]["version"] == "16"
    assert sorted(g["version"] for g in facts["compilers.gcc_installed"]) == ["12", "16"]


def test_a_gcc_without_a_versioned_name_takes_the_single_libgcc_folder(tmp_path):
    put(tmp_path, "/usr/bin/gcc")
    (tmp_path / "usr/lib/gcc/x86_64-redhat-linux/11").mkdir(parents=True)
    facts = facts_at(tmp_path)
    assert facts["compilers.gcc_default"] == {"path": "/usr/bin/gcc", "version": "11"}
    assert facts["compilers.gcc_installed"] == [{"path": "/usr/bin/gcc", "version": "11"}]


def test_several_libgcc_folders_leave_the_default_unknown_with_the_reason(tmp_path):
    put(tmp_path, "/usr/bin/gcc")
    for version in ("11", "13"):
        (tmp_path / f"usr/lib/gcc/x86_64-linux-gnu/{version}").mkdir(parents=True)
    facts = facts_at(tmp_path)
    assert not facts.known("compilers.gcc_default")
    assert "several (11, 13)" in facts.why("compilers.gcc_default")


def test_no_gcc_on_path_is_a_known_none(tmp_path):
    facts = facts_at(tmp_path)
    assert facts.known("compilers.gcc_default") and facts["compilers.gcc_default"] is None
    assert facts["compilers.gcc_installed"] == []


# ----------------------------------------------------------------------------- live
def test_a_live_gcc_is_asked_its_full_version(tmp_path):
    put(tmp_path, "/bin/gcc", f"#!/bin/sh\nexec /bin/cat '{DATA / 'gcc-12-dumpfullversion.txt'}'\n")
    facts = collect(Host.live_host({"PATH": f"{tmp_path}/bin"}), compilers.PROBES)
    assert facts["compilers.gcc_default"] == {"path": f"{tmp_path}/bin/gcc", "version": "12.2.0"}


def test_an_old_gcc_without_dumpfullversion_falls_back_to_dumpversion(tmp_path):
    # gcc < 7 rejects -dumpfullversion; its -dumpversion prints the full version.
    body = '#!/bin/sh\n[ "$1" = -dumpversion ] && { echo 4.8.5; exit 0; }\necho "gcc: error: unrecognized command line option" >&2; exit 1\n'
    put(tmp_path, "/bin/gcc", body)
    facts = collect(Host.live_host({"PATH": f"{tmp_path}/bin"}), compilers.PROBES)
    assert facts["compilers.gcc_default"]["version"] == "4.8.5"


def test_a_hung_live_gcc_is_reported_and_its_version_unknown(tmp_path):
    put(tmp_path, "/bin/gcc", "#!/bin/sh\nexec /bin/sleep 30\n")
    facts = collect(Host.live_host({"PATH": f"{tmp_path}/bin"}, command_timeout=0.5), compilers.PROBES)
    assert not facts.known("compilers.gcc_default")
    assert any("no answer within the timeout" in f.reason for f in facts.failures)


def test_a_gcc_n_that_is_the_default_gcc_is_asked_once(tmp_path):
    # Debian: /usr/bin/gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12, one file asked once.
    log = tmp_path / "calls"
    put(tmp_path, "/bin/x86_64-linux-gnu-gcc-12", f"#!/bin/sh\necho \"$0\" >> '{log}'\necho 12.2.0\n")
    os.symlink("x86_64-linux-gnu-gcc-12", tmp_path / "bin/gcc-12")
    os.symlink("gcc-12", tmp_path / "bin/gcc")
    facts = collect(Host.live_host({"PATH": f"{tmp_path}/bin"}), compilers.PROBES)
    assert facts["compilers.gcc_default"] == {"path": f"{tmp_path}/bin/gcc", "version": "12.2.0"}
    assert facts["compilers.gcc_installed"] == [{"path": f"{tmp_path}/bin/gcc-12", "version": "12.2.0"}]
    assert log.read_text().splitlines() == [f"{tmp_path}/bin/gcc"]
