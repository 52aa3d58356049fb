"""DNS-SD advertisement of Matter nodes over python-zeroconf (Matter Core spec 4.3).

What a node advertises is plain data (`matter_protocol.mdns`: `Commissionable`, `Operational`).
`Advertiser` is the thin asyncio shell that publishes them through one `AsyncZeroconf` for any
number of nodes.

Subtypes. Commissioners browse `_S<short>._sub._matterc._udp.local.` (manual code),
`_L<long>._sub...` (QR code), `_V<vid>`, `_CM`, and `_I<cfid>._sub._matter._tcp.local.`.
python-zeroconf registers one service type per instance and answers a PTR question only from its
registry's type index, always naming the answer after the ServiceInfo's `type`. So each subtype
gets a "shadow" ServiceInfo whose type is the subtype name and whose instance, SRV, TXT and
addresses are the node's own. zeroconf then answers `_S3._sub._matterc._udp.local. PTR
<instance>` with SRV/TXT/AAAA as additionals, through its normal query handler (known-answer
suppression, QU/unicast, rate limits). The shadows are added to the registry directly (not
through `async_register_service`) so nothing probes or announces SRV/TXT twice, and removing a
subtype sends a goodbye for its PTR only: the instance itself stays up.

At a thousand nodes on one host: instances are not probed (see `publish`), a controller on the
same host gets its QU answers by multicast, a record is multicast at most once a second however
many copies of a question arrive together (see `_SameHostMulticastZeroconf`), and our sockets
ask for a larger receive buffer.
"""
from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import ifaddr
from zeroconf import DNSIncoming, DNSOutgoing, DNSPointer, InterfaceChoice, IPVersion, ServiceInfo, Zeroconf
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from matter_protocol.mdns import OPERATIONAL_TYPE, Operational, Service, operational_instance

__all__ = ["Advertiser", "interface_addresses", "multicast_interfaces"]

_TYPE_PTR, _CLASS_IN = 12, 1
_FLAGS_RESPONSE_AUTHORITATIVE = 0x8400      # QR=1, AA=1 (RFC 6762 18.2, 18.4)
_SHARED_TTL = 4500                          # PTR/TXT TTL, RFC 6762 10 (as zeroconf uses)
# Receive buffer asked for on our mDNS sockets; the kernel caps it at net.core.rmem_max (no
# privilege needed up to there). The default (~212 KB) overflows when a thousand nodes announce
# at start-up, or a browse is answered with a thousand instances and comes back to us on every
# interface and loopback.
MDNS_RECEIVE_BUFFER = 4 * 1024 * 1024
_MDNS_PORT = 5353
_RECENT_LIMIT = 4096                        # records remembered as just multicast, before pruning


def interface_addresses() -> list[str]:
    """All non-loopback IPv4/IPv6 addresses of this network namespace."""
    found = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            addr = ipaddress.ip_address(ip.ip if isinstance(ip.ip, str) else ip.ip[0])
            if not addr.is_loopback:
                found.append(str(addr))
    return found


def multicast_interfaces() -> list[str | int]:
    """What zeroconf should send mDNS on: every interface but loopback (IPv4 addresses, IPv6
    interface indexes). zeroconf's InterfaceChoice.All with IPv6 also takes ::1, but `lo` has no
    MULTICAST flag and so no ff02::/16 route: every send there fails with ENETUNREACH, which
    zeroconf logs as a WARNING with a traceback. Nothing on loopback needs mDNS anyway."""
    found: list[str | int] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            address = ipaddress.ip_address(ip.ip if isinstance(ip.ip, str) else ip.ip[0])
            if address.is_loopback:
                continue
            if address.version == 4:
                found.append(str(address))
            elif adapter.index is not None and adapter.index not in found:  # None: no index to send on
                found.append(adapter.index)
    return found


@dataclass
class _Published:
    service: Service
    info: ServiceInfo
    shadows: dict[str, ServiceInfo]          # subtype name -> shadow ServiceInfo


class Advertiser:
    """Publishes, updates and withdraws the services of many nodes over one zeroconf instance.

    `node` is any hashable id the caller uses for a node. Instance names of commissionable
    services and host names are drawn from `rng` (16 upper-case hex digits each).
    """

    def __init__(self, rng: random.Random, *, addresses: list[str] | None = None,
                 zeroconf: AsyncZeroconf | None = None,
                 interfaces: InterfaceChoice | list[str | int] = InterfaceChoice.All) -> None:
        self._rng = rng
        self._addresses = addresses
        self._interfaces = interfaces
        self._own_zeroconf = zeroconf is None
        self._aiozc = zeroconf                 # created on first publish: no sockets before
        self._hosts: dict[Hashable, str] = {}
        self._instances: dict[Hashable, str] = {}      # node -> commissionable instance label
        self._published: dict[tuple[Hashable, ...], _Published] = {}
        # One lock per published identity: registering probes for ~1 s, and many nodes must be
        # able to do that at the same time.
        self._locks: dict[tuple[Hashable, ...], asyncio.Lock] = {}

    @property
    def zeroconf(self) -> AsyncZeroconf:
        if self._aiozc is None:
            interfaces = self._interfaces
            if interfaces is InterfaceChoice.All:
                interfaces = multicast_interfaces() or InterfaceChoice.All
            zc = _SameHostMulticastZeroconf(interfaces=interfaces, ip_version=IPVersion.All)
            _enlarge_receive_buffers(zc)
            self._aiozc = AsyncZeroconf(zc=zc)
        return self._aiozc

    def _hex16(self) -> str:
        return f"{self._rng.getrandbits(64):016X}"

    def instance_name(self, node: Hashable, service: Service) -> str:
        """Full DNS-SD instance name the service has (or will have) for this node."""
        if isinstance(service, Operational):
            label = service.instance()
        else:
            if node not in self._instances:
                self._instances[node] = self._hex16()
            label = self._instances[node]
        return f"{label}.{service.service_type}"

    def _info(self, node: Hashable, service: Service, type_: str,
              addresses: list[str]) -> ServiceInfo:
        if node not in self._hosts:
            self._hosts[node] = f"{self._hex16()}.local."
        return ServiceInfo(type_, self.instance_name(node, service), port=service.port,
                           properties=service.txt(), server=self._hosts[node],
                           parsed_addresses=addresses)

    async def publish(self, node: Hashable, service: Service) -> str:
        """Advertise `service` for `node`, or update it in place if the node already advertises
        one with the same identity (e.g. CM=1 -> CM=0). Returns the full instance name."""
        key = (node, *service.key())
        async with self._locks.setdefault(key, asyncio.Lock()):
            old = self._published.get(key)
            addresses = self._addresses if self._addresses is not None else interface_addresses()
            info = self._info(node, service, service.service_type, addresses)
            zc = self.zeroconf.zeroconf
            if old is None:
                # Not zeroconf's register: its "probe" asks for every instance of the type (a
                # QU PTR question, three times), which this very responder answers with all of
                # them: O(nodes) per node. Matter instance names are unique by construction
                # (fabric and node id; 64 random bits), so the names go in unprobed.
                await zc.async_wait_for_start()
                _registry_add(zc, info)
                shadows: dict[str, ServiceInfo] = {}
            else:
                shadows = old.shadows
            await zc.async_update_service(info)       # announces it (RFC 6762 8.3)
            wanted = service.subtypes()
            gone = [s for s in shadows if s not in wanted]
            for sub in gone:
                _registry_remove(zc, shadows.pop(sub))
            for sub in wanted:
                shadow = self._shadow(node, service, sub, addresses)
                if sub in shadows:
                    _registry_remove(zc, shadows[sub])
                _registry_add(zc, shadow)
                shadows[sub] = shadow
            self._published[key] = _Published(service, info, shadows)
            self._send_pointers(info.name, gone, ttl=0)
            self._send_pointers(info.name, wanted, ttl=_SHARED_TTL)
            return info.name

    async def withdraw(self, node: Hashable, service: Service | None = None) -> None:
        """Send goodbyes for one service of `node`, or for all of them when `service` is None
        (the node left or was decommissioned)."""
        if service is not None:
            keys = [(node, *service.key())]
        else:
            keys = [k for k in self._published if k[0] == node]
        for key in keys:
            async with self._locks.setdefault(key, asyncio.Lock()):
                published = self._published.pop(key, None)
                if published is not None:
                    await self._unpublish(published)
        if service is None:
            self._hosts.pop(node, None)
            self._instances.pop(node, None)

    async def _unpublish(self, published: _Published) -> None:
        zc = self.zeroconf.zeroconf
        for shadow in published.shadows.values():
            _registry_remove(zc, shadow)
        self._send_pointers(published.info.name, list(published.shadows), ttl=0)
        # Shadows first: zeroconf only says goodbye to the host's addresses when no other
        # registered service still uses that host. The second await waits for the goodbyes
        # to go out, so closing zeroconf right after cannot swallow them.
        await (await zc.async_unregister_service(published.info))

    async def resolve_operational(self, compressed_fabric_id: bytes, node_id: int,
                                  timeout_ms: int = 3000) -> list[tuple[str, int]]:
        """Operational discovery (Core spec 4.3.1): the (address, port) pairs another node on the
        fabric advertises, global IPv6 first, then IPv4, link-local last; [] if nobody answers."""
        name = f"{operational_instance(compressed_fabric_id, node_id)}.{OPERATIONAL_TYPE}"
        info = AsyncServiceInfo(OPERATIONAL_TYPE, name)
        if not await info.async_request(self.zeroconf.zeroconf, timeout_ms) or not info.port:
            return []
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in info.parsed_scoped_addresses()]
        rank = sorted(zip(addresses, info.parsed_scoped_addresses(), strict=True),
                      key=lambda pair: (pair[0].is_link_local, pair[0].version == 4))
        return [(text, info.port) for _, text in rank]

    def published(self, node: Hashable) -> list[Service]:
        return [p.service for k, p in self._published.items() if k[0] == node]

    async def close(self) -> None:
        """Withdraw everything (goodbyes), then close zeroconf if this advertiser created it."""
        await asyncio.gather(*(self.withdraw(node) for node in {k[0] for k in self._published}))
        if self._own_zeroconf and self._aiozc is not None:
            await self._aiozc.async_close()
            self._aiozc = None

    def _shadow(self, node: Hashable, service: Service, subtype: str,
                addresses: list[str]) -> ServiceInfo:
        shadow = self._info(node, service, subtype, addresses)
        # Registry key only (never a DNS name): unique per subtype, so it sits next to the
        # instance's own entry instead of colliding with it.
        shadow.key = f"{subtype.lower()}|{shadow.key}"
        return shadow

    def _send_pointers(self, instance: str, subtypes: list[str], ttl: int) -> None:
        """Announce (RFC 6762 8.3) or say goodbye to (TTL 0, 10.1) subtype PTR records."""
        if not subtypes:
            return
        out = DNSOutgoing(_FLAGS_RESPONSE_AUTHORITATIVE)
        for sub in subtypes:
            out.add_answer_at_time(DNSPointer(sub, _TYPE_PTR, _CLASS_IN, ttl, instance), 0)
        self.zeroconf.zeroconf.async_send(out)


class _SameHostMulticastZeroconf(Zeroconf):
    """zeroconf that answers a querier on this same host by multicast instead of unicast.

    zeroconf sends from sockets bound to each interface address, port 5353. A unicast reply to a
    QU question (RFC 6762 5.4) from a controller on this host goes to that same address, port
    5353, and the kernel hands it to the most specific socket bound there: ours. The controller
    never sees the answer, asks again and again, and at a few hundred nodes the replies to its
    queries overflow our own receive buffers. A multicast answer reaches every listener (RFC 6762
    5.4 itself multicasts a QU answer not multicast recently), through zeroconf's aggregating
    queue and at most once a second per record. Replies to legacy queriers (source port other
    than 5353) stay unicast: nothing else listens there.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._own_addresses = {*interface_addresses(), "127.0.0.1", "::1"}
        self._multicast_at: dict[Any, float] = {}      # record -> when we last multicast it

    def async_send(self, out: DNSOutgoing, addr: str | None = None, port: int = _MDNS_PORT,
                   v6_flow_scope: tuple[()] | tuple[int, int] = (), transport: Any = None) -> None:
        if addr is not None and port == _MDNS_PORT and _plain(addr) in self._own_addresses:
            assert self.loop is not None
            now = self.loop.time()
            if len(self._multicast_at) > _RECENT_LIMIT:
                self._multicast_at = {r: t for r, t in self._multicast_at.items() if now - t < 1}
            # RFC 6762 6: a record is multicast at most once a second. The same question
            # reaches us several times (looped back, and on each interface joined).
            answers: dict[Any, set[Any]] = {record: set() for record, _ in out.answers
                             if now - self._multicast_at.get(record, float("-inf")) >= 1}
            if answers:
                self._multicast_at.update(dict.fromkeys(answers, now))
                next(iter(answers.values())).update(out.additionals)
                self.out_queue.async_add(now * 1000, answers)
            return
        super().async_send(out, addr, port, v6_flow_scope, transport)
        if addr is None and out.is_response():
            # zeroconf learns that it multicast a record when its own copy comes back into its
            # cache, and only then holds back the next multicast of it (RFC 6762 6). Questions
            # that arrive before that (the CHIP SDK asks one AAAA question on each of its
            # interfaces at once, and each reaches us on several sockets) were each answered
            # by multicast: 40 copies of one host's addresses in 10 ms. Hear ourselves at once.
            for packet in out.packets():
                self.record_manager.async_updates_from_response(DNSIncoming(packet))


def _plain(address: str) -> str:
    """An address as interface_addresses() lists it: no %scope, IPv4 not IPv6-mapped."""
    return address.split("%")[0].removeprefix("::ffff:")


# zeroconf has no API for extra PTR names, so the shadows go into its registry by hand. The
# registry and its async_add/async_remove are public (no underscore) but undocumented; these two
# functions are the only places that touch them.
def _registry_add(zc: Zeroconf, shadow: ServiceInfo) -> None:
    zc.registry.async_add(shadow)


def _registry_remove(zc: Zeroconf, shadow: ServiceInfo) -> None:
    zc.registry.async_remove(shadow)


def _enlarge_receive_buffers(zc: Zeroconf) -> None:
    """Ask for MDNS_RECEIVE_BUFFER on every socket zeroconf reads (its engine keeps them in
    attributes with no public accessor; this is the only place that reads them)."""
    engine = zc.engine
    for sock in [engine._listen_socket, *engine._respond_sockets]:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, MDNS_RECEIVE_BUFFER)
