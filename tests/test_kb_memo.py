"""The KB queries a fleet report asks for every node are memoized (issue 30, item 4), and
a memoized answer is the answer: the second call equals the first, a malformed value is
still answered (not memoized), and a KB's equality is untouched by its memo."""

from __future__ import annotations

import copy

from fwdoctor.kb import KB
from fwdoctor.kb.gpus import driver_branch
from fwdoctor.rules.knowledge import _newest_branch, _newest_torch, newest_branch, newest_torch


def test_memoized_kb_queries_answer_as_the_computation_does(test_kb: KB) -> None:
    gpus, cuda = test_kb.gpus, test_kb.cuda
    for cc in ("9.0", "8.0", "7.5", "3.0", "not a cc"):
        assert gpus.family_for_cc(cc) == gpus._family_for_cc(cc) == gpus.family_for_cc(cc)
    for driver in ("580.95.05", "550.163.01", "390.157"):
        assert cuda.newest_cuda_for_driver(driver) == cuda._newest_cuda_for_driver(driver) == cuda.newest_cuda_for_driver(driver)
    assert newest_branch(test_kb) == _newest_branch(test_kb) == newest_branch(test_kb)
    assert newest_torch(test_kb) == _newest_torch(test_kb) == newest_torch(test_kb)
    assert copy.copy(gpus) == gpus and copy.copy(cuda) == cuda


def test_driver_branch_answers_unhashable_and_odd_values() -> None:
    assert driver_branch("535.230.02") == driver_branch("535.230.02") == 535
    assert driver_branch(["535"]) is None  # a malformed facts file: answered, not memoized
    assert driver_branch("R535") is None
