"""Acceptance, multi-admin, inside a namespace this test creates: python-matter-server
commissions a twin node and opens an enhanced commissioning window on it
(AdministratorCommissioning.OpenCommissioningWindow); the matter.js controller commissions
through that window; both receive subscription reports of a change made on the twin side;
RemoveFabric by matter.js (decommission of its own fabric) leaves python-matter-server
working, and the window and fabric count on the node are as the spec says."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_twin import twin_lab
from mjs_controller import MatterJsController

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

MODULE = "test_e2e_multi_admin"
HOME = """\
name: multi-admin test
seed: 12
rooms:
  - id: kitchen
    devices:
      - {id: lamp, type: on_off_light, name: Shared Lamp}
"""


async def commission_and_open_window(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    (code,) = [row for row in (await twin.get("/codes"))["codes"] if row["device"] == "lamp"]
    node = await client.commission_with_code(code["qr_code"], network_only=True)
    window = await client.open_commissioning_window(node.node_id)
    return {"node_id": node.node_id, "manual_code": window.setup_manual_code, "passcode": window.setup_pin_code}


async def fabrics_and_report(client: Any, twin: Any, node_id: int) -> dict[str, Any]:
    """The node's fabrics as python-matter-server reads them, then a twin-side change and
    whether its report arrived (the caller checks matter.js's side)."""
    from chip.clusters import Objects as Clusters
    out: dict[str, Any] = {}
    # python-matter-server reads Fabrics unfiltered: every fabric's entry, as the SDK answers it.
    out["fabrics"] = sorted(f.fabric_index for f in await client.get_matter_fabrics(node_id))
    count = f"0/{Clusters.OperationalCredentials.id}/" \
            f"{Clusters.OperationalCredentials.Attributes.CommissionedFabrics.attribute_id}"
    out["commissioned fabrics"] = (await client.read_attribute(node_id, count)).get(count)
    path = f"1/{Clusters.OnOff.id}/{Clusters.OnOff.Attributes.OnOff.attribute_id}"
    out["before"], out["reports"] = await twin.toggle_reported(client, node_id, "lamp", path)
    # And a command from this controller still works.
    await client.send_device_command(node_id, 1, Clusters.OnOff.Commands.Toggle())
    out["after toggle"] = await twin.on_off("lamp")
    return out


def test_a_second_admin_joins_through_an_enhanced_window_and_the_first_survives_its_leaving(tmp_path: Path):
    (tmp_path / "home.yaml").write_text(HOME)
    with twin_lab(tmp_path, "ma", "--home", str(tmp_path / "home.yaml")) as lab:
        first = lab.call(MODULE, "commission_and_open_window", None)
        assert len(first["manual_code"]) == 11 and first["passcode"], first
        controller = MatterJsController(lab.ns, tmp_path)
        try:
            node = controller.request("commission", pairingCode=first["manual_code"])
            assert node["vendorName"] == "matter-twin", node
            now = controller.request("watch", endpoint=1, cluster="OnOff", attribute="onOff")

            both = lab.call(MODULE, "fabrics_and_report", first["node_id"])
            print(json.dumps(both, indent=1))
            assert both["commissioned fabrics"] == 2 and both["fabrics"] == [1, 2], both   # two admins
            assert both["reports"] and both["reports"][-1] == (not both["before"]), both
            assert both["before"] == now
            # matter.js heard the twin-side change and python-matter-server's Toggle after it.
            assert controller.wait_report(lambda r: r["value"] == (not now)) is not None, controller.reports
            assert controller.wait_report(lambda r: r["value"] == both["after toggle"] and
                                          controller.reports.index(r) > 0) is not None, controller.reports
            # matter.js reads too, while both are on the node.
            assert controller.request("read", endpoint=1, cluster="OnOff", attribute="onOff") == \
                [{"value": both["after toggle"]}]

            # matter.js leaves (RemoveFabric of its own fabric): python-matter-server carries on.
            controller.request("decommission")
            time.sleep(1)
            after = lab.call(MODULE, "fabrics_and_report", first["node_id"])
            print(json.dumps(after, indent=1))
            assert after["commissioned fabrics"] == 1 and after["fabrics"] == [1], after
            assert after["reports"] and after["reports"][-1] == (not after["before"]), after
            assert after["after toggle"] == after["before"]                # Off/On by the tool, then Toggle back
        finally:
            controller.close()
        log = (tmp_path / "twin.log").read_text()
        assert log.count("lamp: PASE session") == 2        # the first commissioning and the enhanced window
