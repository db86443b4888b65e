"""The CUDA toolkit probe: parsers on real files (tests/data/cuda/README.md says where each
came from), discovery of every kind of install in root folders built per test, which
toolkit is active and why, and failures that become messages instead of tracebacks."""

from __future__ import annotations

import os
import posixpath
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.kb import KB
from fwdoctor.probes import cuda as probe_mod
from fwdoctor.probes.cuda import (
    parse_conda_meta_name,
    parse_cuda_h,
    parse_dist_info_name,
    parse_host_config,
    parse_nvcc_version,
    parse_version_json,
    parse_version_txt,
    root_of_libdir,
    wrapper_target,
)

DATA = Path(__file__).resolve().parent / "data" / "cuda"
ROOTS = Path(__file__).resolve().parent / "roots"
NVCC_STANDIN = "#!/bin/sh\n# stand-in for nvcc (test); nothing runs under --root\n"


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- parsers
@pytest.mark.parametrize(
    "name, version",
    [("version-11.5.2.json", "11.5.2"), ("version-13.3.1.json", "13.3.1"), ("version-11.8-abridged.json", "11.8.20220929")],
)
def test_version_json_gives_the_cuda_sdk_version_even_when_abridged(name, version):
    assert parse_version_json(read(name)) == version


def test_version_json_without_a_cuda_entry_gives_none():
    assert parse_version_json('{"cuda_nvcc": {"name": "CUDA NVCC", "version": "11.8.89"}}') is None


def test_version_txt_of_cuda_10_gives_the_full_version():
    assert parse_version_txt(read("version-10.0.txt")) == "10.0.130"


def test_cuda_h_of_cuda_13_0_gives_13_0():
    assert parse_cuda_h(read("cuda-13.0-head.h")) == "13.0"


@pytest.mark.parametrize("number, version", [("12040", "12.4"), ("11080", "11.8"), ("13010", "13.1"), ("10020", "10.2")])
def test_cuda_h_version_number_is_major_times_1000_plus_minor_times_10(number, version):
    assert parse_cuda_h(f"#define CUDA_VERSION {number}\n") == version


@pytest.mark.parametrize(
    "name, expected",
    [
        ("nvcc-11.8.txt", ("11.8", "11.8.89")),
        ("nvcc-13.1.txt", ("13.1", "13.1.115")),
        ("nvcc-11.5.txt", ("11.5", "11.5.119")),
        ("nvcc-13.0.txt", ("13.0", "13.0.88")),
    ],
)
def test_nvcc_version_output_gives_release_and_build_version(name, expected):
    assert parse_nvcc_version(read(name)) == expected


@pytest.mark.parametrize("name, gcc", [("host_config-12.9.h", "14"), ("host_config-13.0.h", "15"), ("host_config-13.5.h", "16")])
def test_host_config_gives_the_newest_gcc_nvcc_accepts(name, gcc):
    assert parse_host_config(read(name)) == gcc


@pytest.mark.parametrize("name, cuda", [("host_config-12.9.h", "12.9"), ("host_config-13.0.h", "13.0"), ("host_config-13.5.h", "13.5")])
def test_real_host_config_headers_agree_with_the_knowledge_base(name, cuda):
    assert KB().cuda.host_gcc_max(cuda) == parse_host_config(read(name))


def test_host_config_without_a_gnuc_guard_gives_none():
    assert parse_host_config("#if defined(__clang__)\n#endif\n") is None


def test_the_real_nvcc_wrapper_of_this_host_leads_to_its_toolkit():
    assert wrapper_target(read("nvcc-wrapper.sh")) == "/usr/local/cuda-13.0/bin/nvcc"


def test_a_script_that_names_no_nvcc_is_not_a_wrapper():
    assert wrapper_target(NVCC_STANDIN) is None
    assert wrapper_target("\x7fELF\x02\x01/usr/local/cuda/bin/nvcc") is None  # a binary is never a wrapper


@pytest.mark.parametrize(
    "name, version",
    [
        ("nvidia_cuda_nvcc-13.0.88.dist-info", "13.0.88"),
        ("nvidia_cuda_nvcc_cu12-12.9.86.dist-info", "12.9.86"),
        ("nvidia_cuda_runtime-13.0.96.dist-info", None),
        ("nvidia_cuda_nvcc-13.0.88.data", None),
    ],
)
def test_dist_info_folder_names_give_the_nvcc_wheel_version(name, version):
    assert parse_dist_info_name(name) == version


@pytest.mark.parametrize(
    "name, version",
    [("cuda-nvcc-12.4.131-0.json", "12.4.131"), ("cuda-nvcc-impl-12.4.131-0.json", None), ("cuda-nvcc_linux-64-12.4.131-0.json", None)],
)
def test_conda_meta_records_give_the_cuda_nvcc_version(name, version):
    assert parse_conda_meta_name(name) == version


@pytest.mark.parametrize(
    "libdir, root",
    [
        ("/usr/local/cuda-12.4/lib64", "/usr/local/cuda-12.4"),
        ("/usr/local/cuda-13.0/targets/x86_64-linux/lib", "/usr/local/cuda-13.0"),
        ("/usr/local/cuda-13.0/lib/", "/usr/local/cuda-13.0"),
        ("/opt/libs", "/opt/libs"),
    ],
)
def test_a_library_folder_belongs_to_the_toolkit_above_it(libdir, root):
    assert root_of_libdir(libdir) == root


PARSERS = (parse_version_json, parse_version_txt, parse_cuda_h, parse_nvcc_version, parse_host_config, wrapper_target, parse_dist_info_name, parse_conda_meta_name)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300))
def test_every_parser_answers_none_or_a_value_for_any_text(text):
    for parse in PARSERS:
        result = parse(text)
        assert result is None or isinstance(result, (str, tuple))


@settings(max_examples=100, deadline=None)
@given(junk=st.text(max_size=40), number=st.integers(min_value=0, max_value=10**9))
def test_cuda_h_parser_never_invents_a_version_below_1_0(junk, number):
    result = parse_cuda_h(f"{junk}\n#define CUDA_VERSION {number}\n")
    if number < 1000:
        assert result is None or result == parse_cuda_h(junk + "\n")
    else:
        assert result is not None


# ----------------------------------------------------------------------------- root folders
def put(root: Path, rel: str, text: str = "", mode: int = 0o644, src: Path | None = None) -> Path:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if src is not None:
        shutil.copyfile(src, path)
    else:
        path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return path


def link(root: Path, rel: str, target: str) -> None:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def nvcc(root: Path, toolkit: str) -> None:
    put(root, f"{toolkit}/bin/nvcc", NVCC_STANDIN, 0o755)


def facts_at(root: Path, env: dict[str, str] | None = None):
    facts = collect(Host.at_root(root, env or {}), probe_mod.PROBES)
    return facts


def toolkit(facts, root: str) -> dict:
    matches = [t for t in facts["cuda.toolkits"] if t["root"] == root]
    assert matches, f"{root} not among {[t['root'] for t in facts['cuda.toolkits']]}"
    return matches[0]


def test_a_wheel_built_toolkit_reads_its_version_from_dist_info_and_gcc_limit_from_its_header():
    facts = facts_at(ROOTS / "toolkit-clean")
    tk = toolkit(facts, "/usr/local/cuda-13.0")
    assert (tk["version"], tk["version_source"], tk["host_gcc_max"]) == ("13.0.88", "dist-info", "15")
    assert tk["found_via"] == ["/usr/local/cuda link", "/usr/local/cuda-*"]
    assert tk["nvcc"] == "/usr/local/cuda-13.0/bin/nvcc" and tk["nvcc_release"] is None  # nothing runs in a root


def test_version_json_wins_over_cuda_h(tmp_path):
    nvcc(tmp_path, "/usr/local/cuda-11.5")
    put(tmp_path, "/usr/local/cuda-11.5/version.json", src=DATA / "version-11.5.2.json")
    put(tmp_path, "/usr/local/cuda-11.5/include/cuda.h", src=DATA / "cuda-13.0-head.h")
    tk = toolkit(facts_at(tmp_path), "/usr/local/cuda-11.5")
    assert (tk["version"], tk["version_source"]) == ("11.5.2", "version.json")


def test_a_cuda_10_install_reads_version_txt(tmp_path):
    nvcc(tmp_path, "/usr/local/cuda-10.0")
    put(tmp_path, "/usr/local/cuda-10.0/version.txt", src=DATA / "version-10.0.txt")
    tk = toolkit(facts_at(tmp_path), "/usr/local/cuda-10.0")
    assert (tk["version"], tk["version_source"]) == ("10.0.130", "version.txt")


def test_cuda_h_under_targets_is_the_last_resort(tmp_path):
    nvcc(tmp_path, "/opt/cuda")
    put(tmp_path, "/opt/cuda/targets/x86_64-linux/include/cuda.h", src=DATA / "cuda-13.0-head.h")
    tk = toolkit(facts_at(tmp_path), "/opt/cuda")
    assert (tk["version"], tk["version_source"], tk["found_via"]) == ("13.0", "cuda.h", ["/opt/cuda*"])


def test_a_garbled_version_json_falls_through_to_the_next_source(tmp_path):
    nvcc(tmp_path, "/usr/local/cuda-12.4")
    put(tmp_path, "/usr/local/cuda-12.4/version.json", "\x00\x01{ not json")
    put(tmp_path, "/usr/local/cuda-12.4/include/cuda.h", src=DATA / "cuda-13.0-head.h")
    tk = toolkit(facts_at(tmp_path), "/usr/local/cuda-12.4")
    assert tk["version_source"] == "cuda.h"


def test_a_runtime_only_install_is_listed_without_nvcc():
    facts = facts_at(ROOTS / "toolkit-runtime-only")
    tk = toolkit(facts, "/usr/local/cuda-13.0")
    assert tk["nvcc"] is None and tk["version"] is None


def test_the_pip_nvcc_wheel_is_found_in_the_venv_with_its_dist_info_version():
    root = ROOTS / "toolkit-pip-nvcc"
    facts = facts_at(root, {"VIRTUAL_ENV": "/opt/venv", "PATH": "/opt/venv/bin:/usr/bin:/bin"})
    tk = toolkit(facts, "/opt/venv/lib/python3.11/site-packages/nvidia/cu13")
    assert (tk["version"], tk["version_source"], tk["host_gcc_max"], tk["found_via"]) == ("13.0.88", "dist-info", "15", ["pip nvidia-cuda-nvcc"])


def test_a_pip_target_install_is_found_through_cuda_home(tmp_path):
    nvcc(tmp_path, "/home/u/.local/cuda-13.0/nvidia/cu13")
    (tmp_path / "home/u/.local/cuda-13.0/nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    facts = facts_at(tmp_path, {"CUDA_HOME": "/home/u/.local/cuda-13.0/nvidia/cu13"})
    tk = toolkit(facts, "/home/u/.local/cuda-13.0/nvidia/cu13")
    assert (tk["version"], tk["found_via"]) == ("13.0.88", ["CUDA_HOME"])
    assert facts["cuda.active"] == {"root": "/home/u/.local/cuda-13.0/nvidia/cu13", "version": "13.0.88", "why": "CUDA_HOME"}


def test_a_conda_env_with_nvcc_is_a_toolkit_versioned_by_conda_meta(tmp_path):
    nvcc(tmp_path, "/opt/conda/envs/build")
    put(tmp_path, "/opt/conda/envs/build/conda-meta/cuda-nvcc-12.4.131-0.json", "{}")
    facts = facts_at(tmp_path, {"CONDA_PREFIX": "/opt/conda/envs/build"})
    tk = toolkit(facts, "/opt/conda/envs/build")
    assert (tk["version"], tk["version_source"], tk["found_via"]) == ("12.4.131", "conda-meta", ["CONDA_PREFIX"])


def test_a_conda_env_without_nvcc_is_not_a_toolkit(tmp_path):
    put(tmp_path, "/opt/conda/envs/run/lib/libcudart.so.12")
    facts = facts_at(tmp_path, {"CONDA_PREFIX": "/opt/conda/envs/run"})
    assert facts["cuda.toolkits"] == []


def test_the_hpc_sdk_toolkits_are_found_under_opt_nvidia(tmp_path):
    nvcc(tmp_path, "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4")
    facts = facts_at(tmp_path)
    assert toolkit(facts, "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4")["found_via"] == ["/opt/nvidia/*"]


def test_one_install_reached_four_ways_is_listed_once_with_every_way(tmp_path):
    nvcc(tmp_path, "/usr/local/cuda-12.4")
    link(tmp_path, "/usr/local/cuda", "/usr/local/cuda-12.4")
    facts = facts_at(tmp_path, {"CUDA_HOME": "/usr/local/cuda", "PATH": "/usr/local/cuda/bin:/usr/bin", "LD_LIBRARY_PATH": ""})
    assert len(facts["cuda.toolkits"]) == 1
    assert facts["cuda.toolkits"][0]["found_via"] == ["nvcc on PATH", "CUDA_HOME", "/usr/local/cuda link", "/usr/local/cuda-*"]


def test_an_nvcc_wrapper_on_path_points_at_the_toolkit_it_execs(tmp_path):
    nvcc(tmp_path, "/usr/local/cuda-13.0")
    put(tmp_path, "/usr/local/bin/nvcc", mode=0o755, src=DATA / "nvcc-wrapper.sh")
    facts = facts_at(tmp_path, {"PATH": "/usr/local/bin:/usr/bin"})
    assert [t["root"] for t in facts["cuda.toolkits"]] == ["/usr/local/cuda-13.0"]
    assert facts["cuda.pointers"]["path_nvcc"] == "/usr/local/cuda-13.0"


def test_libcudart_on_ld_library_path_points_at_its_toolkit(tmp_path):
    nvcc(tmp_path, "/usr/local/cuda-13.0")
    put(tmp_path, "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13")
    facts = facts_at(tmp_path, {"LD_LIBRARY_PATH": "/nowhere:/usr/local/cuda-13.0/targets/x86_64-linux/lib"})
    assert facts["cuda.pointers"]["ld_cudart"] == "/usr/local/cuda-13.0"
    assert "LD_LIBRARY_PATH" in toolkit(facts, "/usr/local/cuda-13.0")["found_via"]


# ----------------------------------------------------------------------------- active
def two_toolkits(root: Path) -> None:
    for version in ("11.8", "12.4"):
        nvcc(root, f"/usr/local/cuda-{version}")
        put(root, f"/usr/local/cuda-{version}/include/cuda.h", f"#define CUDA_VERSION {version.replace('.', '0')}0\n")
    link(root, "/usr/local/cuda", "/usr/local/cuda-12.4")


@pytest.mark.parametrize(
    "env, root, why",
    [
        ({"CUDA_HOME": "/usr/local/cuda-11.8", "PATH": "/usr/local/cuda-12.4/bin"}, "/usr/local/cuda-11.8", "CUDA_HOME"),
        ({"CUDA_PATH": "/usr/local/cuda-11.8"}, "/usr/local/cuda-11.8", "CUDA_PATH"),
        ({"PATH": "/usr/local/cuda-11.8/bin:/usr/bin"}, "/usr/local/cuda-11.8", "nvcc first on PATH"),
        ({"PATH": "/usr/bin"}, "/usr/local/cuda-12.4", "/usr/local/cuda link"),
    ],
)
def test_the_active_toolkit_follows_torchs_lookup_order(tmp_path, env, root, why):
    two_toolkits(tmp_path)
    active = facts_at(tmp_path, env)["cuda.active"]
    assert (active["root"], active["why"]) == (root, why)


def test_cuda_home_naming_no_toolkit_is_active_without_a_version(tmp_path):
    two_toolkits(tmp_path)
    active = facts_at(tmp_path, {"CUDA_HOME": "/opt/missing"})["cuda.active"]
    assert active == {"root": "/opt/missing", "version": None, "why": "CUDA_HOME (no toolkit there)"}


def test_no_toolkit_and_no_pointer_means_no_active_toolkit(tmp_path):
    facts = facts_at(tmp_path, {"PATH": "/usr/bin"})
    assert facts["cuda.active"] is None and facts["cuda.toolkits"] == []
    assert set(facts["cuda.pointers"].values()) == {None}


def test_every_pointer_names_the_resolved_toolkit_root(tmp_path):
    two_toolkits(tmp_path)
    put(tmp_path, "/usr/local/cuda-11.8/lib64/libcudart.so.11.0")
    env = {"CUDA_HOME": "/usr/local/cuda", "CUDA_PATH": "/usr/local/cuda-11.8", "PATH": "/usr/local/cuda-12.4/bin", "LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"}
    assert facts_at(tmp_path, env)["cuda.pointers"] == {
        "path_nvcc": "/usr/local/cuda-12.4",
        "cuda_home": "/usr/local/cuda-12.4",
        "cuda_path": "/usr/local/cuda-11.8",
        "usr_local_cuda": "/usr/local/cuda-12.4",
        "ld_cudart": "/usr/local/cuda-11.8",
    }


# ----------------------------------------------------------------------------- failures
def test_a_symlink_loop_in_one_install_is_a_probe_failure_not_a_crash(tmp_path):
    two_toolkits(tmp_path)
    link(tmp_path, "/usr/local/cuda-11.8/version.json", "version.json")
    facts = facts_at(tmp_path)
    assert [f.probe for f in facts.failures] == ["cuda-toolkits"]
    assert "too many levels of symbolic links" in facts.failures[0].reason
    assert facts.known("cuda.toolkits")
    assert "/usr/local/cuda-12.4" in [t["root"] for t in facts["cuda.toolkits"]]


def fake_nvcc(tmp_path: Path, body: str) -> Path:
    """A toolkit whose nvcc is a script: prints a recorded real output, or misbehaves."""
    root = tmp_path / "cuda-fake"
    put(root, "/bin/nvcc", "#!/bin/sh\n" + body, 0o755)
    return root


def test_live_nvcc_version_fills_release_and_version(tmp_path):
    root = fake_nvcc(tmp_path, f"cat '{DATA / 'nvcc-11.8.txt'}'\n")
    host = Host.live_host({"PATH": f"{root}/bin:/usr/bin:/bin"})
    tk = toolkit(collect(host, probe_mod.PROBES), str(root))
    assert (tk["nvcc_release"], tk["version"], tk["version_source"]) == ("11.8", "11.8.89", "nvcc")


def test_live_nvcc_with_garbage_output_is_reported_as_unparseable(tmp_path):
    root = fake_nvcc(tmp_path, "echo 'Segmentation fault'\n")
    facts = collect(Host.live_host({"PATH": f"{root}/bin:/usr/bin:/bin"}), probe_mod.PROBES)
    reasons = [f.reason for f in facts.failures]
    assert any("unparseable output" in r and "Segmentation fault" in r for r in reasons), reasons
    assert toolkit(facts, str(root))["nvcc_release"] is None


def test_a_hung_live_nvcc_is_killed_and_reported(tmp_path):
    root = fake_nvcc(tmp_path, "exec sleep 30\n")
    host = Host.live_host({"PATH": f"{root}/bin:/usr/bin:/bin"}, command_timeout=0.5)
    facts = collect(host, probe_mod.PROBES)
    assert any("no answer within the timeout" in f.reason for f in facts.failures)
    assert facts.known("cuda.active")


def test_cuda_home_in_a_symlink_loop_keeps_the_toolkit_list_and_says_why(tmp_path):
    two_toolkits(tmp_path)
    link(tmp_path, "/opt/loop", "/opt/loop")
    facts = facts_at(tmp_path, {"CUDA_HOME": "/opt/loop/cuda"})
    assert sorted(t["root"] for t in facts["cuda.toolkits"]) == ["/usr/local/cuda-11.8", "/usr/local/cuda-12.4"]
    assert not facts.known("cuda.active") and "too many levels of symbolic links" in facts.why("cuda.active")
    assert all(f.probe == "cuda-toolkits" for f in facts.failures) and facts.failures


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=80))
def test_root_of_libdir_answers_a_path_for_any_text(text):
    # The root is the folder itself or one of its ancestors.
    libdir = posixpath.normpath("/" + text)
    root = root_of_libdir("/" + text)
    assert root == libdir or libdir.startswith(root.rstrip("/") + "/")
