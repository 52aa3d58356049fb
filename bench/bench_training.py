"""Training throughput: gymnasium steps per second, resets by fork, and Ray against the local runner.

    python bench/bench_training.py [--steps 5000] [--ray-episodes 600]

1. Environment steps per second on one core for "one tool call, then advance 60 s" on the
   default home: `HomeEnv(advance_seconds=60)` over an episode whose home is the
   default home; the call alternates get_room_states and an OnOff toggle. Target >= 5,000.
2. Reset cost: `Home.fork()` (what every reset does) of the default home and of a generated
   135-device home. Forks copy devices only when touched (copy on write), so the deferred
   work is shown too: reset + one step (a tool call, then 60 s), and a fork that touches
   every device (what the fork alone cost before copy on write).
3. The reference run of `--ray-episodes` episodes: thread-pool runner vs a local Ray with 1 and
   2 workers; per-episode overhead of Ray against the local runner (Ray's start-up reported
   apart), and whether results.jsonl sorted is byte-identical.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from scenarios.gym_env import HomeEnv  # noqa: E402
from scenarios.runner import RESULTS, make_agent, make_judge, run, start_ray  # noqa: E402
from scenarios.simuhome.schema import DEFAULT_EPISODES, Episode, InitialState, load_episodes  # noqa: E402
from twin.generator import generate_home  # noqa: E402
from twin.schema import HomeSpec, parse_file  # noqa: E402


def default_home_episode(spec: HomeSpec | None = None) -> Episode:
    spec = spec or parse_file(Path(__file__).resolve().parents[1] / "twin" / "default_home.yaml")
    return Episode(id="default-home", category="QT1-F", query_type="QT1", feasible=True,
                   query="How warm is the living room?", initial=InitialState(home=spec, start_time=spec.start_time),
                   goals=[{"type": "room_state", "room_id": "living_room", "state": "temperature", "value": 0.0}])


def bench_steps(steps: int) -> None:
    env = HomeEnv([default_home_episode()], max_steps=steps + 1, advance_seconds=60)
    env.reset(seed=0)
    actions = ['get_room_states {"room.id": "living_room"}',
               'execute_command {"device.id": "living_room_light", "endpoint.id": 1, "cluster.id": "OnOff", '
               '"command.id": "Toggle", "args": {}}']
    t0 = time.process_time()
    for i in range(steps):
        env.step(actions[i % 2])
    cpu = time.process_time() - t0
    print(f"gymnasium: {steps} steps (one tool call + 60 s of virtual time each) on the default home "
          f"({len(env._attempt.home.devices)} devices): "
          f"{steps / cpu:,.0f} steps/s per core")


def cpu_ms(run: Callable[[], object], rounds: int) -> float:
    t0 = time.process_time()
    for _ in range(rounds):
        run()
    return (time.process_time() - t0) / rounds * 1000


def bench_fork(rounds: int = 100) -> None:
    gc.collect()   # the steps bench's garbage is not the forks' to collect
    for label, spec in (("the default home", None), ("a generated home", generate_home(1, 30, 135))):
        env = HomeEnv([default_home_episode(spec)], max_steps=10, advance_seconds=60)
        env.reset(seed=0)
        home = env._attempt.start
        assert home is not None
        home.advance(60)
        light = next(d.id for d in home.devices.values() if d.type.key == "on_off_light")
        toggle = "execute_command " + json.dumps({"device.id": light, "endpoint.id": 1, "cluster.id": "OnOff",
                                                  "command.id": "Toggle", "args": {}})
        fork = cpu_ms(home.fork, rounds)
        every = cpu_ms(lambda: list(home.fork().devices.values()), rounds)  # noqa: B023 - run right here
        reset_step = cpu_ms(lambda: (env.reset(seed=0), env.step(toggle)), rounds)  # noqa: B023
        print(f"reset by fork, {label} ({len(home.devices)} devices): Home.fork() {fork:.2f} ms CPU; "
              f"a fork touching every device {every:.2f} ms; reset + one step (toggle a light, "
              f"advance 60 s) {reset_step:.2f} ms")


def bench_ray(count: int) -> None:
    episodes = load_episodes(DEFAULT_EPISODES)[:count]
    factory, judge = (lambda: make_agent("reference")), make_judge("rule")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        run(episodes, factory, judge, out / "local", workers=2, progress=False)
        local = time.perf_counter() - t0
        print(f"local runner, 2 threads: {count} episodes in {local:.1f} s ({local / count * 1000:.1f} ms/episode)")
        ray = None
        for workers in (1, 2):
            if ray is not None:
                ray.shutdown()
            t0 = time.perf_counter()
            ray = start_ray("local", workers)
            ray.get([ray.remote(lambda: 1).remote() for _ in range(workers)])   # workers up
            started = time.perf_counter() - t0
            t0 = time.perf_counter()
            run(episodes, factory, judge, out / f"ray{workers}", workers=workers, progress=False, ray_address="local")
            took = time.perf_counter() - t0
            same = sorted((out / "local" / RESULTS).read_text().splitlines()) == \
                sorted((out / f"ray{workers}" / RESULTS).read_text().splitlines())
            print(f"Ray, {workers} worker(s): start {started:.1f} s, then {count} episodes in {took:.1f} s "
                  f"({took / count * 1000:.1f} ms/episode, {(took - local) / count * 1000:+.1f} ms/episode "
                  f"vs local); results identical: {same}")
        if ray is not None:
            ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--ray-episodes", type=int, default=600, help="0: skip the Ray part")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cpu(s)")
    bench_steps(args.steps)
    bench_fork()
    if args.ray_episodes:
        bench_ray(args.ray_episodes)


if __name__ == "__main__":
    main()
