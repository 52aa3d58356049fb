"""Check-In messages of a sleepy device over the network (Core spec 4.20), in a namespace this module
creates: python-matter-server commissions a battery contact sensor (a Long Idle Time ICD: it
operates as LIT once a client registers, which its subscriber hears) and registers a Check-In client
whose monitored subject is the controller itself (IcdManagement.RegisterClient, with a key). The
client is a UDP socket here that advertises its operational name (`<CFID>-<node id>`) over DNS-SD,
as a controller does. While the controller's subscription lives, no Check-In comes; a reboot ends
the subscription, and the device's next active mode sends one: an unsecured ICD_CheckIn message
whose payload opens with the registered key (opened here from the spec's recipe with plain
primitives) and carries a counter above the one RegisterClient answered and the ActiveModeThreshold.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import socket
import time
from typing import Any

import pytest
from e2e_twin import twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server

MODULE = "test_e2e_icd_checkin"
HOME = """
name: check-in e2e
seed: 5
rooms:
  - id: hall
    devices:
      - {id: door_contact, type: contact_sensor, options: {slow_poll_ms: 1000, lit_slow_poll_ms: 2000, idle_mode_s: 2}}
"""
KEY = bytes.fromhex("00112233445566778899aabbccddeeff")
CLIENT_NODE_ID = 0x1CC1E47   # the Check-In client's operational node id (not the controller's)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("checkin")
    (workdir / "home.yaml").write_text(HOME)
    with twin_lab(workdir, "ci", "--home", str(workdir / "home.yaml"), "--open-windows", "all-qr") as the_lab:
        yield the_lab


def _controller_node_id(node: Any) -> int:
    """The controller's node id: the subject of the Administer entry commissioning wrote."""
    for entry in node.node_data.attributes.get("0/31/0") or []:
        subjects = entry.get("3") if isinstance(entry, dict) else getattr(entry, "subjects", None)
        if subjects:
            return int(subjects[0])
    raise AssertionError("no ACL subject on the commissioned node")


def _open(payload: bytes) -> tuple[int, bytes]:
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM
    nonce = payload[:13]
    plain = AESCCM(KEY, tag_length=16).decrypt(nonce, payload[13:], b"")
    assert hmac.new(KEY, plain[:4], hashlib.sha256).digest()[:13] == nonce
    return int.from_bytes(plain[:4], "little"), plain[4:]


async def _receive(sock: socket.socket, seconds: float) -> bytes | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return sock.recv(2048)
        except BlockingIOError:
            await asyncio.sleep(0.05)
    return None


async def check_in(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    from chip.clusters import Objects as C
    from test_e2e_matter_server import HTTP_URL
    from zeroconf import ServiceInfo
    from zeroconf.asyncio import AsyncZeroconf

    from matter_protocol.mdns import OPERATIONAL_TYPE, operational_instance
    from matter_protocol.message import MessageHeader, PayloadHeader
    from twin.node.advertiser import interface_addresses
    out: dict[str, Any] = {}
    code = next(r for r in (await twin.get("/codes"))["codes"] if r["device"] == "door_contact")["qr_code"]
    node_id = (await client.commission_with_code(code, network_only=True)).node_id
    for _ in range(300):
        if client.get_node(node_id).available:
            break
        await asyncio.sleep(0.1)
    controller = _controller_node_id(client.get_node(node_id))
    cfid = int(client.server_info.compressed_fabric_id).to_bytes(8, "big")
    # The client: a socket, findable by operational discovery of its node id on the fabric.
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(("::", 0))
    sock.setblocking(False)
    zc = AsyncZeroconf()
    info = ServiceInfo(OPERATIONAL_TYPE, f"{operational_instance(cfid, CLIENT_NODE_ID)}.{OPERATIONAL_TYPE}",
                       port=sock.getsockname()[1], parsed_addresses=interface_addresses(),
                       server="checkin-client.local.", properties={})
    await zc.async_register_service(info)
    try:
        ICD = C.IcdManagement
        answer = await client.send_device_command(node_id, 0, ICD.Commands.RegisterClient(
            checkInNodeID=CLIENT_NODE_ID, monitoredSubject=controller, key=KEY,
            clientType=ICD.Enums.ClientTypeEnum.kPermanent))
        out["registered"] = int(answer["ICDCounter"] if isinstance(answer, dict) else answer.ICDCounter)
        # subscribed: idle modes pass without a Check-In
        out["while subscribed"] = await _receive(sock, 4.5)
        # a client is registered: the LIT ICD operates as LIT, and its subscriber heard so
        node = client.get_node(node_id)
        out["FeatureMap"] = node.get_attribute_value(0, ICD.id, ICD.Attributes.FeatureMap.attribute_id)
        out["OperatingMode"] = node.get_attribute_value(0, ICD.id, ICD.Attributes.OperatingMode.attribute_id)
        async with twin.http.post(HTTP_URL + "/faults", json={"id": "boot", "device": "door_contact",
                                                              "kind": "reboot", "duration": 1}) as response:
            assert (await response.json())["ok"]
        datagram = await _receive(sock, 30)
        assert datagram is not None, "no Check-In within 30 s of the reboot"
        header, offset = MessageHeader.decode(datagram)
        payload_header, start = PayloadHeader.decode(datagram[offset:])
        out["session_id"] = header.session_id
        out["opcode"] = (payload_header.protocol_id, payload_header.opcode, payload_header.needs_ack)
        out["counter"], app_data = _open(datagram[offset + start:])
        out["active_mode_threshold"] = int.from_bytes(app_data, "little")
        out["ICDCounter"] = (await twin.tool("get_attribute", {
            "device.id": "door_contact", "endpoint.id": 0, "cluster.id": "IcdManagement",
            "attribute.id": "ICDCounter"}))["value"]
    finally:
        await zc.async_unregister_service(info)
        await zc.async_close()
        sock.close()
    return out


def test_a_registered_client_without_a_subscription_gets_a_check_in(lab):
    got = lab.call(MODULE, "check_in", None, timeout=300)
    print(got)
    assert got["while subscribed"] is None
    assert got["FeatureMap"] == 0b111 and got["OperatingMode"] == 1        # CIP, UAT, LITS; operating as LIT
    assert got["session_id"] == 0                                   # unsecured
    assert got["opcode"] == (0x0000, 0x50, False)                   # Secure Channel ICD_CheckIn, no ack asked
    assert got["counter"] > got["registered"]
    assert got["counter"] <= got["ICDCounter"]
    assert got["active_mode_threshold"] == 300
    assert "Check-In sent to client 0x1cc1e47" in lab.logs()
