"""Fixture roots are read from a git clone in CI: a folder git cannot keep must not exist.

An empty folder (tests/roots/*/sys/class/iommu/dmar0 was one) is in the author's tree but
not in a clone, so the test that reads it passes here and fails in CI. Every folder under
tests/roots must hold a file or a link (as real sysfs folders do).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOTS = Path(__file__).resolve().parent / "roots"


def test_no_fixture_root_holds_an_empty_folder_a_clone_would_lose():
    empty = []
    for folder, dirs, files in os.walk(ROOTS):
        # A link to a folder counts as an entry (os.walk lists it in dirs, unfollowed).
        if not dirs and not files:
            empty.append(os.path.relpath(folder, ROOTS))
    assert not empty, f"empty folders under tests/roots (git drops them; add the file a real host has): {empty}"
