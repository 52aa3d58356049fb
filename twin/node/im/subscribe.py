"""Subscribe (Core spec 8.5): priming, dirty marking, derived-value sampling and reports."""
from __future__ import annotations

import collections
import itertools
import logging
from collections.abc import Iterator
from typing import Any

from clusters.base import AccessContext, ClusterServer
from clusters.status import MatterError, Status
from matter_protocol.exchange import Action, Exchange, ExchangeError
from matter_protocol.interaction import (
    AttributePath,
    EventPath,
    SubscribeRequest,
)
from matter_protocol.message import ProtocolId
from twin.node.im.events import event_min_of
from twin.node.im.model import (
    MAX_PATHS_PER_REQUEST,
    MAX_SUBSCRIPTIONS,
    MIN_MAX_INTERVAL_S,
    MIN_SUBSCRIPTIONS_PER_FABRIC,
    Derived,
    Key,
    Subscription,
    concrete,
)
from twin.node.im.parts import Part
from twin.node.im.read import tagged

log = logging.getLogger(__name__)


class Subscriptions(Part):
    """Part of InteractionModelServer (server.py): the subscribe interaction, on its state."""

    def _derived_attributes(self) -> dict[tuple[int, int], list[Derived]]:
        if self._derived is None:
            self._derived = {}
            for ep_id, endpoint in self.device.endpoints.items():
                for server in endpoint.servers.values():
                    # What this instance has (features vary), minus C quality: not reported.
                    names = sorted(server.derived.intersection(server.attributes) - server.changes_omitted)
                    if names:
                        self._derived[(ep_id, server.id)] = [
                            Derived((ep_id, server.id, server.attribute_class(n).attribute_id), server, n,
                                     max(1, round(server.sample_seconds.get(n, 1) * 1000 / self.sample_ms)))
                            for n in names]
        return self._derived

    def _watch_derived(self, now_ms: float | None = None) -> None:
        """Sample the derived attributes the subscriptions cover (on a timer only if any);
        called whenever subscriptions or the composition change."""
        self._watched = {}
        for cluster, attributes in self._derived_attributes().items():
            covered = [a for a in attributes if any(s.covers(a.key) for s in self.subscriptions.values())]
            if covered:
                self._watched[cluster] = covered
        if not self._watched:
            self._next_sample_ms = None
        elif self._next_sample_ms is None and now_ms is not None:
            self._next_sample_ms = now_ms + self.sample_ms

    def _sample(self, clusters: dict[tuple[int, int], list[Derived]], count: int | None = None) -> None:
        """Re-read these clusters' derived attributes (on the timer's `count`-th sample, those
        due then). A value that moved since the last sample bumps its cluster's DataVersion
        and is dirty for the subscriptions that cover it."""
        marked = False
        for cluster, attributes in clusters.items():
            moved = False
            for key, server, name, every in attributes:
                if count is not None and count % every:
                    continue
                try:
                    value = server.get(name)
                except Exception:   # reported as an error status when actually read
                    continue
                if key in self._sampled and self._sampled[key] != value:
                    moved = True
                    marked = self._mark_dirty(key) or marked
                self._sampled[key] = value
            if moved:
                self._bumps[cluster] = self._bumps.get(cluster, 0) + 1
        if marked:
            self._notify()

    def _subscribe(self, session: Any, exchange: Exchange, message: SubscribeRequest, access: AccessContext,
                   now_ms: float) -> list[Action]:
        floor, ceiling = message.min_interval_floor, message.max_interval_ceiling
        if floor is None or ceiling is None:   # decoding requires both
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if floor > ceiling or floor > 0xFFFF or ceiling > 0xFFFF:
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if not message.attribute_requests and not message.event_requests:
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if len(message.attribute_requests or ()) + len(message.event_requests or ()) > MAX_PATHS_PER_REQUEST:
            return self._status(exchange, Status.PATHS_EXHAUSTED, now_ms)
        if not self._may_read_any(message.attribute_requests or [], message.event_requests or [], access):
            # As the CHIP SDK does: a subscription to nothing the peer may read is refused
            # outright (its read would only answer UNSUPPORTED_ACCESS per path).
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if not message.keep_subscriptions:
            for old in [s for s in self.subscriptions.values() if _same_peer(s.session, session)]:
                self._remove(old)
        if len(self.subscriptions) >= MAX_SUBSCRIPTIONS and not self._make_room(access.fabric_index):
            return self._status(exchange, Status.RESOURCE_EXHAUSTED, now_ms)
        sub_id = self.rng.getrandbits(32)
        while sub_id in self.subscriptions:
            sub_id = self.rng.getrandbits(32)
        # The publisher may pick any max interval in [floor, max(limit, ceiling)]: the client's
        # ceiling, but at most ours (see GRANTED_MAX_INTERVAL_S), never below the floor or zero.
        max_interval = max(min(ceiling, self.granted_max_interval_s), floor, MIN_MAX_INTERVAL_S)
        sub = Subscription(sub_id, session, exchange.layer, exchange.handler,
                           list(message.attribute_requests or []), message.fabric_filtered,
                           floor * 1000, max_interval * 1000,
                           event_paths=list(message.event_requests or []))
        self._watch()
        items = self._read_items(sub.paths, message.data_version_filters, sub.fabric_filtered, access)
        sub.event_min = self.event_numbers.next   # later events come in reports
        events = self._event_items(sub.event_paths, event_min_of(message.event_filters), access, below=sub.event_min)
        self.subscriptions[sub_id] = sub
        self._watch_derived(now_ms)
        chunks = self._report_chunks(tagged(items, events), sub_id, for_read=False)
        return self._start(exchange, "priming", chunks, now_ms, subscription=sub)

    def resume(self, sub: Subscription, now_ms: float) -> None:
        """Take back a subscription persisted before a restart (`sub.session`: a CASE session
        this node opened to the subscriber): its first report, due now, carries every path it
        covers and the buffered events, a fresh priming report under the same subscription id,
        as the CHIP SDK's subscription resumption sends."""
        self._watch()
        sub.active, sub.last_report_ms = True, now_ms - sub.max_interval_ms
        sub.dirty = {(ep, server.id, server.attribute_class(name).attribute_id)
                     for ep, server, name in self._expand_all(sub.paths)}
        sub.event_min, sub.events_due = 0, bool(sub.event_paths)
        self.subscriptions[sub.id] = sub
        self._watch_derived(now_ms)
        self._notify()

    def _make_room(self, fabric_index: int | None) -> bool:
        """All slots are taken: evict one subscription for a newcomer of `fabric_index`, if that
        fabric holds fewer than its fair share and another holds more than its own.

        The share of each fabric with subscriptions (the newcomer's included) is
        max(MIN_SUBSCRIPTIONS_PER_FABRIC, MAX_SUBSCRIPTIONS // fabrics). As the spec's eviction
        rule asks, the victim comes from the fabric most over its share: the subscription with
        the most paths there, the oldest of those. PASE subscriptions (no fabric yet) count as
        one more "fabric"."""
        counts = collections.Counter(getattr(s.session, "fabric_index", None) for s in self.subscriptions.values())
        share = max(MIN_SUBSCRIPTIONS_PER_FABRIC, MAX_SUBSCRIPTIONS // len(set(counts) | {fabric_index}))
        if counts[fabric_index] >= share:
            return False
        over = [f for f, n in counts.items() if f != fabric_index and n > share]
        if not over:
            return False
        crowded = max(over, key=lambda f: counts[f])
        victim = max((s for s in self.subscriptions.values() if getattr(s.session, "fabric_index", None) == crowded),
                     key=lambda s: len(s.paths) + len(s.event_paths))   # max keeps the first (oldest) of ties
        log.info("subscription 0x%08x of fabric %s evicted for one of fabric %s (%d slots, share %d)",
                 victim.id, crowded, fabric_index, MAX_SUBSCRIPTIONS, share)
        self._remove(victim)
        return True

    def _may_read_any(self, paths: list[AttributePath], event_paths: list[EventPath],
                      access: AccessContext) -> bool:
        """Does the peer have read access to anything these paths name? A concrete path is
        checked on its ids (whether or not it exists), a wildcard on what it expands to."""
        if self.access_check is None:
            return True
        for path in paths:
            target = concrete(path.endpoint, path.cluster, path.attribute)
            if target is not None:
                if self._allowed("read", access, *target):
                    return True
                continue
            try:
                targets = self._expand(path)
            except MatterError:
                continue
            if any(self._allowed("read", access, ep, server.id, server.attribute_class(name).attribute_id)
                   for ep, server, name in targets):
                return True
        for event_path in event_paths:
            for ep_id, endpoint in self.device.endpoints.items():
                if event_path.endpoint not in (None, ep_id):
                    continue
                for cluster_id in endpoint.servers:
                    if event_path.cluster not in (None, cluster_id):
                        continue
                    if self._allowed("event", access, ep_id, cluster_id, event_path.event or 0):
                        return True
            if event_path.endpoint is not None and event_path.cluster is not None and self._allowed(
                    "event", access, event_path.endpoint, event_path.cluster, event_path.event or 0):
                return True
        return False

    def _on_change(self, server: ClusterServer, name: str) -> None:
        if not self.subscriptions or server.endpoint is None or name in server.changes_omitted:
            return
        ep = self._endpoint(server)
        if ep is None:
            return
        if self._mark_dirty((ep, server.id, server.attribute_class(name).attribute_id)):
            self._notify()

    def _mark_dirty(self, key: Key) -> bool:
        """Mark the attribute dirty for the subscriptions that cover it; did any?"""
        marked = False
        for sub in self.subscriptions.values():
            if sub.covers(key):
                sub.dirty.add(key)
                marked = True
        return marked

    def _notify(self) -> None:
        if self.on_dirty is not None:
            self.on_dirty()

    def _due(self, sub: Subscription) -> float | None:
        """When this subscription next has something to send (None while it waits)."""
        if not sub.active or sub.busy is not None:
            return None
        earliest_allowed = sub.last_report_ms + sub.min_interval_ms
        due = sub.last_report_ms + sub.max_interval_ms
        if sub.dirty or sub.events_due:
            due = min(due, earliest_allowed)
        if sub.urgent:
            due = min(due, sub.last_report_ms)   # urgent events do not wait for the min interval
        return due

    def _dirty_items(self, keys: list[Key], access: AccessContext, fabric_filtered: bool) -> Iterator[bytes]:
        """The AttributeReportIBs of a report of changes, encoded as they are consumed."""
        for key in keys:
            ep, cluster, attribute = key
            server = self.device.endpoints[ep].servers.get(cluster) if ep in self.device.endpoints else None
            if server is None or not self._allowed("read", access, *key):
                continue   # gone since it changed (a bridged device removed), or not theirs to see
            yield from self._items(ep, server, server.resolve_attribute(attribute), access, fabric_filtered)

    def _report(self, sub: Subscription, now_ms: float) -> list[Action]:
        access = self._access(sub.session)
        dirty, sub.dirty = sorted(sub.dirty), set()
        items = self._dirty_items(dirty, access, sub.fabric_filtered)
        events: Iterator[bytes] = iter(())
        if sub.events_due:
            below = self.event_numbers.next
            events = self._event_items(sub.event_paths, sub.event_min, access, concrete_status=False, below=below)
            sub.event_min = below
            sub.events_due = sub.urgent = False
        stream = tagged(items, events)
        head = next(stream, None)
        if head is None and now_ms < sub.last_report_ms + sub.max_interval_ms:
            return []   # what changed is gone or hidden, and no keepalive is due yet
        try:
            exchange = sub.layer.new_exchange(sub.session, ProtocolId.INTERACTION_MODEL, handler=sub.handler)
        except ExchangeError as e:
            log.info("subscription 0x%08x ended: %s", sub.id, e)
            self._remove(sub)
            return []
        sub.last_report_ms = now_ms
        chunks = self._report_chunks(itertools.chain(() if head is None else (head,), stream), sub.id, for_read=False)
        return self._start(exchange, "report", chunks, now_ms, subscription=sub)


def _same_peer(a: Any, b: Any) -> bool:
    """Same subscriber: same CASE peer on the same fabric, or the same PASE session."""
    if a is b:
        return True
    peer_a, peer_b = getattr(a, "peer_node_id", None), getattr(b, "peer_node_id", None)
    return (peer_a is not None and peer_a == peer_b
            and getattr(a, "fabric_index", None) == getattr(b, "fabric_index", None))
