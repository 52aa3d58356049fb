"""HomeFlow throughput: MCTS-Flow's verified dialogues per second, and step-wise environment steps.

    python bench/bench_homeflow.py [--tasks 36] [--rollouts 24] [--steps 5000]

1. MCTS-Flow with the reference policy (scenarios/homeflow/flow.py) on the first `--tasks`
   tasks of the committed set taken round-robin over its 18 subcategories: verified SFT
   dialogues (and preference pairs) per second of CPU time in this one process (= per core),
   every record replayed afterwards (replay time reported apart).
2. Step-wise environment steps per second on one core, with the goal checked after every step:
   `HomeEnv(suite="homeflow", stepwise=True)` on a 23-device HomeMaker home; the task's goal is
   one light on, plus irrelevant-state preservation over every other device against the
   counterfactual; the steps alternate a read (get_room_states) and an OnOff toggle of a
   device the task does not target (so the preservation predicate flips and never passes,
   and the episode runs to `--steps`). Target >= 5,000.
The cost of HomeMaker homes of 10, 50 and 135 devices is bench/bench_homemaker.py's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from scenarios.gym_env import HomeEnv  # noqa: E402
from scenarios.homeflow.flow import flow, replay  # noqa: E402
from scenarios.homeflow.tasks import SUBCATEGORIES, HomeFlowTask, home_id, home_spec, load_tasks  # noqa: E402
from scenarios.smh import language as L  # noqa: E402


def round_robin(tasks: list[HomeFlowTask], n: int) -> list[HomeFlowTask]:
    by_sub = {s: [t for t in tasks if t.subcategory == s] for subs in SUBCATEGORIES.values() for s in subs}
    out: list[HomeFlowTask] = []
    k = 0
    while len(out) < n:
        for sub in by_sub:
            if k < len(by_sub[sub]) and len(out) < n:
                out.append(by_sub[sub][k])
        k += 1
    return out


def bench_flow(n: int, rollouts: int) -> dict[str, float]:
    tasks = round_robin(load_tasks(), n)
    t0 = time.process_time()
    sft, prefs = flow(tasks, 0, rollouts)
    cpu = time.process_time() - t0
    by_id = {t.id: t for t in tasks}
    t1 = time.process_time()
    replayed = sum(replay(by_id[r["task_id"]], r["messages"]) for r in sft)
    replay_cpu = time.process_time() - t1
    return {"tasks": len(tasks), "dialogues": len(sft), "pairs": len(prefs), "cpu_s": cpu,
            "dialogues_per_s": len(sft) / cpu, "replayed": replayed, "replay_ms": 1e3 * replay_cpu / max(len(sft), 1)}


def bench_steps(steps: int) -> dict[str, float]:
    home = home_id(7, 8, 23, 19)
    spec = home_spec(home)
    devices = [(d.id, d.type) for r in spec.rooms for d in r.devices]
    assert len(devices) == 23
    lights = [d for d, t in devices if t in L.LIGHT_TYPES]
    switchable = [d for d, t in devices if t in L.OP_TYPES["on"] and d != lights[0]]
    task = HomeFlowTask(id="bench-23", category="TC1", subcategory="clear", tier="medium", home=home,
                        query=f"Turn on the {lights[0]}.", expect="act",
                        goal=L.predicates({"op": "on", "device": lights[0]}), targets=[lights[0]],
                        profile={}, scene={"text": "bench"}, perturbation={})
    env = HomeEnv([task], suite="homeflow", stepwise=True, max_steps=steps + 1)
    env.reset(seed=0)
    other, room = switchable[0], spec.rooms[0].id
    actions = [f"get_room_states {json.dumps({'room_id': room})}",
               "execute_command " + json.dumps({"device.id": other, "endpoint.id": 1, "cluster.id": "OnOff",
                                                "command.id": "Toggle", "args": {}})]
    t0 = time.process_time()
    for i in range(steps):
        _, _, terminated, truncated, info = env.step(actions[i % 2])
        assert not info["blocked"] and not terminated and not truncated, info
    cpu = time.process_time() - t0
    return {"devices": len(devices), "steps": steps, "steps_per_s": steps / cpu, "step_us": 1e6 * cpu / steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=36)
    parser.add_argument("--rollouts", type=int, default=24)
    parser.add_argument("--steps", type=int, default=5000)
    args = parser.parse_args()
    steps = bench_steps(args.steps)
    print(f"step-wise env, {steps['devices']}-device home, goal checked every step: "
          f"{steps['steps_per_s']:,.0f} steps/s per core ({steps['step_us']:.0f} µs a step)")
    made = bench_flow(args.tasks, args.rollouts)
    print(f"MCTS-Flow, reference policy, {made['tasks']} tasks x {args.rollouts} rollouts: "
          f"{made['dialogues']} verified "
          f"dialogues and {made['pairs']} pairs in {made['cpu_s']:.1f} s CPU = {made['dialogues_per_s']:.1f} "
          f"dialogues/s per core; {made['replayed']}/{made['dialogues']} replay ({made['replay_ms']:.0f} ms each)")


if __name__ == "__main__":
    main()
