"""Issue #32 item 8 at the MQTT edge, through the embedded broker (amqtt) on 127.0.0.1: a deeply
nested command gets an error reply and no traceback; a retained command is not run again at the
twin's start (unless opted in), and its sender is told why."""
from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import uuid

import aiomqtt
import pytest

from matter_twin.mqtt import MqttBridge, MqttSettings, start_broker
from twin.home import Home

ON = {"device.id": "bedroom_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def scenario(retained_commands: bool, before: list, after: list, can_save=None) -> tuple[Home, dict]:
    """Publish `before` (topic suffix, payload, retain) to a fresh broker, start the bridge, publish
    `after`; returns the home and the replies by tool."""
    port = free_port()
    broker = await start_broker(f"127.0.0.1:{port}")
    home, lock = Home.default(), threading.Lock()
    settings = MqttSettings(listen=f"127.0.0.1:{port}", prefix="t", retained_commands=retained_commands)
    bridge = MqttBridge(home, lock, settings)
    bridge.can_save = can_save
    replies: dict[str, list] = {}
    stop, ready = asyncio.Event(), asyncio.Event()
    try:
        async with aiomqtt.Client("127.0.0.1", port, identifier=f"test-{uuid.uuid4().hex[:8]}",
                                  protocol=aiomqtt.ProtocolVersion.V311) as client:
            await client.subscribe("t/reply/#", qos=1)
            for topic, payload, retain in before:
                await client.publish(f"t/{topic}", payload, qos=1, retain=retain)
            running = asyncio.create_task(bridge.run(stop, ready))
            await asyncio.wait_for(ready.wait(), 20)
            for topic, payload, retain in after:
                await client.publish(f"t/{topic}", payload, qos=1, retain=retain)

            async def gather():
                async for message in client.messages:
                    replies.setdefault(str(message.topic).rsplit("/", 1)[1], []).append(json.loads(message.payload))
                    if sum(map(len, replies.values())) >= len(before) + len(after):
                        return
            await asyncio.wait_for(gather(), 20)
            stop.set()
            await asyncio.wait_for(running, 20)
    finally:
        await broker.shutdown()
    return home, replies


def light_on(home: Home) -> bool:
    return home.devices["bedroom_light"].endpoint(1).server("OnOff").get("OnOff") is True


def test_a_nested_command_gets_an_error_reply_and_no_traceback(caplog):
    deep = b'{"device.id": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    with caplog.at_level(logging.INFO):
        after = [("command/execute_command", deep, False),
                 ("device/bedroom_light/1/OnOff/OnOff/set", b"[" * 5000, False)]
        home, replies = asyncio.run(scenario(False, [], after))
    errors = [r["error"] for rs in replies.values() for r in rs]
    assert len(errors) == 2 and all(e["code"] == "INVALID_ARGUMENT" for e in errors)
    assert "nested too deeply" in replies["execute_command"][0]["error"]["message"]
    assert not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize("opted_in", [False, True])
def test_a_retained_command_is_not_run_at_start_unless_opted_in(opted_in):
    home, replies = asyncio.run(scenario(opted_in, [("command/execute_command", json.dumps(ON), True)], []))
    (reply,) = replies["execute_command"]
    if opted_in:
        assert reply["ok"] and light_on(home)
    else:
        assert not reply["ok"] and "retained command is not run" in reply["error"]["message"]
        assert not light_on(home)


def test_a_command_is_refused_while_the_state_cannot_be_saved():
    home, replies = asyncio.run(scenario(False, [], [("command/execute_command", json.dumps(ON), False)],
                                         can_save=lambda: False))
    (reply,) = replies["execute_command"]
    assert reply["error"]["code"] == "RESOURCE_EXHAUSTED" and not light_on(home)
