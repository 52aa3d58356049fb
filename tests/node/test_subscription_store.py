"""The subscription store (issue #13 item 2): what a node keeps of its subscriptions for a
restart, and how they come back."""
from __future__ import annotations

import random
from types import SimpleNamespace

from clusters.devices import create_device
from matter_protocol.interaction import AttributePath, EventPath
from twin.node.files import MemoryStorage
from twin.node.im import InteractionModelServer, Subscription
from twin.node.resumption import MAX_RESUMED, SubscriptionStore, record_of, subscription_of


def case_session(**kw):
    return SimpleNamespace(peer_node_id=112233, fabric_index=1, peer_address=("fe80::1", 5540, 0, 2),
                           is_secure=True, **kw)


def subscription(active=True, session=None):
    return Subscription(0x1234ABCD, session or case_session(), "layer", "interaction model",
                        [AttributePath(endpoint=1, cluster=6, attribute=0), AttributePath()], True, 0, 30_000,
                        active=active, event_paths=[EventPath(is_urgent=True)])


def test_a_case_subscription_round_trips():
    record = record_of(subscription())
    assert record["id"] == 0x1234ABCD and record["node_id"] == 112233 and record["fabric_index"] == 1
    assert record["address"] == ["fe80::1", 5540, 0, 2]
    back = subscription_of(record, "new session", "layer2", "interaction model")
    assert back.id == 0x1234ABCD and back.session == "new session" and back.max_interval_ms == 30_000
    assert back.paths == [AttributePath(endpoint=1, cluster=6, attribute=0), AttributePath()]
    assert back.event_paths == [EventPath(is_urgent=True)] and back.fabric_filtered


def test_pase_and_inactive_subscriptions_are_not_kept():
    assert record_of(subscription(active=False)) is None
    pase = SimpleNamespace(peer_node_id=None, fabric_index=None, peer_address=("::1", 1), is_secure=True)
    assert record_of(subscription(session=pase)) is None


def test_the_store_saves_loads_and_bounds():
    storage = MemoryStorage()
    store = SubscriptionStore(storage)
    assert store.load() == []
    records = [dict(record_of(subscription()), id=i) for i in range(MAX_RESUMED + 3)]
    store.save(records)
    assert [r["id"] for r in store.load()] == list(range(MAX_RESUMED))
    storage.data = b"{not json"
    assert store.load() == []


def test_a_resumed_subscription_reports_everything_at_once():
    device = create_device("lamp", "dimmable_light", rng=random.Random(0))
    im = InteractionModelServer(device, random.Random(1), access_check=None)
    sub = subscription_of(record_of(subscription()), case_session(), "layer", "interaction model")
    im.resume(sub, now_ms=100_000)
    assert im.subscriptions[sub.id] is sub and sub.active
    assert (1, 6, 0) in sub.dirty and len(sub.dirty) > 10     # the wildcard path: every attribute
    assert sub.events_due and sub.event_min == 0               # the StartUp event goes too
    assert im.next_timer() <= 100_000                          # due now
