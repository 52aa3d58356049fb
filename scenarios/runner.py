"""Run an agent over episodes: concurrent, resumable, with a progress bar.

Each episode runs on its own twin, rebuilt from the episode (so workers share nothing).
Results go to `<out>/results.jsonl`, one line per finished episode, appended as they finish;
a rerun with the same `out` skips episodes already there.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from scenarios.agents.react import ReActAgent
from scenarios.agents.reference import ReferenceAgent
from scenarios.agents.simple import NullAgent
from scenarios.evaluate import Agent, Judge, Serve, in_process, run_episode
from scenarios.judges import LLMJudge, RuleJudge
from scenarios.schema import Episode

RESULTS = "results.jsonl"


def make_agent(spec: str, base_url: str | None = None, api_key: str | None = None,
               mode: str = "json") -> Agent:
    """`reference`, `null` or `openai:MODEL` (base URL and key from the arguments or the
    OPENAI_BASE_URL / OPENAI_API_KEY environment variables)."""
    if spec == "reference":
        return ReferenceAgent()
    if spec == "null":
        return NullAgent()
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        return ReActAgent(spec[len("openai:"):], mode=mode, base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                          api_key=api_key or os.environ.get("OPENAI_API_KEY"))
    raise ValueError(f"unknown agent {spec!r}; accepted: reference, null, openai:MODEL")


def make_judge(spec: str, base_url: str | None = None, api_key: str | None = None) -> Judge:
    """`rule` or `openai:MODEL`."""
    if spec == "rule":
        return RuleJudge()
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        return LLMJudge(spec[len("openai:"):], base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                        api_key=api_key or os.environ.get("OPENAI_API_KEY"))
    raise ValueError(f"unknown judge {spec!r}; accepted: rule, openai:MODEL")


def finished_ids(out: Path) -> set[str]:
    path = out / RESULTS
    if not path.exists():
        return set()
    done = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            done.add(json.loads(line)["episode_id"])
        except (json.JSONDecodeError, KeyError):
            continue  # a line cut short by a crash: that episode runs again
    return done


def run(episodes: list[Episode], agent_factory: Callable[[], Agent], judge: Judge, out: str | Path,
        workers: int = 4, max_steps: int = 30, progress: bool = True, serve: Serve = in_process,
        fatal: tuple[type[Exception], ...] = ()) -> list[dict[str, Any]]:
    """Run the episodes not yet in `out`; returns the new result records. `serve` is how agents
    reach their homes (see `run_episode`); an exception in `fatal` (the backend itself is broken)
    stops the run instead of failing one episode."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = finished_ids(out)
    path = out / RESULTS
    if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n")  # close a line cut short by a crash, so new results start clean
    todo = [e for e in episodes if e.id not in done]
    lock = threading.Lock()
    new: list[dict[str, Any]] = []

    def one(episode: Episode) -> dict[str, Any]:
        try:
            return run_episode(episode, agent_factory(), judge, max_steps, serve=serve)
        except fatal:
            raise
        except Exception as exc:  # the episode itself is broken: record it, keep going
            return {"episode_id": episode.id, "category": episode.category, "success": False,
                    "failures": [f"run error: {type(exc).__name__}: {exc}"], "error_type": None,
                    "steps": 0, "latency_s": 0.0, "agent": getattr(agent_factory(), "name", "?")}

    def record(result: dict[str, Any]) -> None:
        with lock, (out / RESULTS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(result, ensure_ascii=False, sort_keys=True) + "\n")
            new.append(result)

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("ok {task.fields[ok]}"), TimeElapsedColumn(), disable=not progress) as bar:
        task = bar.add_task(f"{len(done)} done before; running", total=len(todo), ok=0)
        ok = 0
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        try:
            for future in as_completed([pool.submit(one, e) for e in todo]):
                result = future.result()
                record(result)
                ok += bool(result["success"])
                bar.update(task, advance=1, ok=ok)
        except BaseException:   # Ctrl-C or a fatal error: the episodes not started never start
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    return new


def load_results(out: str | Path) -> list[dict[str, Any]]:
    """Every complete result line (a line cut short by a crash is skipped)."""
    path = Path(out) / RESULTS
    if not path.exists():
        return []
    results = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            results.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return results
