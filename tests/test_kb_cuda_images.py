"""nvidia/cuda releases after NVIDIA's 2026-01 tag list (issue 16), read from Docker Hub's
own tag list through replicate/cog's generator (doctor/kb/sources.yaml S-IMG-HUB,
S-IMG-HUB-PR). That list holds only cuDNN-devel tags, so those rows claim that flavour
alone: asking for another flavour falls back to an older release of the minor that NVIDIA's
list shows with every flavour, or is refused naming what is known. Audits the shipped KB."""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB, KBError


@pytest.fixture(scope="module")
def docker():
    return KB().docker


@pytest.mark.parametrize("cuda, os_name, flavor, reference", [
    ("13.1", "ubuntu24.04", "cudnn-devel", "nvidia/cuda:13.1.2-cudnn-devel-ubuntu24.04"),
    ("13.1", "ubuntu24.04", "base", "nvidia/cuda:13.1.0-base-ubuntu24.04"),  # 13.1.2-base is not shown by the source
    ("13.2", "ubuntu22.04", "cudnn-devel", "nvidia/cuda:13.2.1-cudnn-devel-ubuntu22.04"),
    ("13.3", "ubuntu24.04", "cudnn-devel", "nvidia/cuda:13.3.0-cudnn-devel-ubuntu24.04"),
    ("13.0", "ubuntu24.04", "runtime", "nvidia/cuda:13.0.2-runtime-ubuntu24.04"),
    # issue 25: tags seen in public build files (S-IMG-CW24, S-IMG-CW26) and a recorded run (S-IMG-KATA2604)
    ("13.3", "ubuntu26.04", "cudnn-devel", "nvidia/cuda:13.3.1-cudnn-devel-ubuntu26.04"),
    ("13.3", "ubuntu26.04", "devel", "nvidia/cuda:13.3.1-devel-ubuntu26.04"),
    ("13.3", "ubuntu24.04", "cudnn-devel", "nvidia/cuda:13.3.0-cudnn-devel-ubuntu24.04"),  # no 24.04 cuDNN tag of 13.3.1 seen
    ("13.4", "ubuntu24.04", "devel", "nvidia/cuda:13.4.2-devel-ubuntu24.04"),
    ("13.4", "ubuntu26.04", "devel", "nvidia/cuda:13.4.2-devel-ubuntu26.04"),
])
def test_each_flavour_comes_from_a_release_the_sources_show_with_it(docker, cuda, os_name, flavor, reference):
    assert docker.cuda_reference(cuda, os_name, flavor) == reference


def test_a_flavour_no_source_shows_is_refused_naming_what_is_known(docker):
    with pytest.raises(LookupError, match=r"no nvidia/cuda runtime tag known for CUDA 13\.2 on ubuntu24\.04 \(known flavours of CUDA 13\.2 there: cudnn-devel\)"):
        docker.cuda_reference("13.2", "ubuntu24.04", "runtime")
    # cudnn-runtime of 13.1: 13.1.2 is shown only as cudnn-devel, and 13.1.0 has no cuDNN
    # variant at all (NVIDIA's list): refused, never a guessed 13.1.2-cudnn-runtime tag.
    with pytest.raises(LookupError, match=r"nvidia/cuda:13\.1\.0 has no cuDNN variant"):
        docker.cuda_reference("13.1", "ubuntu22.04", "cudnn-runtime")


def test_a_flavors_list_naming_an_unknown_flavour_is_a_kb_error(tmp_path):
    import shutil
    from pathlib import Path

    import fwdoctor

    kb_dir = tmp_path / "kb"
    shutil.copytree(Path(fwdoctor.__file__).parent / "kb", kb_dir, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    text = (kb_dir / "docker.yaml").read_text()
    (kb_dir / "docker.yaml").write_text(text.replace("flavors: [cudnn-devel], source: S-IMG-HUB}", "flavors: [cudnn-debug], source: S-IMG-HUB}", 1))
    with pytest.raises(KBError, match="flavors"):
        KB(str(kb_dir)).docker


def test_cuda_13_4_claims_only_the_devel_tags_the_sources_show(docker):
    # 13.4.2's cuDNN tags and its base tag on 26.04 were not seen: refused naming what is known.
    with pytest.raises(LookupError, match=r"no nvidia/cuda cudnn-devel tag known for CUDA 13\.4 on ubuntu26\.04 \(known flavours of CUDA 13\.4 there: devel\)"):
        docker.cuda_reference("13.4", "ubuntu26.04", "cudnn-devel")
    with pytest.raises(LookupError, match=r"no nvidia/cuda tag for CUDA 13\.0 on ubuntu26\.04"):
        docker.cuda_reference("13.0", "ubuntu26.04", "base")


def test_ubuntu_26_04_ships_python_3_14_and_glibc_2_43(docker):
    row = docker.os_base("ubuntu26.04")
    assert (row.python, row.glibc, row.cpu_base) == ("3.14", "2.43", "ubuntu:26.04")
