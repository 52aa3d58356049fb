"""`twin run --mqtt [URL]`: the home over MQTT, a subscriber of the home's change stream.

Topics, under a prefix (default `matter-twin/<home name as a slug>`):

- `<p>/status`  `online` / `offline`, retained; `offline` is also the connection's last will, so a
  twin that dies is shown offline by the broker.
- `<p>/device/<device>/<endpoint>/<Cluster>/<Attribute>`  retained, one per device attribute:
  `{"value", "unit" (when the spec gives one), "tick", "virtual_time", "wall_time"}`.
- `<p>/room/<room>/<quantity>`  retained, temperature / humidity / illuminance / pm10 in °C, %RH,
  lux, µg/m³ with the same fields.
- `<p>/clock`  retained: tick, virtual and wall time, speed and pause.
- `<p>/event/<device>/<endpoint>/<Cluster>/<Event>`  not retained: `{"fields", ...}`.
- `<p>/command/<tool>`  a tool call: the payload is the tool's JSON arguments (plus an optional
  `request_id`); the answer, `{"ok": true, ...}` or the tool's structured error, goes to
  `<p>/reply/<tool>`, with the request's `request_id`. MQTT 3.1.1, which every broker speaks.
- `<p>/device/<device>/<endpoint>/<Cluster>/<Attribute>/set`  a JSON value: `write_attribute`,
  answered on `<p>/reply/write_attribute`.

A command the broker delivers as *retained* (published with the retain flag, so the broker hands
it to every new subscriber) is not run, only answered with an error: it would run again at every
start of the twin (a light that starts on came up off). `retained_commands=True`
(`--mqtt-retained-commands`) runs them. Payloads are parsed off the loop by the one user-input
parser (`twin.schema.load_text`: depth, size), so a nested or huge payload is an error reply.

Commands go through `call_tool`, so MQTT has the tools' validation, rules and errors, and a
refused command changes nothing. Values that move every tick (room values, a level mid-
transition) are sampled every `sample_s` wall seconds (the change stream's rule); stored values
are published as they change. With no URL an embedded broker (amqtt) listens on 127.0.0.1.
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import re
import ssl
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.backend import INVALID_ARGUMENT, ToolError
from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters.units import unit_of
from matter_twin.defaults import DEFAULT_EMBEDDED
from matter_twin.http import refuse_unsaved
from twin.changes import ROOM_UNITS, Batch, Change, ChangeStream, room_value
from twin.clock import Pace
from twin.ratelog import RateLimitedLog
from twin.schema import UserFileError, load_text

log = logging.getLogger(__name__)
#: What clients cause (retained commands, payloads refused): a line per kind and 10 s.
client_log = RateLimitedLog(log)

#: How often the publisher takes its batch from the stream (wall seconds).
PUBLISH_PERIOD_S = 0.1


@dataclass
class MqttSettings:
    """Where and how to connect. `url` None: start the embedded broker on `listen`."""
    url: str | None = None
    username: str | None = None
    password: str | None = None
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    insecure: bool = False
    prefix: str | None = None
    sample_s: float = 1.0
    listen: str = DEFAULT_EMBEDDED
    retained_commands: bool = False   # run commands the broker delivers as retained (see the module doc)

    def endpoint(self) -> tuple[str, int, bool, str | None, str | None]:
        """(host, port, tls, username, password) from the URL; ValueError names what is wrong."""
        if self.url is None:
            host, port = split_host_port(self.listen, "--mqtt-listen")
            return host, port, False, self.username, self.password
        parsed = urllib.parse.urlsplit(self.url if "://" in self.url else f"mqtt://{self.url}")
        if parsed.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
            raise ValueError(f"--mqtt {self.url}: scheme {parsed.scheme!r} is not mqtt:// or mqtts://")
        if not parsed.hostname:
            raise ValueError(f"--mqtt {self.url}: no host; e.g. mqtt://127.0.0.1:1883")
        tls = parsed.scheme in ("mqtts", "ssl") or self.ca_file is not None
        try:
            port = parsed.port or (8883 if tls else 1883)
        except ValueError:
            raise ValueError(f"--mqtt {self.url}: the port is not a number 1..65535") from None
        username = self.username or (urllib.parse.unquote(parsed.username) if parsed.username else None)
        password = self.password or (urllib.parse.unquote(parsed.password) if parsed.password else None)
        return parsed.hostname, port, tls, username, password

    def tls_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        if self.cert_file is not None:
            context.load_cert_chain(str(self.cert_file), str(self.key_file) if self.key_file else None)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


def _optional(module: str) -> Any:
    """aiomqtt and amqtt are the `mqtt` extra: imported when MQTT is asked for, with a clear error."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise OSError(f"MQTT needs {module.split('.')[0]}: pip install 'matter-twin[mqtt]'") from None


def split_host_port(text: str, option: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{option} {text!r}: expected HOST:PORT, e.g. 127.0.0.1:1883")
    return host.strip("[]"), int(port)


def default_prefix(home_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", home_name.lower()).strip("-") or "home"
    return f"matter-twin/{slug}"


def _topic_part(text: Any) -> str:
    """MQTT wildcards and separators never appear inside one level."""
    return re.sub(r"[+#/]", "_", str(text))


class Publisher:
    """Turns change batches into (topic, payload, retain) messages; reads no clock itself
    (wall time comes from the caller)."""

    def __init__(self, prefix: str):
        self.prefix = prefix.rstrip("/")

    def topic(self, change: Change) -> str:
        key = change.key
        if key[0] == "room":
            return f"{self.prefix}/room/{_topic_part(key[1])}/{key[2]}"
        kind = "device" if key[0] == "attribute" else "event"
        return f"{self.prefix}/{kind}/{_topic_part(key[1])}/{key[2]}/{key[3]}/{key[4]}"

    def messages(self, changes: list[Change], tick: int, virtual_time: str,
                 wall_time: str) -> list[tuple[str, bytes, bool]]:
        stamp = {"tick": tick, "virtual_time": virtual_time, "wall_time": wall_time}
        out = []
        for change in changes:
            key = change.key
            if key[0] == "event":
                body: dict[str, Any] = {"fields": change.value, **stamp}
            else:
                unit = ROOM_UNITS[key[2]] if key[0] == "room" else unit_of(key[3], key[4])
                body = {"value": change.value, **({"unit": unit} if unit else {}), **stamp}
            out.append((self.topic(change), json.dumps(body, ensure_ascii=False).encode(), key[0] != "event"))
        return out

    def clock(self, tick: int, virtual_time: str, wall_time: str, pace: Pace | None) -> tuple[str, bytes, bool]:
        body = {"tick": tick, "virtual_time": virtual_time, "wall_time": wall_time,
                **(pace.to_json() if pace is not None else {})}
        return f"{self.prefix}/clock", json.dumps(body).encode(), True


def wall_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


async def start_broker(listen: str) -> Any:
    """The embedded broker (amqtt) on `listen` (HOST:PORT), anonymous, for `--mqtt` without a URL."""
    Broker = _optional("amqtt.broker").Broker
    host, port = split_host_port(listen, "--mqtt-listen")
    broker = Broker({"listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}"}},
                     "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}})
    try:
        await broker.start()
    except Exception as err:   # amqtt wraps the OSError (port in use) in its own errors
        raise OSError(f"the embedded MQTT broker cannot listen on {host}:{port}: {err}") from None
    return broker


class MqttBridge:
    """One connection: publishes the home and answers commands, until `stop` is set."""

    def __init__(self, home: Any, lock: Any, settings: MqttSettings, pace: Pace | None = None,
                 stream: ChangeStream | None = None):
        self.home = home
        self.lock = lock
        self.settings = settings
        self.pace = pace
        self.stream = stream if stream is not None else ChangeStream(home)
        self.publisher = Publisher(settings.prefix or default_prefix(home.name))
        self.backend = TwinBackend(home)
        self.session = Session()
        self.published = 0   # messages sent (for the bench)
        #: Whether a change made now would be saved (set by `twin run` with nodes; None: always).
        self.can_save: Any = None

    @property
    def prefix(self) -> str:
        return self.publisher.prefix

    async def run(self, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
        aiomqtt = _optional("aiomqtt")
        host, port, tls, username, password = self.settings.endpoint()
        status = f"{self.prefix}/status"
        client = aiomqtt.Client(host, port, username=username, password=password,
                                identifier=f"matter-twin-{id(self):x}",
                                protocol=aiomqtt.ProtocolVersion.V311,   # every broker speaks it (amqtt: only it)
                                will=aiomqtt.Will(status, b"offline", qos=1, retain=True),
                                tls_context=self.settings.tls_context() if tls else None)
        loop = asyncio.get_running_loop()
        with self.lock:
            sub = self.stream.subscribe(self.settings.sample_s)
        try:
            async with client:
                await client.subscribe(f"{self.prefix}/command/+", qos=1)
                await client.subscribe(f"{self.prefix}/device/+/+/+/+/set", qos=1)
                with self.lock:
                    sub.take(loop.time())   # the first samples: sent below with everything
                    changes = list(self.stream.attributes()) + list(_rooms(self.home))
                    first = Batch(self.home.clock.tick, self.home.clock.format(), changes)
                await self._send(client, first)
                await client.publish(status, b"online", qos=1, retain=True)
                if ready is not None:
                    ready.set()
                commands = loop.create_task(self._commands(client))
                try:
                    while not stop.is_set():
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(stop.wait(), PUBLISH_PERIOD_S)
                        with self.lock:
                            batch = sub.take(loop.time())
                        if batch is not None:
                            await self._send(client, batch)
                    await client.publish(status, b"offline", qos=1, retain=True)
                finally:
                    commands.cancel()
                    await asyncio.gather(commands, return_exceptions=True)
        finally:
            with self.lock:
                sub.close()

    async def _send(self, client: Any, batch: Batch) -> None:
        wall = wall_now()
        messages = self.publisher.messages(batch.changes, batch.tick, batch.time, wall)
        messages.append(self.publisher.clock(batch.tick, batch.time, wall, self.pace))
        for topic, payload, retain in messages:
            await client.publish(topic, payload, qos=0, retain=retain)
        self.published += len(messages)

    async def _commands(self, client: Any) -> None:
        async for message in client.messages:
            try:
                await self._command(client, message)
            except _optional("aiomqtt").MqttError:
                raise
            except Exception:   # one bad request never ends the bridge
                log.exception("MQTT command on %s failed", message.topic)

    async def _command(self, client: Any, message: Any) -> None:
        levels = str(message.topic)[len(self.prefix) + 1:].split("/")
        request_id = None
        if levels[0] == "command" and len(levels) == 2:
            tool = levels[1]
            args, error = await _json(message.payload, "the arguments of the tool, a JSON object")
            if isinstance(args, dict):
                request_id = args.pop("request_id", None)
            elif error is None:
                error = ToolError(INVALID_ARGUMENT, "the payload must be a JSON object of the tool's arguments")
        else:   # device/<device>/<endpoint>/<Cluster>/<Attribute>/set
            tool = "write_attribute"
            value, error = await _json(message.payload, "the attribute's new value as JSON, e.g. 50 or true")
            endpoint = int(levels[2]) if levels[2].isdigit() else levels[2]
            args = {"device.id": levels[1], "endpoint.id": endpoint, "cluster.id": levels[3],
                    "attribute.id": levels[4], "value": value}
        if error is None and message.retain and not self.settings.retained_commands:
            client_log.warning("retained", asyncio.get_running_loop().time() * 1000,
                               "MQTT: a retained command on %s was not run (clear it with an empty retained "
                               "message, or start with --mqtt-retained-commands)", message.topic)
            error = ToolError(INVALID_ARGUMENT, "a retained command is not run: the broker would deliver it again "
                              "at every start; publish commands without the retain flag (clear this one with an "
                              "empty retained message), or start the twin with --mqtt-retained-commands")
        unsaved = refuse_unsaved(tool, self.can_save) if error is None else None
        if error is not None:
            result: dict[str, Any] = {"ok": False, "error": error.to_json()}
        elif unsaved is not None:
            result = unsaved
        else:
            result = await asyncio.to_thread(self._call, tool, args)
        if request_id is not None:
            result["request_id"] = request_id
        await client.publish(f"{self.prefix}/reply/{_topic_part(tool)}",
                             json.dumps(result, ensure_ascii=False).encode(), qos=1)

    def _call(self, tool: str, args: Any) -> dict[str, Any]:
        with self.lock:
            return call_tool(self.backend, tool, args, self.session)


async def _json(payload: Any, what: str) -> tuple[Any, ToolError | None]:
    """The payload parsed (in a worker thread, with the depth and size checks of every user input),
    or the error to reply with."""
    raw = bytes(payload) if not isinstance(payload, (str, bytes)) else payload
    try:
        return await asyncio.to_thread(load_text, raw, "payload", True), None
    except (UserFileError, TypeError) as err:
        problem = err.problem if isinstance(err, UserFileError) else str(err)
        return None, ToolError(INVALID_ARGUMENT, f"the payload is not JSON or not accepted ({problem}); "
                                                 f"expected {what}")


def _rooms(home: Any) -> list[Change]:
    return [Change(("room", room_id, q), room_value(room, q)) for room_id, room in home.rooms.items()
            for q in ROOM_UNITS]
