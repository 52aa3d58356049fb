"""Tool calls per second: the agent-facing tool API on the twin in process, the default home.

    python bench/bench_tools.py [--calls 20000]

Times `call_tool(TwinBackend(home), ...)` for three calls an agent makes most, each --calls
times on one home: execute_command (OnOff.Toggle on a light), write_attribute
(LevelControl.OnLevel) and get_attribute (OnOff.OnOff). CPU time of this process (one core),
so other load on the machine moves the figure less than wall time would. Prints one markdown
table: microseconds per call and calls per second.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge.tools import Session, call_tool  # noqa: E402
from bridge.twin_backend import TwinBackend  # noqa: E402
from twin.home import Home  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    calls = parser.parse_args().calls
    home = Home.default()
    light = next(d.id for d in home.devices.values() if d.type.key == "dimmable_light")
    backend = TwinBackend(home)
    cases = {
        "execute_command OnOff.Toggle": ("execute_command", {"device.id": light, "endpoint.id": 1,
                                                             "cluster.id": "OnOff", "command.id": "Toggle",
                                                             "args": {}}),
        "write_attribute LevelControl.OnLevel": ("write_attribute", {"device.id": light, "endpoint.id": 1,
                                                                     "cluster.id": "LevelControl",
                                                                     "attribute.id": "OnLevel", "value": 200}),
        "get_attribute OnOff.OnOff": ("get_attribute", {"device.id": light, "endpoint.id": 1,
                                                        "cluster.id": "OnOff", "attribute.id": "OnOff"}),
    }
    print("| call | µs per call (CPU) | calls/s |")
    print("|---|---:|---:|")
    for label, (tool, args) in cases.items():
        session = Session()
        assert call_tool(backend, tool, args, session)["ok"]
        t0 = time.process_time()
        for _ in range(calls):
            call_tool(backend, tool, args, session)
            session.history.clear()   # a long history is the session's memory, not the call's cost
        per_call = (time.process_time() - t0) / calls
        print(f"| {label} | {per_call * 1e6:,.1f} | {1 / per_call:,.0f} |")


if __name__ == "__main__":
    main()
