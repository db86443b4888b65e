"""Golden plans per recipe (recipes/torch_wheel.py, cuda_toolkit.py, env.py) and the
promises every emitted script keeps: values quoted (paths with spaces and quotes), no
NVIDIA driver ever touched, refusals that say why.

Regenerate after an intended change: FWDOCTOR_UPDATE_GOLDEN=1 pytest tests/test_recipe_plans.py
Facts here are hand-built inputs in the shapes doctor/FACTS.md defines (not recorded outputs).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fwdoctor.model import Fact, Facts
from fwdoctor.recipes import cuda_toolkit, env, registry, torch_wheel

GOLDEN = Path(__file__).resolve().parent / "golden" / "recipes"
WEIRD = "/srv/it's a \"test\" dir"  # a space, a single quote and double quotes
FWPY = "/opt/fwdoctor/bin/python"


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def facts(**values) -> Facts:
    return Facts([Fact(k.replace("__", "."), v) for k, v in values.items()])


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FWDOCTOR_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with FWDOCTOR_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


def sh_syntax_ok(script: str) -> None:
    proc = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


H100_535 = dict(
    driver__version="535.104.05",
    gpus__list=[{"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}],
    python__version="3.11.7",
    python__executable=f"{WEIRD}/venv/bin/python",
)


def test_torch_wheel_plan_for_an_h100_on_driver_535_matches_the_golden_script(kb):
    plan = torch_wheel.plan(facts(**H100_535), kb, {})
    script = plan.to_shell()
    sh_syntax_ok(script)
    check_golden("torch-wheel-h100-535.sh", script)
    assert "torch==2.14.1+cu126" in plan.steps[0].argv


def test_torch_wheel_plan_with_uv_installs_into_the_named_interpreter(kb):
    plan = torch_wheel.plan(facts(**H100_535), kb, {"installer": "uv", "with": ["torchvision"]})
    argv = plan.steps[0].argv
    assert argv[:5] == ("uv", "pip", "install", "--python", f"{WEIRD}/venv/bin/python")
    assert "torchvision==0.29.1" in argv


def test_torch_wheel_plan_is_refused_when_no_wheel_runs_on_the_driver(kb):
    old = dict(H100_535, driver__version="390.157", gpus__list=[{"index": 0, "name": "Tesla K80", "cc": "3.7"}])
    plan = torch_wheel.plan(facts(**old), kb, {})
    assert plan.refused.startswith("no official torch wheel in the KB fits Python 3.11, driver 390.157")
    assert "fwdoctor never changes the NVIDIA driver" in plan.refused
    check_golden("torch-wheel-refused-k80-390.sh", plan.to_shell())


def test_torch_wheel_plan_from_a_finding_installs_exactly_the_wheel_it_names(kb):
    # The options doctor/rules/torch.py puts in its FixRef.
    options = {"torch": "2.9.1", "variant": "cu126", "index_url": "https://download.pytorch.org/whl/cu126", "python": "/usr/bin/python3"}
    plan = registry.plan_for("torch-wheel", facts(**H100_535), kb, options)
    assert plan.steps[0].argv == ("/usr/bin/python3", "-m", "pip", "install", "--index-url", "https://download.pytorch.org/whl/cu126", "torch==2.9.1+cu126")


RUNFILE_FACTS = dict(
    driver__version="580.95.05",
    gpus__list=[{"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}, {"index": 1, "name": "Tesla V100-SXM2-16GB", "cc": "7.0"}],
    cuda__pointers={"usr_local_cuda": "/usr/local/cuda-12.4"},
)


def toolkit_options(**more):
    return {"fwdoctor_python": FWPY, "work_dir": f"{WEIRD}/work", "env_file": f"{WEIRD}/cuda.env.sh", **more}


def test_cuda_toolkit_runfile_plan_matches_the_golden_script(kb):
    plan = cuda_toolkit.plan(facts(**RUNFILE_FACTS), kb, toolkit_options(version="12.8", prefix=f"{WEIRD}/cuda-12.8"))
    script = plan.to_shell()
    sh_syntax_ok(script)
    check_golden("cuda-toolkit-runfile-12.8.sh", script)


def test_cuda_toolkit_runfile_installs_the_toolkit_only_and_never_the_driver(kb):
    plan = cuda_toolkit.plan(facts(**RUNFILE_FACTS), kb, toolkit_options(version="12.8"))
    install = next(s for s in plan.steps if s.argv[0] == "sh")
    assert install.argv[2:] == ("--silent", "--toolkit", "--toolkitpath=/usr/local/cuda-12.8", "--no-opengl-libs", "--no-man-page", "--override")
    every = [a for s in (*plan.steps, *plan.verify) for a in s.argv]
    assert not any(a.startswith("--driver") for a in every)
    # /usr/local/cuda stays where it pointed (the installer may move it).
    assert ("ln", "-sfn", "/usr/local/cuda-12.4", "/usr/local/cuda") in [s.argv for s in plan.steps]


def test_cuda_toolkit_runfile_download_is_checked_against_the_known_sha256(kb):
    plan = cuda_toolkit.plan(facts(**RUNFILE_FACTS), kb, toolkit_options(version="12.8"))
    download = plan.steps[0].argv
    assert download[:5] == (FWPY, "-m", "fwdoctor.recipes.download", "--sha256", "610867dcd6d94c4e36c4924f1d01b9db28ec08164e8af6c764f21b84200695f8")
    assert download[5].endswith("/cuda_12.8.0_570.86.10_linux.run")


def test_cuda_toolkit_writes_its_env_snippet_only_after_the_install(kb):
    plan = cuda_toolkit.plan(facts(**RUNFILE_FACTS), kb, toolkit_options(version="12.8"))
    order = [s.argv[3] if s.argv[1:3] == ("-m", "fwdoctor.recipes.apply") else s.argv[0] for s in plan.steps]
    assert plan.files == ()
    assert order.index("write") > order.index("sh")


def test_cuda_toolkit_compiles_the_verification_for_each_gpu_arch_of_the_host(kb):
    plan = cuda_toolkit.plan(facts(**RUNFILE_FACTS), kb, toolkit_options(version="12.8"))
    compile_argv = plan.verify[1].argv
    assert compile_argv[3:] == ("/usr/local/cuda-12.8/bin/nvcc", "run", "-gencode", "arch=compute_70,code=sm_70", "-gencode", "arch=compute_90,code=sm_90")


def test_cuda_toolkit_pip_plan_matches_the_golden_script(kb):
    plan = cuda_toolkit.plan(facts(), kb, toolkit_options(version="13.0", method="pip", prefix=f"{WEIRD}/cu13", python="/usr/bin/python3"))
    script = plan.to_shell()
    sh_syntax_ok(script)
    check_golden("cuda-toolkit-pip-13.0.sh", script)


def test_cuda_toolkit_pip_method_is_refused_for_cuda_12_wheels(kb):
    plan = cuda_toolkit.plan(facts(), kb, toolkit_options(version="12.8", method="pip"))
    assert "use --method runfile or apt" in plan.refused


def test_cuda_toolkit_apt_plan_matches_the_golden_script(kb):
    ubuntu = dict(RUNFILE_FACTS, system__os={"id": "ubuntu", "version_id": "22.04", "pretty": "Ubuntu 22.04.4 LTS"}, system__arch="x86_64")
    plan = cuda_toolkit.plan(facts(**ubuntu), kb, toolkit_options(version="12.8", method="apt"))
    script = plan.to_shell()
    sh_syntax_ok(script)
    check_golden("cuda-toolkit-apt-12.8.sh", script)
    assert ("apt-get", "install", "-y", "--no-install-recommends", "cuda-toolkit-12-8") in [s.argv for s in plan.steps]


def test_cuda_toolkit_the_driver_cannot_run_is_refused_with_the_minimum_driver_and_the_gpus_it_cannot_compile_for(kb):
    host = dict(driver__version="535.104.05", gpus__list=[{"index": 0, "name": "NVIDIA GeForce GTX 1080 Ti", "cc": "6.1"}])
    plan = cuda_toolkit.plan(facts(**host), kb, toolkit_options(version="13.0"))
    assert plan.refused.startswith("driver 535.104.05 cannot run CUDA 13.0 programs (needs >= 580.65.06)")
    assert "fwdoctor never installs or replaces the NVIDIA driver" in plan.refused
    newest = kb.cuda.newest_cuda_for_driver("535.104.05")
    assert newest.startswith("12.")
    assert f"install CUDA {newest} or older instead" in plan.refused
    assert "CUDA 13.0 cannot compile for: NVIDIA GeForce GTX 1080 Ti sm_61" in plan.refused
    check_golden("cuda-toolkit-refused-13.0-on-535.sh", plan.to_shell())


def test_cuda_toolkit_force_installs_anyway_and_says_so(kb):
    host = dict(driver__version="535.104.05")
    plan = cuda_toolkit.plan(facts(**host), kb, toolkit_options(version="13.0", method="pip", force=True))
    assert not plan.refused
    assert plan.notes[0].startswith("--force: driver 535.104.05 cannot run CUDA 13.0")


def test_cuda_toolkit_runfile_without_a_known_checksum_asks_for_one(kb):
    plan = cuda_toolkit.plan(facts(), kb, toolkit_options(version="13.1", method="runfile"))
    assert "pass --runfile-url URL --sha256 HEX" in plan.refused
    plan = cuda_toolkit.plan(facts(), kb, toolkit_options(version="13.1", runfile_url="http://127.0.0.1/x.run"))
    assert "--runfile-url needs --sha256" in plan.refused


ENV_FACTS = dict(
    cuda__toolkits=[
        {"root": "/usr/local/cuda-12.8", "version": "12.8.93"},
        {"root": "/usr/local/cuda-11.8", "version": "11.8.89"},
        {"root": "/usr", "version": "12.0.140"},
    ],
    cuda__active={"root": "/usr/local/cuda-11.8", "version": "11.8.89", "why": "nvcc first on PATH"},
    torch__installed=True,
    torch__cuda="12.8",
    torch__location=f"{WEIRD}/venv/lib/python3.11/site-packages/torch",
    torch__requires={"nvidia-cudnn-cu12": "==9.10.2.21"},
    ld__library_path=["/usr/local/cuda-11.8/lib64", "/opt/cudnn-8.9/lib", "/opt/other/lib"],
    ld__preload=["/opt/nccl-2.18/lib/libnccl.so.2", "/usr/lib/libjemalloc.so.2"],
    cudnn__ld_first={"path": "/opt/cudnn-8.9/lib/libcudnn.so.8", "version": "8.9.7", "via": "LD_LIBRARY_PATH"},
    nccl__ld_first={"path": "/opt/nccl-2.18/lib/libnccl.so.2", "version": "2.18.1", "via": "LD_PRELOAD"},
    cudnn__installs=[
        {"kind": "pip", "prefix": f"{WEIRD}/venv/lib/python3.11/site-packages/nvidia/cudnn", "cuda_major": 11, "package": "nvidia-cudnn-cu11 8.9.4.25"},
        {"kind": "pip", "prefix": f"{WEIRD}/venv/lib/python3.11/site-packages/nvidia/cudnn", "cuda_major": 12, "package": "nvidia-cudnn-cu12 9.10.2.21"},
    ],
    nccl__installs=[],
    python__virtual_env=f"{WEIRD}/venv",
    python__executable=f"{WEIRD}/venv/bin/python",
)


def env_plan(kb, **more):
    options = {"path": "/usr/local/cuda-11.8/bin:/usr/local/bin:/usr/bin:/bin", "env_file": f"{WEIRD}/fw env.sh", **more}
    return env.plan(facts(**ENV_FACTS), kb, options)


def test_env_plan_matches_the_golden_script(kb):
    plan = env_plan(kb, activate=True)
    script = plan.to_shell()
    sh_syntax_ok(script)
    check_golden("env-shadowed-cudnn-stray-cu11.sh", script)


def test_env_file_puts_the_chosen_toolkit_and_the_venv_first_and_drops_shadows(kb, tmp_path):
    plan = env_plan(kb)
    target = tmp_path / "env.sh"
    target.write_text(plan.files[0].content)
    script = '. "$1"; printf "%s\\n" "$CUDA_HOME" "$PATH" "$LD_LIBRARY_PATH" "${LD_PRELOAD-unset}"'
    out = subprocess.run(["sh", "-c", script, "sh", str(target)], capture_output=True, text=True, timeout=30, env={"PATH": "/bin:/usr/bin"})
    cuda_home, path, ld, preload = out.stdout.splitlines()
    assert cuda_home == "/usr/local/cuda-12.8"  # matches torch's CUDA 12.8, not the active 11.8
    assert path == f"{WEIRD}/venv/bin:/usr/local/cuda-12.8/bin:/usr/local/bin:/usr/bin:/bin"
    assert ld == "/usr/local/cuda-12.8/lib64:/opt/other/lib"
    assert preload == "/usr/lib/libjemalloc.so.2"


def test_env_plan_uninstalls_only_the_cudnn_wheel_for_the_other_cuda_major(kb):
    plan = env_plan(kb)
    uninstalls = [s.argv[-1] for s in plan.steps if "uninstall" in s.argv]
    assert uninstalls == ["nvidia-cudnn-cu11"]


def test_env_plan_takes_the_options_findings_give(kb):
    plan = env.plan(facts(**ENV_FACTS), kb, {"ld_library_path_remove": ["/opt/other/lib"], "set": {"PYTHONNOUSERSITE": "1"}, "env_file": "/tmp/e.sh"})
    content = plan.files[0].content
    assert "/opt/other/lib" not in content
    assert "export PYTHONNOUSERSITE=1" in content


def test_env_activate_is_refused_without_a_virtual_environment(kb):
    no_venv = dict(ENV_FACTS, python__virtual_env=None)
    plan = env.plan(facts(**no_venv), kb, {"activate": True, "env_file": "/tmp/e.sh"})
    assert plan.refused == "--activate: no virtual environment is active (VIRTUAL_ENV unset)"


def test_every_recipe_in_the_registry_is_a_callable_with_a_kebab_case_id():
    for rid, func in registry.RECIPES:
        assert rid == rid.lower() and " " not in rid and "_" not in rid
        assert callable(func)
    with pytest.raises(KeyError, match="unknown recipe 'nope'"):
        registry.plan_for("nope", facts(), None)


def test_cuda_toolkit_link_points_usr_local_cuda_at_the_new_toolkit_and_says_how_to_undo(kb):
    plan = cuda_toolkit.plan(facts(**RUNFILE_FACTS), kb, toolkit_options(version="12.8", link=True))
    link = next(s for s in plan.steps if s.argv[0] == "ln")
    assert link.argv == ("ln", "-sfn", "/usr/local/cuda-12.8", "/usr/local/cuda")
    assert link.skip_if == ("test", "/usr/local/cuda", "-ef", "/usr/local/cuda-12.8")
    assert link.undo == "ln -sfn /usr/local/cuda-12.4 /usr/local/cuda"


def test_cuda_toolkit_apt_sets_up_the_repository_when_given_the_keyring_checksum(kb):
    debian = dict(system__os={"id": "debian", "version_id": "12", "pretty": "Debian GNU/Linux 12 (bookworm)"}, system__arch="aarch64")
    plan = cuda_toolkit.plan(facts(**debian), kb, toolkit_options(version="12.8", method="apt", keyring_sha256="ab" * 32))
    download = plan.steps[0].argv
    assert download[-2] == "https://developer.download.nvidia.com/compute/cuda/repos/debian12/sbsa/cuda-keyring_1.1-1_all.deb"
    assert plan.steps[1].argv[:2] == ("dpkg", "-i") and plan.steps[1].needs_root


def test_cuda_toolkit_apt_is_refused_off_debian_and_ubuntu(kb):
    rhel = dict(system__os={"id": "rhel", "version_id": "9.4", "pretty": "Red Hat Enterprise Linux 9.4"})
    plan = cuda_toolkit.plan(facts(**rhel), kb, toolkit_options(version="12.8", method="apt"))
    assert plan.refused == "--method apt: NVIDIA's apt repository needs Ubuntu or Debian; this host is Red Hat Enterprise Linux 9.4"


def test_a_torch_source_fix_is_refused_with_the_build_command_to_run(kb):
    host = facts(python__executable="/venv/bin/python", cuda__active={"root": "/usr/local/cuda-12.8"})
    plan = registry.plan_for("torch-source", host, kb, {"arch_list": "3.5;5.0"})
    assert plan.refused.splitlines()[1] == "fwdoctor build torch --cuda /usr/local/cuda-12.8 --arch '3.5;5.0' --python /venv/bin/python    # prints the plan; add --apply to build"


def test_the_default_method_is_the_runfile_only_where_its_checksum_is_known(kb):
    assert cuda_toolkit.default_method(kb, "12.8") == "runfile"  # nixpkgs' sha256 is in the KB
    assert cuda_toolkit.default_method(kb, "13.0") == "pip"  # no runfile checksum; pip wheels exist
    assert cuda_toolkit.default_method(kb, "12.9") == "apt"  # no checksum, and CUDA 12 wheels are split
