"""Write docs/conformance.md: every certification test case (TC id) of the conformance suite
(tests/conformance) with its result in process and over the network, and the reason for each
one that does not apply.

The test cases are the suite's `test_TC_*` functions; the ones that do not apply are the
`NOT_APPLICABLE = {"TC_X_Y_Z": "reason"}` dicts of its modules; test cases of the plans that
apply and are not written yet are their `NOT_COVERED = {"TC_X_Y_Z": "why"}` dicts; a case that runs
in process only on the device library's nodes says why in `NOT_OVER_NETWORK = {"TC_X_Y_Z": "why"}`
(a note); `KNOWN_FAILURES` entries
(a failure found and not fixed yet: the test checks everything else) and module notes show as
notes. Results come from a pytest run's JUnit XML:

    python -m pytest tests/conformance --junitxml=conformance.xml      # unit + e2e
    python scripts/conformance_table.py conformance.xml                 # -> docs/conformance.md
    python scripts/conformance_table.py conformance.xml -o -            # print it instead
    python scripts/conformance_table.py new.xml --previous docs/conformance.md   # add a partial run

With `--previous`, a test case the given runs have no result for (of a kind) keeps the result the
previous table shows: a run of some modules updates the table without losing the others'.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "tests" / "conformance"
OUT = REPO / "docs" / "conformance.md"
TC = re.compile(r"^test_(TC_[A-Za-z]+_\d+_\d+)$")
KINDS = ("inprocess", "network")


@dataclass
class Case:
    tc: str
    module: str
    doc: str = ""
    results: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))   # kind -> outcomes
    note: str = ""


def _literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def read_suite(folder: Path = SUITE) -> tuple[dict[str, Case], dict[str, tuple[str, str]]]:
    """(TC id -> Case for every test_TC_* function, TC id -> (module, reason) not applicable;
    a reason starting "not covered: " is a NOT_COVERED entry)."""
    cases: dict[str, Case] = {}
    not_applicable: dict[str, tuple[str, str]] = {}
    in_process_only: dict[str, str] = {}
    for path in sorted(folder.glob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and (m := TC.match(node.name)):
                doc = (ast.get_docstring(node) or "").split("\n\n")[0].replace("\n", " ")
                cases[m.group(1)] = Case(m.group(1), path.stem, doc)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                name = getattr(target, "id", "")
                value = _literal(node.value) if node.value is not None else None
                if name == "NOT_APPLICABLE" and isinstance(value, dict):
                    not_applicable.update({tc: (path.stem, reason) for tc, reason in value.items()})
                elif name == "NOT_COVERED" and isinstance(value, dict):
                    not_applicable.update({tc: (path.stem, f"not covered: {why}") for tc, why in value.items()})
                elif name == "NOT_OVER_NETWORK" and isinstance(value, dict):
                    in_process_only.update(value)
                elif name == "KNOWN_FAILURES" and isinstance(value, dict):
                    for tc, (_, why) in value.items():
                        if tc in cases:
                            cases[tc].note = f"known failure, excluded from the check: {why}"
                        else:
                            cases.setdefault(tc, Case(tc, path.stem)).note = f"known failure: {why}"
                elif name == "REVISION_NOTE" and isinstance(value, str):
                    for tc in ("TC_IDM_10_3", "TC_IDM_10_6"):
                        if tc in cases:
                            cases[tc].note = value
    for tc, why in in_process_only.items():
        if tc not in cases:
            raise SystemExit(f"conformance_table: NOT_OVER_NETWORK names {tc}, which is no test case")
        cases[tc].note = f"not over the network: {why}"
    return cases, not_applicable


def read_results(paths: list[Path], cases: dict[str, Case]) -> None:
    """Each JUnit testcase `test_TC_X_Y_Z[kind-dut]` adds its outcome to the case."""
    for path in paths:
        for testcase in ET.parse(path).getroot().iter("testcase"):
            name = testcase.get("name", "")
            m = re.match(r"^test_(TC_[A-Za-z]+_\d+_\d+)(?:\[(\w+)-[^\]]*\])?$", name)
            if not m or m.group(1) not in cases:
                continue
            kind = m.group(2) or "inprocess"
            if testcase.find("failure") is not None or testcase.find("error") is not None:
                outcome = "fail"
            elif testcase.find("skipped") is not None:
                outcome = "skipped"
            else:
                outcome = "pass"
            cases[m.group(1)].results[kind].append(outcome)


def verdict(outcomes: list[str]) -> str:
    if not outcomes:
        return "—"
    if "fail" in outcomes:
        return f"**fail** ({outcomes.count('fail')}/{len(outcomes)})"
    if "skipped" in outcomes:
        return f"**skipped** ({outcomes.count('skipped')}/{len(outcomes)})"
    return f"pass ({len(outcomes)})"


def _order(tc: str) -> tuple:
    prefix, *numbers = tc[3:].split("_")
    return (prefix, *map(int, numbers))


def read_previous(path: Path) -> dict[str, tuple[str, str]]:
    """TC id -> (in process, over the network) cells of a table this script wrote."""
    out = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.match(r"^TC_[A-Za-z]+_\d+_\d+$", cells[0]):
            out[cells[0]] = (cells[1], cells[2])
    return out


def render(cases: dict[str, Case], not_applicable: dict[str, tuple[str, str]], sources: list[str],
           previous: dict[str, tuple[str, str]] | None = None) -> str:
    both = sorted(set(cases) & set(not_applicable))
    if both:
        raise SystemExit(f"conformance_table: {', '.join(both)} are both tested and marked not applicable")
    lines = [
        "# Conformance: the Matter certification test cases",
        "",
        "Generated by `scripts/conformance_table.py` from the conformance suite (`tests/conformance`) and",
        f"a pytest run's JUnit XML ({', '.join(sources) or 'no results given'}). Do not edit by hand.",
        "",
        "Each test case runs against one device of every type in the default home, the room-sensor node",
        "and the bridge (bridge mode), **in process** (our Interaction Model server, real messages; the",
        "unit suite) and **over the network** (`twin run` nodes in a test-created namespace, commissioned",
        "on-network by the CHIP SDK's Python controller from home-assistant-chip-core; the e2e suite).",
        "Test cases about commissioning, security, sessions, discovery and subscriptions belong to the",
        "network node and run over the network only. A count is the number of duts the case ran on;",
        "— means the case does not run that way (or the run given had no result for it). The device",
        "library's other types (one device each in a home of their own, a third `twin run` over the",
        "network) run every case in process, and over the network the cases of the clusters the",
        "library added (a note says why where one does not); python-matter-server also commissions,",
        "interviews and controls each of them (tests/e2e).",
        "",
        "| TC | in process | over the network | what is checked | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    def cell(case: Case, kind: int) -> str:
        outcomes = case.results[KINDS[kind]]
        if not outcomes and previous and case.tc in previous:
            return previous[case.tc][kind]
        return verdict(outcomes)
    for tc in sorted(cases, key=_order):
        case = cases[tc]
        lines.append(f"| {tc} | {cell(case, 0)} | {cell(case, 1)} | {case.doc} | {case.note} |")
    lines += ["", "## Not applicable", "", "| TC | reason |", "| --- | --- |"]
    for tc in sorted(not_applicable, key=_order):
        if not not_applicable[tc][1].startswith("not covered: "):
            lines.append(f"| {tc} | {not_applicable[tc][1]} |")
    lines += ["", "## Not covered yet", "",
              "Test cases of the plans that apply to what the nodes serve and are not written yet.", "",
              "| TC | why |", "| --- | --- |"]
    for tc in sorted(not_applicable, key=_order):
        if not_applicable[tc][1].startswith("not covered: "):
            lines.append(f"| {tc} | {not_applicable[tc][1].removeprefix('not covered: ')} |")
    counts = defaultdict(int)
    for case in cases.values():
        for kind in range(len(KINDS)):
            v = cell(case, kind)
            counts[v.split(" ")[0].strip("*") if v != "—" else "not run"] += 1
    lines += ["", f"Totals over both kinds: {dict(sorted(counts.items()))}; "
              f"{len(cases)} test cases, {len(not_applicable)} not applicable or not covered yet.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("junit", nargs="*", type=Path, help="JUnit XML files of pytest runs of tests/conformance")
    parser.add_argument("-o", "--output", default=str(OUT), help="where to write (- for stdout)")
    parser.add_argument("--previous", type=Path, help="a table this script wrote: results the runs given lack "
                        "are kept from it")
    args = parser.parse_args(argv)
    missing = [str(p) for p in [*args.junit, *([args.previous] if args.previous else [])] if not p.is_file()]
    if missing:
        print(f"conformance_table: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    cases, not_applicable = read_suite()
    try:
        read_results(args.junit, cases)
    except ET.ParseError as err:
        print(f"conformance_table: not JUnit XML: {err}", file=sys.stderr)
        return 2
    previous = read_previous(args.previous) if args.previous else None
    sources = [p.name for p in args.junit] + ([f"earlier results from {args.previous.name}"] if previous else [])
    text = render(cases, not_applicable, sources, previous)
    if args.output == "-":
        print(text)
    else:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)
        print(f"wrote {args.output}: {len(cases)} test cases, {len(not_applicable)} not applicable or not covered yet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
