"""Long fuzz campaigns over the targets of tests/fuzz/fuzz_targets.py (issue #12).

    python bench/fuzz_campaign.py                          # every target, 10^6 inputs each
    python bench/fuzz_campaign.py --inputs 100000 --targets tlv,im_server
    python bench/fuzz_campaign.py --replay fuzz-findings/tlv/ab12cd34.bin --targets tlv

Inputs come from a seeded mutator over each target's valid seeds (the same definitions the fast
suite runs under hypothesis), so a campaign with the same --seed replays exactly. Per target it
prints inputs, inputs/s and the distinct exceptions that escaped the documented error type; the
smallest input seen for each is saved under --out as <target>/<id>.bin (+ .txt with the trace).
Exit status 1 when anything escaped.
"""
from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
for folder in (TESTS / "fuzz", TESTS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from fuzz_targets import TARGETS, Target, generate  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn  # noqa: E402
from rich.table import Table  # noqa: E402


@dataclass
class Finding:
    kind: str
    message: str
    data: bytes
    trace: str
    count: int = 1


@dataclass
class Result:
    target: str
    inputs: int = 0
    seconds: float = 0.0
    findings: dict[str, Finding] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.inputs / self.seconds if self.seconds else 0.0


def signature(exc: BaseException) -> str:
    """What makes two escapes the same bug: the exception type, its message without numbers and
    quoted values, and the innermost frame in the project."""
    message = re.sub(r"0x[0-9a-fA-F]+|\d+|'[^']*'|\"[^\"]*\"|b'[^']*'", "#", str(exc))[:120]
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/fuzz_targets.py" not in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {message} @{where}"


def run_target(target: Target, inputs: int, seed: int, progress: Progress, task: int) -> Result:
    rng = random.Random(f"{seed}:{target.name}")
    result = Result(target.name)
    target.seeds()          # warm up (keys, certificates, the node) outside the timing
    target.run(target.seeds()[0])
    start = time.perf_counter()
    step = max(1, min(1000, inputs // 200))
    for n in range(1, inputs + 1):
        data = generate(target, rng)
        try:
            target.run(data)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 (counting what escapes is the point)
            key = signature(exc)
            found = result.findings.get(key)
            if found is None:
                result.findings[key] = Finding(type(exc).__name__, str(exc)[:300], data, traceback.format_exc())
            else:
                found.count += 1
                if len(data) < len(found.data):
                    found.data, found.message = data, str(exc)[:300]
        if n % step == 0 or n == inputs:
            result.inputs, result.seconds = n, time.perf_counter() - start
            progress.update(task, completed=n,
                            description=f"{target.name:15} {result.rate:8.0f}/s  escapes {len(result.findings)}")
    result.inputs, result.seconds = inputs, time.perf_counter() - start
    return result


def save(result: Result, out: Path) -> list[Path]:
    paths = []
    for key, finding in result.findings.items():
        ident = hashlib.sha1(key.encode()).hexdigest()[:10]
        folder = out / result.target
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{ident}.bin"
        path.write_bytes(finding.data)
        (folder / f"{ident}.txt").write_text(
            f"target: {result.target}\nsignature: {key}\nseen: {finding.count} times\n"
            f"input ({len(finding.data)} bytes): {finding.data!r}\n\n{finding.trace}")
        paths.append(path)
    return paths


def replay(names: list[str], files: list[str]) -> int:
    status = 0
    for file in files:
        data = Path(file).read_bytes()
        for name in names:
            try:
                TARGETS[name].run(data)
                print(f"{name} {file}: ok")
            except Exception:   # noqa: BLE001
                status = 1
                print(f"{name} {file}: escaped\n{traceback.format_exc()}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=10**6, help="inputs per target (default 10^6)")
    parser.add_argument("--targets", default="", help=f"comma-separated; default all: {','.join(TARGETS)}")
    parser.add_argument("--seed", type=int, default=0, help="mutator seed (same seed, same inputs)")
    parser.add_argument("--out", default="fuzz-findings", help="where reproducers go (default ./fuzz-findings)")
    parser.add_argument("--markdown", action="store_true", help="also print the final table as Markdown")
    parser.add_argument("--replay", nargs="+", metavar="FILE", help="run saved inputs through --targets instead")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.targets.split(",") if n.strip()] or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; accepted: {', '.join(TARGETS)}")
    if args.replay:
        return replay(names, args.replay)
    if args.inputs < 1:
        parser.error("--inputs must be at least 1")

    console = Console()
    results: list[Result] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        for name in names:
            task = progress.add_task(name, total=args.inputs)
            result = run_target(TARGETS[name], args.inputs, args.seed, progress, task)
            results.append(result)
            saved = save(result, Path(args.out))
            line = f"{name}: {result.inputs} inputs, {result.rate:.0f}/s, {len(result.findings)} distinct escapes"
            progress.console.print(line)
            for (key, finding), path in zip(result.findings.items(), saved, strict=True):
                progress.console.print(f"    {finding.count:>7} x {key}\n            reproducer: {path}")

    table = Table(title=f"fuzz campaign (seed {args.seed})")
    for column in ("target", "inputs", "inputs/s", "escapes"):
        table.add_column(column, justify="left" if column == "target" else "right")
    for r in results:
        table.add_row(r.target, f"{r.inputs:,}", f"{r.rate:,.0f}", str(len(r.findings)))
    console.print(table)
    if args.markdown:
        print("\n| target | inputs | inputs/s | escapes |\n|---|---:|---:|---:|")
        for r in results:
            print(f"| {r.target} | {r.inputs:,} | {r.rate:,.0f} | {len(r.findings)} |")
    return 1 if any(r.findings for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
