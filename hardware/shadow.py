"""Shadow (bound, mode `shadow`): calls to a real device are also sent to its twin, and the
cluster's attributes compared `shadow.compare_after` seconds later; differences are
`divergence` events (see hardware/session.py)."""
from __future__ import annotations

import threading
from typing import Any

from bridge.backend import AttributeKey, ToolError
from bridge.tools import call_tool, parse_args
from hardware.coupling import NOT_COUPLED
from twin.tool_arguments import Arguments


class Shadowing:
    """Part of LabSession (hardware/session.py): shadow (bound, mode `shadow`)."""

    @staticmethod
    def _target(tool: str, args: Any) -> Arguments | None:
        """A call's arguments as its tool's model, validated once per lab call; None when the
        tool refuses them (call_tool answers that, and the call reaches no device)."""
        try:
            return parse_args(tool, args)
        except Exception:  # noqa: BLE001 - refused before reaching any device
            return None

    def _touches_real(self, tool: str, target: Arguments | None) -> bool:
        """Whether a call (its `_target`) reaches a real device or a room with real sensors."""
        if target is None:
            return False
        if getattr(target, "device_id", None) in self.real:
            return True
        room = getattr(target, "room_id", None)
        return room is not None and (room in self._real_rooms or tool == "get_room_devices")

    def _shadow(self, step: int, tool: str, args: dict[str, Any], target: Arguments | None,
                real: dict[str, Any]) -> None:
        device_id = getattr(target, "device_id", None)
        if device_id is None or self.mode(device_id) != "shadow":
            return
        assert self.twin is not None
        with self.twin.lock:
            self.twin.catch_up()
            twin = call_tool(self.twin.backend, tool, args, parsed=target)
        if real.get("ok") != twin.get("ok") or (not real.get("ok") and real["error"]["code"] != twin["error"]["code"]):
            self._diverged(step, device_id, "(status)", _status(real), _status(twin), 0.0)
        cluster = real.get("cluster") or twin.get("cluster") or getattr(target, "cluster_id", None)
        delay = self.lab.spec.shadow.compare_after
        timer = threading.Timer(delay, self._compare, (step, device_id, str(cluster), delay))
        timer.daemon = True
        timer.start()

    def _compare(self, step: int, device_id: str, cluster: str, delay: float) -> None:
        """Real vs twin, every attribute of `cluster` both have."""
        assert self.backend is not None and self.twin is not None
        try:
            real = self.backend.read_all_attributes(device_id)
        except ToolError as err:
            self._event("error", device_id, {"shadow_step": step, "message": err.message})
            return
        with self.twin.lock:
            self.twin.catch_up()
            twin = self.twin.backend.read_all_attributes(device_id)

        def of_cluster(values: dict[str, Any]) -> dict[AttributeKey, Any]:
            keys = {AttributeKey.parse(k): v for k, v in values.items()}
            return {k: v for k, v in keys.items() if k.cluster == cluster}
        real_values, twin_values = of_cluster(real), of_cluster(twin)
        tolerance = self.lab.spec.shadow.tolerance
        for key in sorted(real_values.keys() & twin_values.keys()):
            if key.attribute in NOT_COUPLED:
                continue
            if values_differ(real_values[key], twin_values[key], tolerance):
                self._diverged(step, device_id, f"{key.cluster}.{key.attribute}", real_values[key],
                               twin_values[key], delay)

    def _diverged(self, step: int, device_id: str, what: str, real: Any, twin: Any, after: float) -> None:
        entry = {"step": step, "device": device_id, "attribute": what, "real": real, "twin": twin,
                 "after_s": after}
        self.divergences.append(entry)
        self.log(f"DIVERGENCE step {step} {device_id} {what}: real {real!r} twin {twin!r} after {after:g} s")
        self._event("divergence", device_id, entry)


def dig(value: Any, path: str) -> Any:
    """`a.b.0.c` inside a JSON result; KeyError when absent."""
    for part in path.split("."):
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise KeyError(path)
    return value


def values_differ(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
            or not isinstance(b, (int, float)):
        return a != b
    return abs(a - b) > tolerance


def _status(result: dict[str, Any]) -> str:
    return "SUCCESS" if result.get("ok") else result["error"]["code"]
