"""scripts/conformance_table.py: the table of test cases stays complete and current.

- every TC of the suite (a test_TC_* function, or a NOT_APPLICABLE entry) is in docs/conformance.md,
  so a new test case cannot land without the table being regenerated;
- no TC is both tested and marked not applicable, and every not-applicable entry has a reason;
- the script turns a JUnit XML run into pass / fail / skipped per kind (files written here).
"""
from __future__ import annotations

import importlib.util
import sys

from netns import REPO

SCRIPT = REPO / "scripts" / "conformance_table.py"


def load():
    spec = importlib.util.spec_from_file_location("conformance_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["conformance_table"] = module
    spec.loader.exec_module(module)
    return module


def test_every_test_case_is_in_the_committed_table():
    table = load()
    cases, not_applicable = table.read_suite()
    assert len(cases) > 50
    assert not set(cases) & set(not_applicable)
    assert all(reason.strip() for _, reason in not_applicable.values())
    doc = (REPO / "docs" / "conformance.md").read_text()
    missing = sorted(tc for tc in [*cases, *not_applicable] if f"| {tc} |" not in doc)
    assert not missing, f"run scripts/conformance_table.py with a fresh JUnit XML; missing: {missing}"


def test_results_from_junit(tmp_path):
    table = load()
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.conformance.test_tc_desc" name="test_TC_DESC_2_1[inprocess-bridge]"/>'
        '<testcase classname="tests.conformance.test_tc_desc" name="test_TC_DESC_2_1[network-bridge]">'
        '<failure message="x"/></testcase>'
        '<testcase classname="tests.conformance.test_tc_desc" name="test_TC_DESC_1_1[network-tv]">'
        '<skipped message="x"/></testcase>'
        '</testsuite></testsuites>')
    out = tmp_path / "conformance.md"
    assert table.main([str(junit), "-o", str(out)]) == 0
    rows = {line.split(" | ")[0][2:]: line for line in out.read_text().splitlines() if line.startswith("| TC_")}
    assert "pass (1)" in rows["TC_DESC_2_1"] and "**fail** (1/1)" in rows["TC_DESC_2_1"]
    assert "**skipped** (1/1)" in rows["TC_DESC_1_1"]
    assert "ProductAppearance" in rows["TC_BINFO_3_1"]          # a not-applicable reason
    assert table.main([str(tmp_path / "absent.xml")]) == 2


def test_a_partial_run_keeps_the_previous_results(tmp_path):
    table = load()
    previous = tmp_path / "previous.md"
    previous.write_text("| TC_DESC_2_1 | pass (7) | pass (3) | x | |\n| TC_DESC_1_1 | pass (5) | — | x | |\n")
    junit = tmp_path / "run.xml"
    junit.write_text('<testsuites><testsuite name="pytest"><testcase classname="tests.conformance.test_tc_desc" '
                     'name="test_TC_DESC_2_1[inprocess-bridge]"/></testsuite></testsuites>')
    out = tmp_path / "conformance.md"
    assert table.main([str(junit), "--previous", str(previous), "-o", str(out)]) == 0
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in out.read_text().splitlines()
            if line.startswith("| TC_")}
    assert rows["TC_DESC_2_1"][1:3] == ["pass (1)", "pass (3)"]     # the new in-process result, the old network one
    assert rows["TC_DESC_1_1"][1:3] == ["pass (5)", "—"]
    assert table.main([str(junit), "--previous", str(tmp_path / "absent.md")]) == 2
