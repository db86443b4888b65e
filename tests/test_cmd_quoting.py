"""Fixes printed for cmd.exe carry a report's Windows folder or DLL name: a pasted report is
anyone's text, and cmd has no quoting that holds '"' or '%', so such a value is refused and the
fix is printed without it (fwdoctor.quoting.cmd_word)."""

from __future__ import annotations

import json

import pytest

from fwdoctor.quoting import QuotingError, cmd_text, cmd_word
from fwdoctor.rules.toolkit import _env_fix

HOSTILE = ['x&calc&cudart64_110.dll', 'C:\\x" & calc & rem "', "C:\\%USERPROFILE%\\cuda", "C:\\a!b", "C:\\a^b", "C:\\a|b",
           "C:\\a<b", "C:\\a>b", "C:\\a\nb", "C:\\a`b", "C:\\a\x1bb"]


def test_a_windows_folder_is_one_quoted_cmd_word():
    folder = r"C:\Program Files (x86)\NVIDIA GPU Computing Toolkit\CUDA\v11.8"
    assert cmd_word(folder) == f'"{folder}"' and cmd_text(folder) == folder
    assert cmd_word("cudart64_110.dll") == "cudart64_110.dll"  # nothing to separate: as is


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_cmd_would_interpret_is_refused(value):
    for write in (cmd_word, cmd_text):
        with pytest.raises(QuotingError, match="cmd.exe would interpret"):
            write(value)


@pytest.mark.parametrize("root", [v for v in HOSTILE if v.startswith("C:")])
def test_the_toolkit_fix_for_a_hostile_folder_carries_no_part_of_it(root):
    fix = _env_fix(root)
    assert fix.commands == ("where nvcc   # the nvcc.exe PATH finds first", "echo %CUDA_PATH%")
    assert "calc" not in " ".join(fix.commands) + fix.note


def test_the_toolkit_fix_for_a_plain_folder_sets_it():
    fix = _env_fix(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4")
    assert fix.commands[0] == r'set "CUDA_HOME=C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4"'
    assert fix.commands[2] == r'set "PATH=C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4\bin;%PATH%"'


def test_a_pasted_dll_name_reaches_cmd_only_as_text(cli, tmp_path):
    report = tmp_path / "r.txt"
    report.write_text("Could not load dynamic library 'x&calc&cudart64_110.dll'; dlerror: cudart64_110.dll not found\n")
    found = json.loads(cli("triage", str(report), "--json").output)["findings"]
    commands = [c for f in found for c in f["fix"]["commands"]]
    assert commands and not any("calc" in c for c in commands), commands
    report.write_text("Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found\n")
    found = json.loads(cli("triage", str(report), "--json").output)["findings"]
    assert any(c.startswith("where cudart64_110.dll ") for f in found for c in f["fix"]["commands"])
