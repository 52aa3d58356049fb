"""Steps of TC_ACL / TC_ACE that run inside the controller process (chip_controller.py), called
from test_tc_acl.py as `lab.controller.call("acl_controller:NAME", ...)`: event reads with their
numbers and statuses, and controllers of fabric 1 that hold CASE Authenticated Tags."""
from __future__ import annotations

from typing import Any


async def read_events(c: Any, node_id: int, event: Any, event_min: int = 0) -> list[tuple[int | None, int, Any]]:
    """The node's records of one event on endpoint 0 from number `event_min` (fabric filtered):
    [(event number, status, data)]; a path the controller may not read is one (None, status, None)."""
    records = await c.dev.ReadEvent(node_id, [(0, event, 0)], eventNumberFilter=event_min or None,
                                    fabricFiltered=True)
    return [(record.Header.EventNumber if record.Header else None, int(record.Status), record.Data)
            for record in records]


async def make_cat_controller(c: Any, name: str, node_id: int, cats: list[int]) -> int:
    """Another controller of fabric 1 (controller `name`, for the "as" op) whose NOC carries `cats`."""
    if name not in c.extra:
        c.extra[name] = c.admin.NewController(nodeId=node_id, paaTrustStorePath=c.paa_dir, catTags=cats)
    return node_id
