"""MQTT against real brokers on 127.0.0.1 (ephemeral ports): amqtt (the embedded broker) and
Debian's mosquitto (with a password, as a lab's broker would have). States are published and
retained, a command topic drives a device, a bad command gets an error reply and changes nothing,
and the availability topic follows the twin, last will included."""
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import aiomqtt
import pytest

from matter_twin.mqtt import MqttBridge, MqttSettings, start_broker
from twin.home import Home

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from bench_live import free_port, wait_port  # noqa: E402  (one copy, shared with the bench)

MOSQUITTO = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)
USER, PASSWORD = "twin", "s3cret pass"




class Mosquitto:
    """mosquitto on 127.0.0.1:<port>, with a password file (no anonymous clients)."""

    def __init__(self, directory: Path):
        assert MOSQUITTO, "mosquitto is needed (scripts/install-test-deps.sh installs it)"
        self.port = free_port()
        passwords = directory / "passwords"
        subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd", "-b", "-c",
                        str(passwords), USER, PASSWORD], check=True, capture_output=True)
        passwords.chmod(0o600)
        conf = directory / "mosquitto.conf"
        # As root, mosquitto would become user `mosquitto`, who cannot read the test's files.
        conf.write_text(("user root\n" if os.geteuid() == 0 else "")
                        + f"listener {self.port} 127.0.0.1\nallow_anonymous false\npassword_file {passwords}\n"
                        "persistence false\nlog_dest stderr\n")
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_port(self.port)
        except AssertionError:
            self.proc.kill()
            raise AssertionError(f"mosquitto did not start: {self.proc.communicate()[1].decode()[-500:]}") from None

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Loop:
    """An asyncio loop in a thread: where the embedded broker and the bridge run."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout=20.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class Watcher:
    """One client for the module, subscribed to the bridge's whole prefix from the start (so it
    sees the retained states as a newcomer does), publishing the test's commands. One long-lived
    client: amqtt 0.12 replays every other client's retained subscriptions to each new client, and
    can fail a connect that races another client's (un)subscribe."""

    def __init__(self, loop: Loop, port: int, prefix: str, credentials: dict):
        self.loop, self.messages, self.ready = loop, [], threading.Event()

        async def listen():
            self.client = aiomqtt.Client("127.0.0.1", port, identifier=f"test-{uuid.uuid4().hex[:12]}", **credentials)
            async with self.client:
                await self.client.subscribe(f"{prefix}/#", qos=1)
                self.ready.set()
                async for message in self.client.messages:
                    self.messages.append(message)
        self.task = loop.run(self._start(listen()))
        assert self.ready.wait(10)

    @staticmethod
    async def _start(coro):
        return asyncio.get_running_loop().create_task(coro)

    def publish(self, topic: str, payload) -> int:
        """Send; returns the index of the first message that can be an answer."""
        mark = len(self.messages)
        self.loop.run(self.client.publish(topic, payload, qos=1))
        return mark

    def wait(self, until, since: int = 0, timeout: float = 10.0) -> dict[str, list]:
        deadline = time.monotonic() + timeout
        while True:
            got: dict[str, list] = {}
            for message in self.messages[since:]:
                got.setdefault(str(message.topic), []).append(message)
            if until(got):
                return got
            assert time.monotonic() < deadline, f"not seen in {timeout} s; topics: {sorted(got)[:20]}"
            time.sleep(0.02)

    def stop(self):
        self.task.cancel()


@pytest.fixture(scope="module", params=["amqtt", "mosquitto"])
def twin(request, tmp_path_factory):
    loop = Loop()
    if request.param == "amqtt":
        port = free_port()
        broker = loop.run(start_broker(f"127.0.0.1:{port}"))
        credentials = {}
    else:
        broker = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
        port = broker.port
        credentials = {"username": USER, "password": PASSWORD}
    home = Home.default(seed=0)
    lock = threading.Lock()
    bridge = MqttBridge(home, lock, MqttSettings(url=f"mqtt://127.0.0.1:{port}", prefix=f"lab/{request.param}",
                                                 **credentials))
    stop, ready = asyncio.Event(), asyncio.Event()

    async def start():
        task = asyncio.get_running_loop().create_task(bridge.run(stop, ready))
        await asyncio.wait([task, asyncio.ensure_future(ready.wait())], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
        return task

    task = loop.run(start())
    watcher = Watcher(loop, port, bridge.prefix, credentials)
    yield {"port": port, "home": home, "lock": lock, "bridge": bridge, "watch": watcher}
    watcher.stop()

    async def finish():
        stop.set()
        await task
    loop.run(finish())
    if request.param == "amqtt":
        loop.run(broker.shutdown())
    else:
        broker.stop()
    loop.stop()


async def collect(port, credentials, topics, until, timeout=10.0):
    """A fresh client: subscribe to `topics`, gather messages until `until(messages)` holds."""
    messages: dict[str, list] = {}
    async with aiomqtt.Client("127.0.0.1", port, identifier=f"test-{uuid.uuid4().hex[:12]}", **credentials) as client:
        for topic in topics:
            await client.subscribe(topic, qos=1)

        async def gather():
            async for message in client.messages:
                messages.setdefault(str(message.topic), []).append(message)
                if until(messages):
                    return
        await asyncio.wait_for(gather(), timeout)
    return messages


def test_states_are_published_and_retained(twin):
    prefix, home, watch = twin["bridge"].prefix, twin["home"], twin["watch"]
    wanted = {f"{prefix}/status", f"{prefix}/device/kitchen_light/1/OnOff/OnOff",
              f"{prefix}/device/living_room_ac/1/Thermostat/OccupiedCoolingSetpoint",
              f"{prefix}/room/kitchen/temperature", f"{prefix}/clock"}
    with twin["lock"]:
        count = sum(len(s.attributes) for d in home.devices.values() for s in d.servers() if s.in_snapshot)
    # The watcher subscribed after the bridge published: it has everything from the retained store.
    got = watch.wait(lambda m: wanted <= set(m) and len([t for t in m if "/device/" in t]) >= count)
    assert len([t for t in got if "/device/" in t]) == count      # every device attribute has its topic
    assert all(got[t][0].retain for t in got if t.rsplit("/", 1)[0] != f"{prefix}/reply")
    assert got[f"{prefix}/status"][0].payload == b"online"
    light = json.loads(got[f"{prefix}/device/kitchen_light/1/OnOff/OnOff"][0].payload)
    assert light["value"] is False and light["tick"] >= 0 and light["virtual_time"].startswith("2025-06-01")
    assert light["wall_time"].endswith("+00:00")
    setpoint = json.loads(got[f"{prefix}/device/living_room_ac/1/Thermostat/OccupiedCoolingSetpoint"][0].payload)
    assert setpoint["unit"] == "0.01 °C"
    room = json.loads(got[f"{prefix}/room/kitchen/temperature"][0].payload)
    assert room["unit"] == "°C" and room["value"] == round(home.rooms["kitchen"].temperature, 2)


def test_a_command_topic_drives_a_device_and_its_state_follows(twin):
    prefix, home, watch = twin["bridge"].prefix, twin["home"], twin["watch"]
    args = {"device.id": "bedroom_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {},
            "request_id": "r1"}
    state = f"{prefix}/device/bedroom_light/1/OnOff/OnOff"
    since = watch.publish(f"{prefix}/command/execute_command", json.dumps(args))
    got = watch.wait(lambda m: f"{prefix}/reply/execute_command" in m
                     and any(json.loads(x.payload)["value"] for x in m.get(state, [])), since)
    reply = json.loads(got[f"{prefix}/reply/execute_command"][0].payload)
    assert reply["ok"] and reply["request_id"] == "r1"
    with twin["lock"]:
        assert home.devices["bedroom_light"].endpoint(1).server("OnOff").get("OnOff") is True
    # The /set form writes an attribute through write_attribute.
    since = watch.publish(f"{prefix}/device/living_room_light/1/LevelControl/OnLevel/set", b"200")
    got = watch.wait(lambda m: f"{prefix}/reply/write_attribute" in m, since)
    assert json.loads(got[f"{prefix}/reply/write_attribute"][0].payload)["ok"]
    with twin["lock"]:
        assert home.devices["living_room_light"].endpoint(1).server("LevelControl").get("OnLevel") == 200


def test_a_bad_command_gets_an_error_reply_and_changes_nothing(twin):
    prefix, home, watch = twin["bridge"].prefix, twin["home"], twin["watch"]
    with twin["lock"]:
        before = home.snapshot()
    bad = [
        (f"{prefix}/command/write_attribute", json.dumps({   # the AC is off: refused by the cross-cluster rule
            "device.id": "bedroom_ac", "endpoint.id": 1, "cluster.id": "FanControl", "attribute.id": "PercentSetting",
            "value": 60})),
        (f"{prefix}/command/execute_command", b"{not json"),
        (f"{prefix}/command/launch_rockets", b"{}"),
        (f"{prefix}/device/bedroom_light/1/LevelControl/CurrentLevel/set", b"300"),
    ]
    since = len(watch.messages)
    for topic, payload in bad:
        watch.publish(topic, payload)
    replies = lambda m: [x for t, xs in m.items() if "/reply/" in t for x in xs]  # noqa: E731
    got = watch.wait(lambda m: len(replies(m)) >= 4, since)
    errors = {str(x.topic).rsplit("/", 1)[1]: json.loads(x.payload)["error"] for x in replies(got)}
    assert errors["launch_rockets"]["code"] == "UNKNOWN_TOOL"
    assert errors["execute_command"]["code"] == "INVALID_ARGUMENT"
    codes = sorted(json.loads(x.payload)["error"]["code"] for x in got[f"{prefix}/reply/write_attribute"])
    assert codes == ["INVALID_IN_STATE", "UNSUPPORTED_WRITE"]
    with twin["lock"]:
        assert home.snapshot()["devices"] == before["devices"]


@pytest.mark.skipif(MOSQUITTO is None, reason="unreachable: the fixture above fails first without mosquitto")
def test_twin_run_mqtt_goes_online_and_its_last_will_says_offline(tmp_path):
    broker = Mosquitto(tmp_path)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MQTT_PASSWORD": PASSWORD}
        proc = subprocess.Popen([sys.executable, "-m", "matter_twin.cli", "run", "--no-matter", "--mqtt",
                                 f"mqtt://127.0.0.1:{broker.port}", "--mqtt-user", USER, "--mqtt-prefix", "cli"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        credentials = {"username": USER, "password": PASSWORD}
        online = lambda m: any(x.payload == b"online" for x in m.get("cli/status", []))  # noqa: E731
        asyncio.run(collect(broker.port, credentials, ["cli/status"], online, timeout=30))
        proc.send_signal(signal.SIGKILL)   # no goodbye: the broker sends the will
        proc.wait(timeout=10)
        offline = lambda m: m.get("cli/status", [None])[-1] is not None and m["cli/status"][-1].payload == b"offline"  # noqa: E731
        got = asyncio.run(collect(broker.port, credentials, ["cli/status"], offline, timeout=30))
        assert got["cli/status"][-1].retain
    finally:
        broker.stop()


def make_tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 (IP SAN), written as PEM: (ca, cert, key)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("test CA")).issuer_name(name("test CA"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - dt.timedelta(hours=1))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(name("127.0.0.1")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(2).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def test_tls_with_the_brokers_ca_and_a_password(tmp_path):
    ca, cert, key = make_tls_files(tmp_path)
    port = free_port()
    passwords = tmp_path / "passwords"
    subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd", "-b", "-c", str(passwords),
                    USER, PASSWORD], check=True, capture_output=True)
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(("user root\n" if os.geteuid() == 0 else "")
                    + f"listener {port} 127.0.0.1\ncafile {ca}\ncertfile {cert}\nkeyfile {key}\n"
                    f"allow_anonymous false\npassword_file {passwords}\npersistence false\n")
    broker = subprocess.Popen([MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_port(port)
        settings = MqttSettings(url=f"mqtts://127.0.0.1:{port}", username=USER, password=PASSWORD, ca_file=ca,
                                prefix="tls")

        async def run():
            stop, ready = asyncio.Event(), asyncio.Event()
            bridge = MqttBridge(Home.default(seed=0), threading.Lock(), settings)
            task = asyncio.ensure_future(bridge.run(stop, ready))
            await asyncio.wait([task, asyncio.ensure_future(ready.wait())], timeout=20,
                               return_when=asyncio.FIRST_COMPLETED)
            assert ready.is_set(), task.exception() if task.done() else "no connection"
            async with aiomqtt.Client("127.0.0.1", port, username=USER, password=PASSWORD,
                                      tls_context=settings.tls_context()) as client:
                await client.subscribe("tls/status")
                message = await asyncio.wait_for(anext(client.messages), 10)
            stop.set()
            await task
            return message
        message = asyncio.run(run())
        assert message.payload == b"online" and message.retain
        # Without the CA the broker's certificate is not trusted: the bridge does not connect.
        untrusted = MqttSettings(url=f"mqtts://127.0.0.1:{port}", username=USER, password=PASSWORD, prefix="tls")
        with pytest.raises(aiomqtt.MqttError):
            asyncio.run(MqttBridge(Home.default(seed=0), threading.Lock(), untrusted).run(asyncio.Event()))
    finally:
        broker.terminate()
        broker.wait(timeout=10)
