"""Issue 26, the conda group: libsolv's "has constraint __cuda" sentence as a class.

mamba, micromamba and conda's libmamba solver say that a build's __cuda constraint excludes the
__cuda they had, and name both: "package cudatoolkit-11.0.3-h15472ef_6 has constraint __cuda
>=11.0 conflicting with __cuda-10.2-0". __cuda is the driver's CUDA (conda's virtual package), so
the driver is older than the CUDA the build needs: conda-cuda-pin-conflict, with both versions.
The same sentence about another virtual package (__glibc) is not that.

Every text is quoted from a public thread (doctor/kb/errors.yaml's and conda_specs' sources) and
read also as pasting mangles it (tests/pasting.py)."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from tests.pasting import forms
from tests.triage_run import cli_findings as findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


CONSTRAINT = [
    # mamba-org/mamba#969 (mamba 0.13 with conda-forge's cudatoolkit 11.0 on a CUDA 10.2 driver)
    ("Encountered problems while solving:\n"
     "  - package cudatoolkit-11.0.3-h15472ef_6 has constraint __cuda >=11.0 conflicting with __cuda-10.2-0\n",
     "cudatoolkit 11.0.3", ">=11.0", "10.2"),
    # MPI-Dortmund/tomotwin-cryoet#3 (fixed by a driver for CUDA 11.8)
    ("I got the following error:\nEncountered problems while solving:\n"
     "  - package cudatoolkit-11.6.0-habf752d_9 has constraint __cuda >=11.6.0 conflicting with __cuda-10.2-0\n",
     "cudatoolkit 11.6.0", ">=11.6.0", "10.2"),
    # rapidsai/docs#488 (RAPIDS' troubleshooting: a driver for CUDA 11.8, cuda-version 12.0 asked for)
    ("LibMambaUnsatisfiableError: Encountered problems while solving:\n"
     " - package cuda-version-12.0-hffde075_0 has constraint __cuda >=12 conflicting with __cuda-11.8-0\n",
     "cuda-version 12.0", ">=12", "11.8"),
]


@pytest.mark.parametrize("text, who, needs, has", CONSTRAINT)
def test_libsolv_has_constraint_cuda_is_a_driver_older_than_the_build(cli, tmp_path, text, who, needs, has):
    for form in [text, *forms(text)]:
        facts, _ = triage(form)
        conflict = facts["conda.cuda_conflict"]
        assert [(r["package"] + " " + r["version"], r["range"]) for r in conflict["requires"]] == [(who, needs)], form
        assert [p["version"] for p in conflict["pins"]] == [has], form
        got = findings(cli, tmp_path, form)
        assert got.get("conda-cuda-pin-conflict", {}).get("severity") == "error", (form, got)
        message = got["conda-cuda-pin-conflict"]["message"]
        assert f"needs __cuda {needs}" in message and f"__cuda {has}" in message, message


LOOK_ALIKES = [
    # another virtual package's constraint (the same libsolv sentence, glibc: not the driver)
    "Encountered problems while solving:\n"
    "  - package libgcc-ng-12.2.0-h65d4601_19 has constraint __glibc >=2.17 conflicting with __glibc-2.12-0\n",
    # the constraint in prose, without the __cuda the solver had
    "The package has constraint __cuda >=12 so you need a recent driver.\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_other_constraints_are_not_a_cuda_pin_conflict(cli, tmp_path, text):
    for form in [text, *forms(text)]:
        facts, _ = triage(form)
        assert not facts.known("conda.cuda_conflict") or not facts["conda.cuda_conflict"], form
        assert "conda-cuda-pin-conflict" not in findings(cli, tmp_path, form), form
