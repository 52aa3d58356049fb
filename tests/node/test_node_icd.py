"""Sleepy devices: IcdManagement (registration, ICDCounter), the node's advertised and offered
polling intervals, and the link that holds a message until the device's next poll."""
import pytest
from chip.clusters import Objects as Clusters

from clusters.base import AccessContext, current_access
from clusters.devices import create_device
from clusters.status import MatterError, Status
from matter_protocol.mdns import Operational
from twin.faults import FaultEngine
from twin.home import Home
from twin.node.core import NODE_MRP, node_mrp, session_parameters
from twin.node.faults import LinkFaults

ICD = Clusters.IcdManagement


def register(device, node_id, fabric=1, key=bytes(16), monitored=None):
    token = current_access.set(AccessContext("case", fabric, 0x99))
    try:
        return device.invoke("IcdManagement", "RegisterClient", {"checkInNodeID": node_id,
                                                                  "monitoredSubject": monitored or node_id,
                                                                  "key": key.hex(), "clientType": 0}, endpoint_id=0)
    finally:
        current_access.reset(token)


def test_battery_sensors_and_locks_are_sleepy_and_advertise_their_polling():
    sensor = create_device("c", "contact_sensor")
    mrp = node_mrp(sensor)
    assert (mrp.idle_interval_ms, mrp.active_interval_ms, mrp.active_threshold_ms) == (3000, 300, 300)
    assert Operational(port=5540, compressed_fabric_id=bytes(8), node_id=2, mrp=mrp).txt()["SII"] == "3000"
    assert session_parameters(mrp)["SESSION_IDLE_INTERVAL"] == 3000
    assert node_mrp(create_device("l", "door_lock")).idle_interval_ms == 3000
    assert node_mrp(create_device("p", "pressure_sensor")) == NODE_MRP          # mains powered
    assert node_mrp(create_device("c", "contact_sensor", sleepy=False)) == NODE_MRP
    assert node_mrp(create_device("c", "contact_sensor", slow_poll_ms=10000)).idle_interval_ms == 10000
    with pytest.raises(ValueError, match="SIT"):
        create_device("c", "contact_sensor", slow_poll_ms=60000)


def test_client_registration_is_per_fabric_and_counts():
    device = create_device("c", "contact_sensor")
    icd = device.endpoint(0).server("IcdManagement")
    assert register(device, 0x11).ICDCounter == 1
    assert register(device, 0x12).ICDCounter == 2
    with pytest.raises(MatterError) as exc:
        register(device, 0x13)                       # two slots per fabric
    assert exc.value.status == Status.RESOURCE_EXHAUSTED
    assert register(device, 0x13, fabric=2).ICDCounter == 3
    assert [(c.checkInNodeID, c.fabricIndex) for c in icd.get("RegisteredClients")] == [(0x11, 1), (0x12, 1), (0x13, 2)]
    with pytest.raises(MatterError) as exc:
        register(device, 0x14, key=bytes(3))
    assert exc.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError) as exc:          # in process there is no fabric to register on
        device.invoke("IcdManagement", "RegisterClient", {"checkInNodeID": 1, "monitoredSubject": 1,
                                                          "key": bytes(16).hex(), "clientType": 0}, endpoint_id=0)
    assert exc.value.status == Status.UNSUPPORTED_ACCESS
    icd.forget_fabric(1)
    assert [c.fabricIndex for c in icd.get("RegisteredClients")] == [2]


def test_a_message_to_a_sleeping_device_waits_for_its_next_poll():
    home = Home("h")
    home.add_room("r")
    home.add_device("c", "contact_sensor", "r")
    now = [100.0]
    link = LinkFaults(FaultEngine(home), "c", 0, poll=(3000, 300), clock=lambda: now[0])
    now[0] = 101.0
    assert link.verdict(b"", outbound=False) == pytest.approx(2000.0)      # asleep: until the poll at 103 s
    now[0] = 103.1
    assert link.verdict(b"", outbound=False) == 0.0                         # awake: within the threshold
    assert link.verdict(b"", outbound=True) == 0.0                          # it may always send
    now[0] = 110.0
    assert link.verdict(b"", outbound=False) == pytest.approx(2000.0)      # idle again: next poll at 112 s
    assert link.counts["held for poll"] == 2
    always_on = LinkFaults(FaultEngine(home), "c", 0)
    assert always_on.verdict(b"", outbound=False) == 0.0


# -- Check-In messages (Core spec 4.20) ---------------------------------------------------------
KEY = bytes(range(16))


def _open_independently(key, payload):
    """The Check-In payload opened from the spec's recipe with plain primitives, not our module."""
    import hashlib
    import hmac

    from cryptography.hazmat.primitives.ciphers.aead import AESCCM
    nonce = payload[:13]
    plain = AESCCM(key, tag_length=16).decrypt(nonce, payload[13:], b"")
    assert hmac.new(key, plain[:4], hashlib.sha256).digest()[:13] == nonce
    return int.from_bytes(plain[:4], "little"), plain[4:]


def test_check_in_payload_is_sealed_with_the_clients_key():
    from matter_protocol.checkin import open_check_in, seal_check_in
    from matter_protocol.crypto import CryptoError
    payload = seal_check_in(KEY, 0x01020304, b"\x2c\x01")
    assert len(payload) == 13 + 4 + 2 + 16
    assert _open_independently(KEY, payload) == (0x01020304, b"\x2c\x01")
    assert open_check_in(KEY, payload) == (0x01020304, b"\x2c\x01")
    with pytest.raises(CryptoError):
        open_check_in(bytes(16), payload)
    with pytest.raises(ValueError, match="16"):
        seal_check_in(bytes(3), 1)


def _session(fabric, node_id, address=("fd00::9", 5540, 0, 0), last=0.0):
    from types import SimpleNamespace
    return SimpleNamespace(fabric_index=fabric, peer_node_id=node_id, peer_cats=(), peer_address=address,
                           last_activity_ms=last)


def test_check_ins_go_to_registered_clients_without_a_subscription():
    import random
    from types import SimpleNamespace

    from matter_protocol.exchange import MessageLayer, Send
    from matter_protocol.message import MessageHeader, PayloadHeader, ProtocolId, SecureChannelOpcode
    from twin.node.checkins import CheckIns
    device = create_device("c", "contact_sensor", idle_mode_s=2)
    icd = device.endpoint(0).server("IcdManagement")
    registered = register(device, 0x11, monitored=0x77, key=KEY).ICDCounter
    fabrics = [SimpleNamespace(fabric_index=1, compressed_fabric_id=bytes.fromhex("0011223344556677"))]
    check_ins = CheckIns(device)
    # the monitored subject is subscribed on this fabric: nothing due; the clock moves an idle mode on
    subscribed = [SimpleNamespace(session=_session(1, 0x77))]
    assert check_ins.due(0.0, subscribed, [], fabrics) == []
    assert check_ins.next_ms == 2000.0 and check_ins.due(1999.0, [], [], fabrics) == []
    # the subscription is gone (or it is another fabric's): due at the next active mode
    sessions = [_session(1, 0x11, last=5.0), _session(1, 0x11, ("fd00::8", 5540, 0, 0), last=9.0), _session(2, 0x11)]
    [target] = check_ins.due(2000.0, [SimpleNamespace(session=_session(2, 0x77))], sessions, fabrics)
    assert (target.fabric_index, target.node_id, target.last_address[0]) == (1, 0x11, "fd00::8")
    assert target.compressed_fabric_id == fabrics[0].compressed_fabric_id
    layer = MessageLayer(random.Random(1))
    [send] = [a for a in check_ins.message(layer, target, ("fd00::5", 5540), 2000.0) if isinstance(a, Send)]
    assert send.address == ("fd00::5", 5540)
    header, offset = MessageHeader.decode(send.data)
    assert header.session_id == 0                                  # unsecured
    payload_header, start = PayloadHeader.decode(send.data[offset:])
    assert (payload_header.protocol_id, payload_header.opcode) == (ProtocolId.SECURE_CHANNEL,
                                                                   SecureChannelOpcode.ICD_CheckIn)
    assert not payload_header.needs_ack                            # nothing answers a Check-In
    counter, app_data = _open_independently(KEY, send.data[offset + start:])
    assert counter > registered and counter == icd.get("ICDCounter")
    assert int.from_bytes(app_data, "little") == icd.get("ActiveModeThreshold")
    assert list(layer.sessions.unsecured_sessions()) == []         # the session is not kept
    # unregistered meanwhile: nothing is sent
    token = current_access.set(AccessContext("case", 1, 0x99))
    try:
        device.invoke("IcdManagement", "UnregisterClient", {"checkInNodeID": 0x11}, endpoint_id=0)
    finally:
        current_access.reset(token)
    assert check_ins.message(layer, target, ("fd00::5", 5540), 2000.0) == []
    assert CheckIns(create_device("p", "pressure_sensor")).next_ms is None     # not an ICD
    with pytest.raises(ValueError, match="IdleModeDuration"):
        create_device("c", "contact_sensor", idle_mode_s=0)


def test_a_lit_icd_polls_long_and_advertises_it_only_while_a_client_is_registered():
    sensor = create_device("c", "contact_sensor", lit_slow_poll_ms=30000)
    icd = sensor.endpoint(0).server("IcdManagement")
    promised = []
    icd.on_stay_active = promised.append
    sit = node_mrp(sensor)
    assert (sit.idle_interval_ms, sit.icd) == (3000, 0)
    assert sit.txt()["ICD"] == "0" and sit.txt()["SII"] == "3000"     # operating as SIT: reachable at its poll
    register(sensor, 0x11)
    lit = node_mrp(sensor)
    assert (lit.idle_interval_ms, lit.icd) == (30000, 1)
    assert lit.txt()["ICD"] == "1" and "SII" not in lit.txt()         # LIT: a client waits for its Check-In
    token = current_access.set(AccessContext("case", 1, 0x99))
    try:
        sensor.invoke("IcdManagement", "StayActiveRequest", {"stayActiveDuration": 5000}, endpoint_id=0)
    finally:
        current_access.reset(token)
    assert promised == [5000]
    icd.forget_fabric(1)
    assert node_mrp(sensor).icd == 0
    assert create_device("c", "contact_sensor").endpoint(0).server("IcdManagement").icd_txt() is None   # SIT only
    for bad in (1000, 61000):                                         # below the SIT poll, beyond the idle mode
        with pytest.raises(ValueError, match="LIT polling"):
            create_device("c", "contact_sensor", lit_slow_poll_ms=bad)


def test_a_link_stays_awake_as_promised():
    home = Home("h")
    home.add_room("r")
    home.add_device("c", "contact_sensor", "r")
    now = [100.0]
    link = LinkFaults(FaultEngine(home), "c", 0, poll=(30000, 300), clock=lambda: now[0])
    link.stay_active(5000)
    now[0] = 104.0
    assert link.verdict(b"", outbound=False) == 0.0                  # within the promise: no wait
    now[0] = 120.0
    assert link.verdict(b"", outbound=False) == pytest.approx(10000.0)   # idle again: the poll at 130 s


def test_actuating_a_lit_sensor_makes_its_check_ins_due_at_once():
    from types import SimpleNamespace

    from twin.node.checkins import CheckIns
    sensor = create_device("c", "contact_sensor", lit_slow_poll_ms=30000, idle_mode_s=300)
    register(sensor, 0x11, key=KEY)
    fabrics = [SimpleNamespace(fabric_index=1, compressed_fabric_id=bytes(8))]
    check_ins, woken = CheckIns(sensor), []
    check_ins.wake = lambda: woken.append(True)
    assert len(check_ins.due(1000.0, [], [], fabrics)) == 1
    assert check_ins.due(2000.0, [], [], fabrics) == []                 # idle for 300 s now
    state = sensor.endpoint(1).server("BooleanState")
    state.set("StateValue", not state.get("StateValue"))               # the door opens: the user trigger
    assert woken == [True] and len(check_ins.due(2000.0, [], [], fabrics)) == 1
    sit = create_device("c", "contact_sensor")                          # no UAT: nothing hinted, no wake
    sit_check_ins = CheckIns(sit)
    sit_check_ins.due(1000.0, [], [], fabrics)
    sit_state = sit.endpoint(1).server("BooleanState")
    sit_state.set("StateValue", not sit_state.get("StateValue"))
    assert sit_check_ins.next_ms == 61000.0
