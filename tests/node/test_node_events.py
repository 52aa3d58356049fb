"""Events in the Interaction Model server: the node's event log (numbers, priorities, per-priority
buffers), EventRequests and EventFilters on reads and subscriptions, urgent paths, StartUp and
ShutDown; plus the "C" quality (UpTime is never reported on change), bridged endpoints and the
DataVersion of derived values."""
from __future__ import annotations

import random

from chip.clusters import Objects as C
from chip.clusters.ClusterObjects import ALL_CLUSTERS, ClusterEvent
from test_node_im_server import Link, values

from clusters.devices import create_device
from matter_protocol.interaction import (
    AttributePath,
    ClusterPath,
    DataVersionFilter,
    EventFilter,
    EventPath,
    ReadRequest,
    ReportData,
    SubscribeRequest,
    SubscribeResponse,
)
from twin.home import Home
from twin.node.im import CRITICAL, INFO
from twin.node.im import server as im_server
from twin.node.values import decode_typed

OPSTATE = C.OperationalState
BASIC = C.BasicInformation


def event_class(cluster_id, event_id):
    ns = ALL_CLUSTERS[cluster_id].Events
    (cls,) = [c for c in vars(ns).values()
              if isinstance(c, type) and issubclass(c, ClusterEvent) and c.event_id == event_id]
    return cls


def events(messages):
    """[(number, priority, endpoint, cluster, event id, system ms, decoded fields)] in arrival order."""
    out = []
    for m in messages:
        if not isinstance(m, ReportData):
            continue
        for r in m.event_reports or ():
            d = r.event_data
            assert d is not None and d.epoch_timestamp is None
            cls = event_class(d.path.cluster, d.path.event)
            out.append((d.event_number, d.priority, d.path.endpoint, d.path.cluster, d.path.event,
                        d.system_timestamp, decode_typed(cls, d.data)))
    return out


def read_events(link, *paths, event_min=None):
    filters = [EventFilter(event_min=event_min)] if event_min is not None else None
    return events(link.request(ReadRequest(event_requests=list(paths), event_filters=filters)))


def dishwasher():
    home = Home(seed=3)
    home.add_room("kitchen")
    device = home.add_device("dw", "dishwasher", "kitchen")
    device.invoke("OnOff", "On")
    return home, device


def test_start_up_is_logged_when_the_node_starts_and_read_with_its_spec_priority():
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    (event,) = read_events(link, EventPath())
    number, priority, ep, cluster, event_id, _, fields = event
    assert (number, priority, ep, cluster, event_id) == (0, CRITICAL, 0, BASIC.id, BASIC.Events.StartUp.event_id)
    assert fields.softwareVersion == device.read("BasicInformation", "SoftwareVersion")


def test_operation_completion_and_error_events_carry_numbers_priorities_and_virtual_time():
    home, device = dishwasher()
    link = Link(device)
    device.invoke("OperationalState", "Start")
    home.advance(5)
    device.invoke("OperationalState", "Stop")
    device.endpoint(1).server(OPSTATE).set_error(OPSTATE.Enums.ErrorStateEnum.kUnableToCompleteOperation)
    got = read_events(link, EventPath(endpoint=1, cluster=OPSTATE.id))
    assert [(n, p, e) for n, p, _, _, e, _, _ in got] == [
        (1, INFO, OPSTATE.Events.OperationCompletion.event_id),
        (2, CRITICAL, OPSTATE.Events.OperationalError.event_id)]
    completion, error = got[0][6], got[1][6]
    assert completion.totalOperationalTime == 5 and completion.pausedTime == 0
    assert error.errorState.errorStateID == OPSTATE.Enums.ErrorStateEnum.kUnableToCompleteOperation
    assert got[0][5] == home.clock.tick * 100   # system timestamp: virtual ms
    # Only OperationCompletion on a concrete event path; the home keeps its own list too.
    only = read_events(link, EventPath(1, OPSTATE.id, OPSTATE.Events.OperationCompletion.event_id))
    assert [e[0] for e in only] == [1]
    assert [e["event"] for e in home.events] == ["OperationCompletion", "OperationalError"]


def test_event_min_filters_older_events():
    home, device = dishwasher()
    link = Link(device)
    for _ in range(3):
        device.invoke("OperationalState", "Start")
        device.invoke("OperationalState", "Stop")
    assert [e[0] for e in read_events(link, EventPath())] == [0, 1, 2, 3]
    assert [e[0] for e in read_events(link, EventPath(), event_min=2)] == [2, 3]
    assert read_events(link, EventPath(), event_min=4) == []


def test_concrete_event_path_to_nothing_answers_an_event_status():
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    (message,) = link.request(ReadRequest(event_requests=[EventPath(9, OPSTATE.id, 0)]))
    (report,) = message.event_reports
    assert report.event_status.status.status == 0x7F   # UNSUPPORTED_ENDPOINT


def test_buffers_are_bounded_per_priority_and_drop_the_oldest(monkeypatch):
    monkeypatch.setattr(im_server, "EVENT_BUFFER", {0: 2, 1: 3, 2: 2})   # the server sizes its log
    home, device = dishwasher()
    link = Link(device)
    for _ in range(5):
        device.invoke("OperationalState", "Start")
        device.invoke("OperationalState", "Stop")
    got = read_events(link, EventPath())
    # StartUp (critical) survives; of the five completions (info) the last three remain.
    assert [(n, p) for n, p, *_ in got] == [(0, CRITICAL), (3, INFO), (4, INFO), (5, INFO)]


def subscribe_events(link, *paths, floor=2, ceiling=10, event_min=None, attributes=()):
    filters = [EventFilter(event_min=event_min)] if event_min is not None else None
    return link.request(SubscribeRequest(floor, ceiling, attribute_requests=list(attributes) or None,
                                         event_requests=list(paths), event_filters=filters))


def test_subscription_primes_with_logged_events_then_reports_new_ones_at_the_min_interval():
    home, device = dishwasher()
    link = Link(device)
    messages = subscribe_events(link, EventPath(), floor=3, ceiling=60)
    assert isinstance(messages[-1], SubscribeResponse)
    assert [e[0] for e in events(messages)] == [0]     # StartUp
    link.advance(500)
    device.invoke("OperationalState", "Start")
    device.invoke("OperationalState", "Stop")
    early = link.advance(2000)                          # 2.5 s after priming: still inside the floor
    assert events(early) == []
    late = link.advance(1000)
    assert [e[4] for e in events(late)] == [OPSTATE.Events.OperationCompletion.event_id]
    assert events(link.advance(10_000)) == []           # each event is reported once


def test_urgent_event_paths_do_not_wait_for_the_min_interval():
    home, device = dishwasher()
    link = Link(device)
    subscribe_events(link, EventPath(1, OPSTATE.id, OPSTATE.Events.OperationalError.event_id, is_urgent=True),
                     EventPath(1, OPSTATE.id), floor=30, ceiling=60, event_min=1)
    link.advance(100)
    device.endpoint(1).server(OPSTATE).set_error(OPSTATE.Enums.ErrorStateEnum.kUnableToStartOrResume)
    got = events(link.advance(10))
    assert [e[4] for e in got] == [OPSTATE.Events.OperationalError.event_id]
    # A non-urgent one waits for the floor.
    device.invoke("OperationalState", "Stop")
    device.invoke("OperationalState", "Start")
    device.invoke("OperationalState", "Stop")
    assert events(link.advance(20_000)) == []
    assert [e[4] for e in events(link.advance(15_000))] == [OPSTATE.Events.OperationCompletion.event_id]


def test_event_filter_on_subscribe_skips_old_events_in_the_priming():
    home, device = dishwasher()
    link = Link(device)
    device.invoke("OperationalState", "Start")
    device.invoke("OperationalState", "Stop")
    assert [e[0] for e in events(subscribe_events(link, EventPath(), event_min=1))] == [1]


def test_shutdown_is_logged_critical():
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    link.im.shutdown()
    got = read_events(link, EventPath(0, BASIC.id))
    assert [(e[0], e[1], e[4]) for e in got] == [(0, CRITICAL, BASIC.Events.StartUp.event_id),
                                                  (1, CRITICAL, BASIC.Events.ShutDown.event_id)]


def test_shutdown_is_sent_to_subscribers_at_once():
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    link.request(SubscribeRequest(60, 600, event_requests=[EventPath(0, BASIC.id)]))
    link.advance(1000)                         # well inside the 60 s min interval
    link.im.shutdown()
    got = events(link.advance(10))
    assert [(e[4], e[1]) for e in got] == [(BASIC.Events.ShutDown.event_id, CRITICAL)]


def test_event_numbers_continue_from_storage_in_blocks():
    from twin.node.im import EventNumbers
    stored = []
    numbers = EventNumbers(2000, persist=stored.append, block=10)
    assert [numbers.take() for _ in range(12)] == list(range(2000, 2012))
    assert stored == [2010, 2020]              # each block stored before its first number is used
    restarted = EventNumbers(stored[-1], persist=stored.append, block=10)
    assert restarted.take() == 2020 and stored[-1] == 2030


def test_bridged_events_carry_the_bridged_endpoint():
    from twin.aggregator import build_bridge
    home, device = dishwasher()
    bridge = build_bridge(home, room_sensors=False)
    link = Link(bridge)
    (ep,) = [i for i in bridge.endpoint_ids("dw") if OPSTATE.id in bridge.endpoints[i].servers]
    device.invoke("OperationalState", "Start")
    device.invoke("OperationalState", "Stop")
    got = read_events(link, EventPath(cluster=OPSTATE.id))
    assert [(e[2], e[4]) for e in got] == [(ep, OPSTATE.Events.OperationCompletion.event_id)]
    assert ep != 1


def test_a_forked_home_does_not_carry_the_nodes_event_listeners():
    home, device = dishwasher()
    Link(device)
    fork = home.fork()
    assert all(s.event_listeners == [] for s in fork.devices["dw"].servers())
    assert any(s.event_listeners for s in device.servers())


# ---- "C" quality and derived DataVersions ---------------------------------------------------------
def test_uptime_is_read_but_its_changes_are_never_reported(tmp_path):
    from twin.node.commissioning import NodeCommissioning
    from twin.node.credentials import DeviceCredentials
    now = [0]
    device = create_device("light1", "on_off_light", rng=random.Random(1))
    credentials = DeviceCredentials.load_or_create(tmp_path / "dac", 0xFFF1, 0x8100, rng=random.Random(3))
    NodeCommissioning(tmp_path, device, credentials, 20202021, 3840, random.Random(7), now_ms=lambda: now[0])
    gd = C.GeneralDiagnostics
    link = Link(device, sample_ms=1000, access_check=None)   # the ACL is tested in test_node_access.py
    path = AttributePath(0, gd.id, gd.Attributes.UpTime.attribute_id)
    messages = link.request(SubscribeRequest(1, 600, attribute_requests=[path]))
    assert values(messages)[(0, gd.id, gd.Attributes.UpTime.attribute_id)] == 0
    now[0] = 50_000
    reports = [m for m in link.advance(60_000) if isinstance(m, ReportData)]
    assert reports and not any(m.attribute_reports for m in reports)   # keep-alives only
    assert values(link.request(ReadRequest(attribute_requests=[path])))[
        (0, gd.id, gd.Attributes.UpTime.attribute_id)] == 50


def test_a_moved_derived_value_is_not_hidden_by_a_data_version_filter():
    device = create_device("lamp", "dimmable_light")
    clock = type("Clock", (), {"tick": 0})()
    for server in device.servers():
        server.clock = clock
    link = Link(device)
    level = C.LevelControl
    device.invoke("LevelControl", "MoveToLevelWithOnOff", {"level": 4, "transitionTime": 100,
                                                            "optionsMask": 0, "optionsOverride": 0})
    path = AttributePath(1, level.id, level.Attributes.CurrentLevel.attribute_id)
    (first,) = link.request(ReadRequest(attribute_requests=[path]))
    version = first.attribute_reports[0].attribute_data.data_version
    server_version = device.endpoint(1).server(level).data_version
    flt = [DataVersionFilter(ClusterPath(endpoint=1, cluster=level.id), version)]
    (same,) = link.request(ReadRequest(attribute_requests=[path], data_version_filters=flt))
    assert not same.attribute_reports            # nothing moved: the filter hides the cluster
    clock.tick = 50                              # halfway through the ramp, no listener fired
    (moved,) = link.request(ReadRequest(attribute_requests=[path], data_version_filters=flt))
    data = moved.attribute_reports[0].attribute_data
    assert data.data_version != version and data.data == device.read("LevelControl", "CurrentLevel")
    assert device.endpoint(1).server(level).data_version == server_version   # simulation state untouched
