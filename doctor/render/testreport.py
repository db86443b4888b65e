"""Test results as CI systems and dashboards read them: CTRF JSON (Common Test Report Format,
ctrf.io: results.tool.name, results.summary {tests, passed, failed, pending, skipped, other,
start, stop} in ms since the epoch, results.tests[] {name, status, duration}) and JUnit XML
(one <testsuite>, a <testcase> per test, <failure> and <skipped> children, as Jenkins,
GitLab and GitHub reporters read it). Shared by `gate` and `smoke --report-format`.

A test is a dict: name, status (passed | failed | skipped | pending | other), duration (ms),
and optionally message and extra. XML is written by xml.etree, which escapes text and
attributes; JSON by json.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from typing import Any, Mapping, Sequence

STATUSES = ("passed", "failed", "pending", "skipped", "other")


def ctrf(tool: str, tests: Sequence[Mapping[str, Any]], elapsed_s: float, finished: float | None = None,
         extra: Mapping[str, Any] | None = None) -> str:
    stop = int((finished if finished is not None else time.time()) * 1000)
    start = stop - int(elapsed_s * 1000)
    count = {s: sum(1 for t in tests if t["status"] == s) for s in STATUSES}
    results: dict[str, Any] = {"tool": {"name": tool}, "summary": {"tests": len(tests), **count, "start": start, "stop": stop},
                               "tests": [dict(t) for t in tests]}
    if extra:
        results["extra"] = dict(extra)
    return json.dumps({"results": results}, indent=2) + "\n"


def junit(suite_name: str, classname: str, tests: Sequence[Mapping[str, Any]], elapsed_s: float) -> str:
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(tests)),
                       failures=str(sum(1 for t in tests if t["status"] == "failed")), errors="0",
                       skipped=str(sum(1 for t in tests if t["status"] == "skipped")), time=f"{elapsed_s:.3f}")
    for test in tests:
        case = ET.SubElement(suite, "testcase", classname=classname, name=str(test["name"]), time=f"{test.get('duration', 0) / 1000:.3f}")
        message = str(test.get("message") or "")
        if test["status"] == "failed":
            ET.SubElement(case, "failure", message=message, type=str(test["name"])).text = message
        elif test["status"] == "skipped":
            ET.SubElement(case, "skipped", message=message)
        elif message:
            ET.SubElement(case, "system-out").text = f"{test['status']}: {message}"
    root = ET.Element("testsuites", name="fwdoctor", tests=suite.get("tests", "0"), failures=suite.get("failures", "0"))
    root.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
