"""mDNS at a few hundred nodes: a controller on the same host that asks QU questions (as the CHIP
SDK does) gets its answers, a question about one instance or one fabric costs what that
instance or fabric has, not what the whole process advertises, and many copies of one question
arriving together are answered by multicast once a second, not once per copy."""
from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import time

import pytest
from netns import ADDRESSES_V4

from matter_protocol.mdns import Operational
from twin.node.advertiser import Advertiser

FABRIC_A = bytes.fromhex("87E1B004E235A130")
FABRIC_B = bytes.fromhex("1122334455667788")
MDNS_V4 = "224.0.0.251"
TYPE_PTR, TYPE_SRV, TYPE_AAAA, TYPE_ANY, CLASS_IN, QU = 12, 33, 28, 255, 1, 0x8000


def run_same_host_queries(count: int) -> dict:
    """Inside the namespace: `count` nodes on one Advertiser (one of them on FABRIC_B), then a
    querier bound to 0.0.0.0:5353 like a controller on this host asks QU questions on v0."""
    from zeroconf import DNSIncoming, DNSOutgoing, DNSQuestion

    async def main() -> dict:
        adv = Advertiser(random.Random(5))
        services = [Operational(port=5540 + i, compressed_fabric_id=FABRIC_A, node_id=i + 1)
                    for i in range(count - 1)]
        services.append(Operational(port=5540 + count, compressed_fabric_id=FABRIC_B, node_id=1))
        names = await asyncio.gather(*(adv.publish(i, s) for i, s in enumerate(services)))

        querier = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        querier.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        querier.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        querier.bind(("0.0.0.0", 5353))
        for address in ADDRESSES_V4:
            querier.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                               socket.inet_aton(MDNS_V4) + socket.inet_aton(address))
        querier.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ADDRESSES_V4[0]))
        querier.setblocking(False)
        loop = asyncio.get_running_loop()
        quiet_since, deadline = time.monotonic(), time.monotonic() + 30
        while time.monotonic() - quiet_since < 1 and time.monotonic() < deadline:
            try:       # until the start-up announcements are over: 1 s without a datagram
                await asyncio.wait_for(loop.sock_recvfrom(querier, 9000), 0.2)
                quiet_since = time.monotonic()
            except TimeoutError:
                pass

        async def ask(name: str, type_: int) -> dict:
            out = DNSOutgoing(0)
            out.add_question(DNSQuestion(name, type_, CLASS_IN | QU))
            for packet in out.packets():
                querier.sendto(packet, (MDNS_V4, 5353))
            datagrams, records, answers = 0, 0, set()
            end = time.monotonic() + 2
            while (left := end - time.monotonic()) > 0:
                try:
                    data, _ = await asyncio.wait_for(loop.sock_recvfrom(querier, 9000), left)
                except TimeoutError:
                    break
                message = DNSIncoming(data)
                if not message.is_response():
                    continue        # our own question, looped back
                datagrams += 1
                records = max(records, len(message.answers()))
                answers.update((r.name, r.type, getattr(r, "alias", None) or getattr(r, "server", None))
                               for r in message.answers())
            return {"datagrams": datagrams, "most records in one": records, "answers": answers}

        async def burst(host: str, copies: int) -> dict:
            """The same AAAA question `copies` times at once on each interface from a one-shot
            (legacy, RFC 6762 6.7) port, as the CHIP SDK asks: how often do the host's addresses
            go out by multicast, and does the one-shot port get its answer?"""
            legacy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            legacy.bind(("0.0.0.0", 0))
            legacy.setblocking(False)
            questions = []
            for name in (host, "other.local."):     # interleaved, as on a busy link: zeroconf
                out = DNSOutgoing(0)                # drops only a repeat of the last datagram
                out.add_question(DNSQuestion(name, TYPE_AAAA, CLASS_IN))
                questions.append(out.packets()[0])
            for _ in range(copies):
                for address in ADDRESSES_V4:
                    legacy.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
                    for question in questions:
                        legacy.sendto(question, (MDNS_V4, 5353))
            counts = {querier: 0, legacy: 0}     # datagrams naming the host, by socket
            end = time.monotonic() + 2.5
            while time.monotonic() < end:
                for sock in counts:
                    with contextlib.suppress(BlockingIOError):
                        while True:
                            message = DNSIncoming(sock.recv(9000))
                            if message.is_response() and any(r.name == host for r in message.answers()):
                                counts[sock] += 1
                await asyncio.sleep(0.01)
            legacy.close()
            return {"multicast": counts[querier], "unicast": counts[legacy]}

        one = await ask(names[7], TYPE_ANY)
        fabric_b = await ask(f"_I{FABRIC_B.hex().upper()}._sub._matter._tcp.local.", TYPE_PTR)
        host = next(server for name, type_, server in one["answers"] if type_ == TYPE_SRV)
        await asyncio.sleep(1.5)        # one second since the host's addresses were multicast
        burst_result = await burst(host, 4)
        querier.close()
        await adv.close()
        return {"names": names, "one": one, "fabric_b": fabric_b, "burst": burst_result}
    return asyncio.run(main())


@pytest.mark.e2e
def test_same_host_qu_questions_are_answered_and_cost_what_they_ask(netns):
    count = 300
    result = netns.call(run_same_host_queries, count, timeout=90)
    names, one, fabric_b = result["names"], result["one"], result["fabric_b"]
    # The answer reaches the querier although its address is also one of the responder's own.
    assert (names[7], 33) in {(name, type_) for name, type_, _ in one["answers"]}
    # One instance: its own records (SRV, TXT, addresses), not hundreds, in a few datagrams
    # (one answer, received on each interface the querier joined).
    assert one["most records in one"] <= 12 and one["datagrams"] <= 4
    ptrs = {alias for name, type_, alias in fabric_b["answers"] if type_ == TYPE_PTR}
    assert ptrs == {names[-1]}
    assert fabric_b["most records in one"] <= 12 and fabric_b["datagrams"] <= 4
    # 8 copies of a question (4 on each interface): every one-shot question gets its unicast
    # reply, and the host's addresses go out by multicast once, and once more a second later
    # for the copies held back (each seen on both interfaces): 4, where every copy was answered
    # by multicast before (16).
    assert result["burst"]["unicast"] >= 1 and result["burst"]["multicast"] <= 6, result["burst"]
