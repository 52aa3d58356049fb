"""Run an agent over episodes: concurrent, resumable, with a progress bar.

Each episode runs on its own twin, rebuilt from the episode (so workers share nothing).
Results go to `<out>/results.jsonl`, one line per finished episode, appended as they finish;
a rerun with the same `out` skips episodes already there. A result line holds only what the
run decides (the twin runs in virtual time), so two runs of a deterministic agent give the
same lines; wall-clock latencies go to `<out>/timings.jsonl` beside it.

Episodes run in a thread pool, or as Ray tasks (`ray_address`: "local" starts a local Ray,
anything else is a cluster address), with identical results.
"""
from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from scenarios.agent import Agent, Serve, in_process
from scenarios.agents.react import ReActAgent
from scenarios.agents.simple import NullAgent
from scenarios.model_api import ModelAPIError
from scenarios.simuhome.evaluate import Judge, run_episode
from scenarios.simuhome.judges import LLMJudge, RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import Episode

RESULTS = "results.jsonl"
TIMINGS = "timings.jsonl"
#: Fields of a result that depend on the wall clock: kept in TIMINGS, not in RESULTS.
TIMING_FIELDS = ("latency_s",)
#: This many episodes in a row in which no reply of the model could be used stop the run.
UNUSABLE_IN_A_ROW = 3


class ModelRepliesUnusable(ModelAPIError):
    """Episode after episode, none of the model's replies held a step to take."""


def no_usable_reply(result: dict[str, Any]) -> bool:
    """A model agent's episode in which not one reply could be used: the model (or its
    protocol, --mode) is unusable, so the episode says nothing about the agent. It is not
    recorded as done: a rerun retries it."""
    return bool(result.get("replies")) and result.get("unusable_replies") == result["replies"]


def make_agent(spec: str, base_url: str | None = None, api_key: str | None = None,
               mode: str = "json") -> Agent:
    """`reference`, `null` or `openai:MODEL` (base URL and key from the arguments or the
    OPENAI_BASE_URL / OPENAI_API_KEY environment variables)."""
    if spec == "reference":
        return ReferenceAgent()
    if spec == "null":
        return NullAgent()
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not base_url and not api_key:
            raise ValueError(f"{spec} needs an API key: set OPENAI_API_KEY or --api-key (for a local "
                             "OpenAI-compatible server, --base-url URL)")
        return ReActAgent(spec[len("openai:"):], mode=mode, base_url=base_url, api_key=api_key)
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
    """Episodes with a complete result line (one cut short by a crash runs again)."""
    return {r["episode_id"] for r in _lines(out / RESULTS) if "episode_id" in r}


def run(episodes: list[Any], agent_factory: Callable[[], Agent] | None, judge: Judge | None, out: str | Path,
        workers: int = 4, max_steps: int = 30, progress: bool = True, serve: Serve = in_process,
        fatal: tuple[type[Exception], ...] = (), ray_address: str | None = None,
        run_item: Callable[[Any], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Run the episodes not yet in `out`; returns the new result records (timings included).
    `serve` is how agents reach their homes (see `run_episode`); an exception in `fatal` (the
    backend itself is broken) stops the run instead of failing one episode. With `ray_address`
    the episodes (or `run_item`'s tasks) run as Ray tasks (in process only).

    Another suite's tasks run through the same machinery with `run_item`: task -> its result
    record (with "episode_id", "success"); the agent and judge are then the caller's."""
    if ray_address and serve is not in_process:
        raise ValueError("Ray runs episodes in process only")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = finished_ids(out)
    for name in (RESULTS, TIMINGS):
        path = out / name
        if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with path.open("a", encoding="utf-8") as fh:
                fh.write("\n")  # close a line cut short by a crash, so new results start clean
    todo = [e for e in episodes if e.id not in done]
    new: list[dict[str, Any]] = []

    def record(result: dict[str, Any]) -> None:
        new.append(result)
        if no_usable_reply(result):
            return
        timing = {"episode_id": result["episode_id"], **{k: result[k] for k in TIMING_FIELDS if k in result}}
        kept = {k: v for k, v in result.items() if k not in TIMING_FIELDS}
        with (out / RESULTS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(kept, ensure_ascii=False, sort_keys=True) + "\n")
        with (out / TIMINGS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(timing, sort_keys=True) + "\n")

    results = (_on_ray(todo, agent_factory, judge, max_steps, ray_address, workers, run_item) if ray_address
               else _in_threads(todo, agent_factory, judge, max_steps, workers, serve, fatal, run_item))
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("ok {task.fields[ok]}"), TimeElapsedColumn(), disable=not progress) as bar:
        task = bar.add_task(f"{len(done)} done before; running", total=len(todo), ok=0)
        ok = unusable_in_a_row = 0
        for result in results:
            record(result)
            ok += bool(result["success"])
            bar.update(task, advance=1, ok=ok)
            unusable_in_a_row = unusable_in_a_row + 1 if no_usable_reply(result) else 0
            if unusable_in_a_row >= UNUSABLE_IN_A_ROW:
                raise ModelRepliesUnusable(f"none of the model's replies could be used in {unusable_in_a_row} "
                                           "episodes in a row (no step could be parsed): check the model and --mode")
    return new


def run_one(episode: Episode, agent_factory: Callable[[], Agent], judge: Judge, max_steps: int,
            serve: Serve = in_process, fatal: tuple[type[Exception], ...] = ()) -> dict[str, Any]:
    """One episode's record; an episode that cannot even run is a recorded failure."""
    try:
        return run_episode(episode, agent_factory(), judge, max_steps, serve=serve)
    except (ModelAPIError, *fatal):
        raise
    except Exception as exc:  # the episode itself is broken: record it, keep going
        return {"episode_id": episode.id, "category": episode.category, "success": False,
                "failures": [f"run error: {type(exc).__name__}: {exc}"], "error_type": None,
                "steps": 0, "latency_s": 0.0, "agent": getattr(agent_factory(), "name", "?")}


def _in_threads(todo: list[Any], agent_factory: Any, judge: Any, max_steps: int, workers: int, serve: Serve,
                fatal: tuple[type[Exception], ...], run_item: Callable[[Any], dict[str, Any]] | None = None
                ) -> Iterator[dict[str, Any]]:
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = [pool.submit(run_item, e) if run_item is not None else
                   pool.submit(run_one, e, agent_factory, judge, max_steps, serve, fatal) for e in todo]
        for future in as_completed(futures):
            yield future.result()
    except BaseException:   # Ctrl-C or a fatal error: the episodes not started never start
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()


def _on_ray(todo: list[Any], agent_factory: Callable[[], Agent] | None, judge: Judge | None, max_steps: int,
            address: str, workers: int, run_item: Callable[[Any], dict[str, Any]] | None = None
            ) -> Iterator[dict[str, Any]]:
    """Each episode a Ray task (`run_item`'s, shipped to the workers, for another suite's tasks).
    "local" starts a private local Ray with `workers` CPUs; any other address joins that
    cluster. At most a few tasks per CPU are in flight."""
    ray = start_ray(address, workers)
    if run_item is not None:
        one = ray.remote(num_cpus=1)(run_item)
        submit = one.remote
    else:
        episode = ray.remote(num_cpus=1)(run_one)
        agent_ref, judge_ref = ray.put(agent_factory), ray.put(judge)
        submit = lambda e: episode.remote(e, agent_ref, judge_ref, max_steps)  # noqa: E731
    pending: list[Any] = []
    queue = list(reversed(todo))
    in_flight = 4 * max(1, int(ray.available_resources().get("CPU", workers)))
    while queue or pending:
        while queue and len(pending) < in_flight:
            pending.append(submit(queue.pop()))
        ready, pending = ray.wait(pending, num_returns=1)
        try:
            result = ray.get(ready[0])
        except ray.exceptions.RayTaskError as exc:
            # A task's own error (a dead model API: ModelAPIError) stops the run as it does in
            # threads: the tasks in flight are cancelled and the cause is raised without Ray's
            # remote traceback, so the command line says it in one line.
            for ref in pending:
                ray.cancel(ref)
            if isinstance(exc.cause, Exception):
                raise exc.cause from None
            raise
        yield result


def start_ray(address: str, workers: int) -> Any:
    """Ray, started locally ("local") or joined at `address`; a clear error when it is missing."""
    try:
        import ray  # optional: the `ray` extra
    except ImportError:
        raise RuntimeError("Ray is not installed: pip install 'matter-twin[ray]'") from None
    if not ray.is_initialized():
        if address == "local":
            # Private to this machine: loopback only, no dashboard, no usage report.
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            # Ray's notice that it turned token authentication on (its default) is not for our users.
            logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                     configure_logging=False, _node_ip_address="127.0.0.1")
        else:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except Exception as exc:  # ConnectionError, ValueError, ...: one line for the user
                raise RuntimeError(f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    return ray


def load_results(out: str | Path) -> list[dict[str, Any]]:
    """Every complete result line (a line cut short by a crash is skipped), with its timing."""
    timings = {t["episode_id"]: t for t in _lines(Path(out) / TIMINGS)}
    return [{**r, **{k: v for k, v in timings.get(r.get("episode_id"), {}).items() if k in TIMING_FIELDS}}
            for r in _lines(Path(out) / RESULTS)]


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows
