"""Coupling (bound, mode `couple`): the real devices' attribute reports, from
python-matter-server's subscription, stored into their twin devices' cluster servers, and
the nodes' availability (see hardware/session.py)."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from bridge.matter_values import attribute_name, cluster_name, decode
from clusters.values import from_json


class Coupling:
    """Part of LabSession (hardware/session.py): coupling (bound, mode `couple`)."""

    def _subscribe(self, client: Any) -> None:
        """On the connection's loop: every attribute of each real device's node reports here."""
        from matter_server.common.models import EventType
        for device_id, node_id in self.node_ids.items():
            endpoint = self.real[device_id].endpoint
            try:
                paths = list(client.get_node(node_id).node_data.attributes)
            except Exception:  # noqa: BLE001 - a node the server lost: recorded, not fatal
                self._event("node_unavailable", device_id, {"node_id": node_id, "why": "unknown to the server"})
                continue
            for path in paths:
                ep = int(path.split("/")[0])
                if ep == 0 or (endpoint is not None and ep != endpoint):
                    continue
                client.subscribe_events(self._reporter(device_id, path), EventType.ATTRIBUTE_UPDATED,
                                        node_id, path)
            client.subscribe_events(self._node_watcher(device_id), EventType.NODE_UPDATED, node_id)
            client.subscribe_events(self._node_watcher(device_id), EventType.NODE_REMOVED, node_id)
            client.subscribe_events(self._matter_event(device_id), EventType.NODE_EVENT, node_id)

    def _reporter(self, device_id: str, path: str) -> Callable[[Any, Any], None]:
        ep, cid, aid = (int(p) for p in path.split("/"))
        cluster, attribute = cluster_name(cid), attribute_name(cid, aid)

        def on_report(event: Any, raw: Any) -> None:
            try:
                value = decode(cid, aid, raw, path, strict=False)
                self.last_real.setdefault(device_id, {})[f"{cluster}.{attribute}"] = value
                if self.recorder is not None:
                    self.recorder.report(time.time(), self._tick(), "real", device_id, ep, cluster,
                                         attribute, value)
                self._publish("lab.real", {"device": device_id, "endpoint": ep, "key": f"{cluster}.{attribute}",
                                           "value": value})
                if self.mode(device_id) == "couple":
                    self._couple(device_id, cluster, attribute, value)
            except Exception as err:  # noqa: BLE001 - a report we cannot use is recorded
                self._event("coupling_error", device_id, {"path": path, "message": str(err)})
        return on_report

    def _node_watcher(self, device_id: str) -> Callable[[Any, Any], None]:
        def on_node(event: Any, node: Any) -> None:
            available = bool(getattr(node, "available", False))
            if available != self.available.get(device_id):
                self.available[device_id] = available
                kind = "node_available" if available else "node_unavailable"
                self.log(f"{device_id}: {'back' if available else 'gone (unavailable)'}")
                self._event(kind, device_id, {"node_id": self.node_ids[device_id], "event": str(event)})
        return on_node

    def _matter_event(self, device_id: str) -> Callable[[Any, Any], None]:
        def on_event(event: Any, data: Any) -> None:
            # python-matter-server's MatterNodeEvent is a dataclass of JSON-ready fields.
            detail = dataclasses.asdict(data) if dataclasses.is_dataclass(data) else data
            self._event("matter_event", device_id, detail, source="real")
        return on_event

    def _couple(self, device_id: str, cluster: str, attribute: str, value: Any) -> None:
        """Store a real device's reported value into its twin device's cluster server."""
        if attribute in NOT_COUPLED or cluster in NOT_COUPLED_CLUSTERS or self.twin is None:
            return
        device = self.twin.home.devices[device_id]
        for endpoint in device.endpoints.values():
            server = next((s for s in endpoint.servers.values() if s.name == cluster), None)
            if server is None or attribute not in server.attribute_names():
                continue
            try:
                typed = from_json(server.attribute_class(attribute).attribute_type.Type, value,
                                  f"{cluster}.{attribute}")
            except Exception as err:  # noqa: BLE001 - recorded, the rest still couples
                self._event("coupling_error", device_id, {"attribute": f"{cluster}.{attribute}",
                                                          "value": value, "message": str(err)})
                return
            with self.twin.lock:
                self.twin.catch_up()
                server.set(attribute, typed)
            return


#: Attributes the twin derives from its room (or that describe the node, not its state):
#: never overwritten by a real device's reports.
NOT_COUPLED = frozenset({"MeasuredValue", "MinMeasuredValue", "MaxMeasuredValue", "Tolerance",
                         "LocalTemperature", "OutdoorTemperature", "RemainingTime"})


NOT_COUPLED_CLUSTERS = frozenset({"Descriptor", "BasicInformation", "Identify", "Groups",
                                  "ScenesManagement", "FixedLabel", "UserLabel"})
