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


def register(device, node_id, fabric=1, key=bytes(16)):
    token = current_access.set(AccessContext("case", fabric, 0x99))
    try:
        return device.invoke("IcdManagement", "RegisterClient", {"checkInNodeID": node_id, "monitoredSubject": node_id,
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
