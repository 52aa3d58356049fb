"""Binding over Matter, in a namespace this module creates: python-matter-server commissions an
On/Off Light Switch and an On/Off Light as two nodes of its fabric, grants the switch's node id
Operate on the light's OnOff (an ACL entry next to its own Administer one) and writes the switch's
Binding (the light's node, endpoint 1, cluster OnOff). A hand (POST /hand) toggling the switch
then switches the light: the switch's node finds the light by operational discovery, opens CASE
to it as an initiator and invokes OnOff.Toggle, which the light's ACL lets through. The
controller reads the light's OnOff back over Matter.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from e2e_twin import twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server

MODULE = "test_e2e_binding"
HOME = """
name: binding e2e
seed: 7
rooms:
  - id: hall
    devices:
      - {id: hall_switch, type: on_off_light_switch}
      - {id: hall_light, type: on_off_light}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("binding")
    (workdir / "home.yaml").write_text(HOME)
    with twin_lab(workdir, "bd", "--home", str(workdir / "home.yaml"), "--open-windows", "all-qr") as the_lab:
        yield the_lab


def _acl_entry(entry: Any) -> dict[str, Any]:
    """An AccessControlEntryStruct as the server stores it (tags as keys) in field names."""
    get = entry.get
    return {"privilege": get("1"), "authMode": get("2"), "subjects": get("3"), "targets": get("4"),
            "fabricIndex": get("254")}


async def bound_toggle(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    from chip.clusters import Objects as C
    from test_e2e_matter_server import HTTP_URL
    codes = {r["device"]: r["qr_code"] for r in (await twin.get("/codes"))["codes"]}
    ids = {}
    for device in ("hall_switch", "hall_light"):
        ids[device] = (await client.commission_with_code(codes[device], network_only=True)).node_id
    for _ in range(300):
        if all(client.get_node(n).available for n in ids.values()):
            break
        await asyncio.sleep(0.1)
    switch, light = ids["hall_switch"], ids["hall_light"]
    acl = [_acl_entry(e) for e in client.get_node(light).node_data.attributes.get("0/31/0")]
    operate = int(C.AccessControl.Enums.AccessControlEntryPrivilegeEnum.kOperate)
    case = int(C.AccessControl.Enums.AccessControlEntryAuthModeEnum.kCase)
    acl.append({"privilege": operate, "authMode": case, "subjects": [switch],
                "targets": [{"cluster": C.OnOff.id, "endpoint": 1, "deviceType": None}],
                "fabricIndex": acl[0]["fabricIndex"]})
    out: dict[str, Any] = {"acl": await client.write_attribute(light, "0/31/0", acl)}
    out["binding"] = await client.write_attribute(switch, "1/30/0", [
        {"node": light, "endpoint": 1, "cluster": C.OnOff.id, "group": None, "fabricIndex": acl[0]["fabricIndex"]}])

    async def on_off() -> bool:
        got = await client.read_attribute(light, "1/6/0")
        return bool(got["1/6/0"] if isinstance(got, dict) else got)
    out["before"] = await on_off()
    async with twin.http.post(HTTP_URL + "/hand", json={"device": "hall_switch", "action": "toggle"}) as response:
        out["hand"] = await response.json()
    for _ in range(100):   # discovery, CASE and the invoke: a few hundred ms, with slack for a loaded host
        out["after"] = await on_off()
        if out["after"] != out["before"]:
            break
        await asyncio.sleep(0.2)
    return out


def test_a_hand_on_a_switch_bound_over_matter_toggles_the_light(lab):
    got = lab.call(MODULE, "bound_toggle", None, timeout=180)
    print(got)
    assert got["after"] != got["before"], lab.logs()
    assert [s["status"] for s in got["hand"]["sent"]] == ["QUEUED"]
    assert "bound command 0x6/0x2 to node" in lab.logs() and "status 0x0" in lab.logs()
