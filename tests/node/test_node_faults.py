"""A node's link under faults (twin/node/faults.py), sans-IO: drops while offline or rebooting,
seeded loss, latency, PASE-only commissioning faults, and retransmission counting; and the
live-injection HTTP routes (matter_twin/http_faults.py) and `twin run --faults` errors."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from clusters.status import MatterError, Status
from matter_protocol.message import MessageHeader, PayloadHeader, ProtocolId, SecureChannelOpcode
from matter_twin.cli import app as cli_app
from matter_twin.http import create_app
from twin.faults import parse_fault
from twin.home import Home
from twin.node.commissioning import NodeCommissioning
from twin.node.credentials import DeviceCredentials
from twin.node.faults import FaultTriggers, LinkFaults, trigger_code

LIGHT = "kitchen_light"


def _datagram(counter: int, session_id: int = 7, opcode: int = 0x08, protocol: int = ProtocolId.INTERACTION_MODEL,
              source: int | None = None) -> bytes:
    header = MessageHeader(session_id=session_id, message_counter=counter, source_node_id=source)
    payload = PayloadHeader(exchange_id=1, protocol_id=protocol, opcode=opcode, initiator=True, needs_ack=True)
    return header.encode() + payload.encode() + b"\x15\x18"


def _pase(counter: int) -> bytes:
    return _datagram(counter, session_id=0, opcode=SecureChannelOpcode.PBKDFParamRequest,
                     protocol=ProtocolId.SECURE_CHANNEL, source=0x1234)


def _link(*faults: dict) -> tuple[Home, LinkFaults]:
    home = Home.default(seed=1)
    for fault in faults:
        home.faults.add(parse_fault(fault))
    return home, LinkFaults(home.faults, LIGHT, home.seed)


def test_no_fault_passes_everything_at_once_and_counts_retransmissions():
    _, link = _link()
    assert [link.verdict(_datagram(n), outbound=False) for n in (1, 2, 2, 3)] == [0, 0, 0, 0]
    assert link.verdict(_datagram(9), outbound=True) == 0
    assert link.verdict(_datagram(9), outbound=True) == 0
    assert link.counts["retransmissions in"] == 1 and link.counts["retransmissions out"] == 1
    assert link.counts["received"] == 4 and link.counts["sent"] == 2


def test_retransmission_memory_stays_small_however_long_the_link_runs():
    _, link = _link()
    for n in range(10_000):            # hours of keepalives on one node's link
        link.verdict(_datagram(n), outbound=True)
        link.verdict(_datagram(n), outbound=False)
    assert all(len(seen) <= 64 for seen in link._seen.values())
    link.verdict(_datagram(9_990), outbound=True)      # a recent one sent again: still recognised
    assert link.counts["retransmissions out"] == 1


def test_offline_and_reboot_drop_both_ways_until_recovery():
    home, link = _link({"device": LIGHT, "kind": "offline", "at": 1, "duration": 2},
                       {"device": LIGHT, "kind": "reboot", "at": 5, "duration": 1})
    assert link.verdict(_datagram(1), False) == 0
    home.advance(1)
    assert link.verdict(_datagram(2), False) is None and link.verdict(_datagram(3), True) is None
    home.advance(2)
    assert link.verdict(_datagram(4), False) == 0
    home.advance(2)
    assert link.verdict(_datagram(5), True) == 0        # rebooting: the node's last turn (ShutDown)
    link.boots += 1                                      # the manager: the last turn is over
    assert link.verdict(_datagram(6), False) is None
    home.advance(1)
    assert link.verdict(_datagram(7), False) == 0
    assert link.counts["dropped in"] == 2 and link.counts["dropped out"] == 1


def test_loss_is_seeded_and_near_its_probability():
    def drops() -> list[bool]:
        _, link = _link({"device": LIGHT, "kind": "loss", "severity": 0.3})
        return [link.verdict(_datagram(n), n % 2 == 0) is None for n in range(2000)]
    first = drops()
    assert first == drops()
    assert 0.25 < sum(first) / len(first) < 0.35


def test_latency_ramps_and_commissioning_faults_touch_only_pase():
    home, link = _link({"device": LIGHT, "kind": "latency", "severity": 400, "transition": "gradual", "ramp": 10,
                        "duration": 60},
                       {"device": LIGHT, "kind": "commissioning_slow", "severity": 1000})
    home.advance(5)
    assert link.verdict(_datagram(1), False) == 200
    assert link.verdict(_pase(2), False) == 1200
    home.faults.add(parse_fault({"device": LIGHT, "kind": "commissioning_failure"}))
    assert link.verdict(_pase(3), False) is None
    assert link.verdict(_datagram(4, session_id=0, opcode=SecureChannelOpcode.CASE_Sigma1,
                                  protocol=ProtocolId.SECURE_CHANNEL, source=5), False) == 200


def test_http_inject_list_and_clear():
    home = Home.default(seed=2)
    client = TestClient(create_app(home))
    bad = client.post("/faults", json={"device": LIGHT, "kind": "loss", "severity": 3})
    assert bad.status_code == 400 and "probability" in bad.json()["error"]["message"]
    assert "\n" not in bad.json()["error"]["message"]
    assert client.post("/faults", json={"device": "nowhere", "kind": "offline"}).status_code == 400
    assert home.faults.faults == {}
    made = client.post("/faults", json={"id": "down", "device": LIGHT, "kind": "offline"}).json()
    assert made == {"ok": True, "id": "down"}
    call = client.post("/tools/get_attribute", json={"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff",
                                                     "attribute.id": "OnOff"})
    assert call.json()["error"]["code"] == "UNAVAILABLE"
    listed = client.get("/faults").json()["faults"]
    assert [(f["id"], f["level"]) for f in listed] == [("down", 1.0)]
    assert client.delete("/faults/down").json()["ok"]
    assert client.delete("/faults/nope").status_code == 404
    assert client.get("/faults").json()["faults"][0]["level"] == 0
    assert [e["event"] for e in home.events] == ["FaultStarted", "FaultEnded"]


def test_twin_run_faults_file_errors_are_one_line(tmp_path: Path):
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - {device: kitchen_light, kind: offline, at: -3}\n")
    proc = subprocess.run([sys.executable, "-m", "matter_twin.cli", "run", "--speed", "max", "--duration", "1",
                           "--faults", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "faults[0].at" in lines[0], proc.stderr


def test_twin_run_with_faults_records_them_in_the_snapshot(tmp_path: Path):
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - {device: sensors@kitchen, kind: sensor_bias, at: 10, duration: 20}\n"
                    "  - {device: sensors@kitchen, kind: sensor_noise, at: 5}\n")
    outputs = []
    for _ in range(2):
        result = CliRunner().invoke(cli_app, ["run", "--speed", "max", "--duration", "60", "--json",
                                              "--faults", str(path)])
        outputs.append(result.output)
    assert result.exit_code == 0, result.output
    assert outputs[0] == outputs[1] and '"FaultEnded"' in outputs[0]


def test_test_event_trigger_with_the_enable_key_starts_and_clears_faults(tmp_path: Path):
    home = Home.default(seed=3)
    credentials = DeviceCredentials.load_or_create(tmp_path / "dac", 0xFFF1, 0x8100, rng=random.Random(3))
    node = NodeCommissioning(tmp_path / "light", home.devices[LIGHT], credentials, 20202021, 3840,
                             random.Random(7), now_ms=lambda: 0)
    server = node.diagnostics
    server.test_events = FaultTriggers(home.faults, LIGHT)

    def trigger(key: bytes, code: int) -> Status:
        try:
            server.invoke("TestEventTrigger", {"enableKey": key, "eventTrigger": code})
        except MatterError as err:
            return err.status
        return Status.SUCCESS

    key = bytes(range(1, 17))
    offline = trigger_code("offline", 30)
    assert server.read("TestEventTriggersEnabled") is False
    assert trigger(key, offline) == Status.CONSTRAINT_ERROR              # disabled: no key configured
    home.faults.test_event_key = key
    assert server.read("TestEventTriggersEnabled") is True
    assert trigger(bytes(16), offline) == Status.CONSTRAINT_ERROR        # all zeros
    assert trigger(key[:8], offline) == Status.CONSTRAINT_ERROR          # not 16 bytes
    assert trigger(bytes(reversed(key)), offline) == Status.CONSTRAINT_ERROR
    assert trigger(key, 0x1234) == Status.INVALID_COMMAND                # not one of ours
    assert trigger(key, trigger_code("sensor_bias")) == Status.INVALID_COMMAND   # a light measures nothing
    assert home.faults.faults == {}
    assert trigger(key, offline) == Status.SUCCESS
    assert home.faults.unreachable(LIGHT) is not None
    assert trigger(key, trigger_code(None)) == Status.SUCCESS
    assert home.faults.unreachable(LIGHT) is None
    assert [e["event"] for e in home.events] == ["FaultStarted", "FaultEnded"]


class _Wire:
    """The socket side of a UdpTransport, kept in memory: what it was asked to send."""
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendto(self, data: bytes, address: object) -> None:
        self.sent.append(data)

    def is_closing(self) -> bool:
        return False


async def test_a_datagram_header_is_decoded_once_on_its_way_through_the_link(monkeypatch):
    """In: the UDP shell decodes the header once for the link and the message layer. Out: the
    layer hands the headers it sealed with to the link, which decodes nothing."""
    from matter_protocol.exchange import MessageLayer, Send
    from twin.node.transport import UdpTransport
    _, link = _link({"device": LIGHT, "kind": "latency", "severity": 0})
    node = MessageLayer(random.Random(1))
    events: list = []
    transport = UdpTransport(node, events.append)
    wire = _Wire()
    transport.connection_made(wire)
    transport.link = link
    decodes = []
    original = MessageHeader.decode.__func__
    monkeypatch.setattr(MessageHeader, "decode",
                        classmethod(lambda cls, data: decodes.append(1) or original(cls, data)))
    transport.datagram_received(_datagram(1, session_id=0, source=0x99), ("::1", 5540))
    assert len(decodes) == 1 and link.counts["received"] == 1 and events   # the layer answered (Dropped)
    ctrl = MessageLayer(random.Random(2))
    exchange = ctrl.new_exchange(ctrl.open_unsecured(("::1", 5540), 0), ProtocolId.SECURE_CHANNEL)
    (send,) = [a for a in ctrl.send(exchange, SecureChannelOpcode.PBKDFParamRequest, b"\x15\x18", 0.0)
               if isinstance(a, Send)]
    decodes.clear()
    sent = link.counts["sent"]
    transport.execute([send])
    assert decodes == [] and link.counts["sent"] == sent + 1 and wire.sent[-1] == send.data
    transport.connection_lost(None)
