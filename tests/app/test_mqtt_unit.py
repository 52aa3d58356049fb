"""The MQTT side without a broker: URLs and options, topics and payloads, `--mqtt` without a value."""
import json

import pytest

from matter_twin.console import with_optional_values
from matter_twin.mqtt import MqttSettings, Publisher, default_prefix
from twin.changes import Change


def test_urls_give_host_port_tls_and_credentials():
    assert MqttSettings(url="mqtt://broker.lan").endpoint() == ("broker.lan", 1883, False, None, None)
    assert MqttSettings(url="mqtts://u:p%40ss@10.0.0.2").endpoint() == ("10.0.0.2", 8883, True, "u", "p@ss")
    assert MqttSettings(url="broker:1884", username="me", password="pw").endpoint() == (
        "broker", 1884, False, "me", "pw")
    assert MqttSettings().endpoint() == ("127.0.0.1", 1883, False, None, None)     # the embedded broker
    for url, problem in [("http://x", "scheme"), ("mqtt://x:99999", "port"), ("mqtt://:1883", "no host")]:
        with pytest.raises(ValueError, match=problem):
            MqttSettings(url=url).endpoint()
    with pytest.raises(ValueError, match="HOST:PORT"):
        MqttSettings(listen="localhost").endpoint()


def test_topics_and_payloads_carry_units_and_both_times():
    publisher = Publisher(default_prefix("Default home"))
    assert publisher.prefix == "matter-twin/default-home"
    changes = [Change(("attribute", "ac", 1, "Thermostat", "LocalTemperature"), 2512),
               Change(("attribute", "lamp", 1, "OnOff", "OnOff"), True),
               Change(("room", "kitchen", "pm10"), 12.5),
               Change(("event", "washer", 1, "OperationalState", "OperationCompletion"), {"completionErrorCode": 0})]
    out = publisher.messages(changes, 42, "2025-06-01 09:00:04.2", "2026-01-01T00:00:00.000+00:00")
    topics = [t for t, _, _ in out]
    assert topics == ["matter-twin/default-home/device/ac/1/Thermostat/LocalTemperature",
                      "matter-twin/default-home/device/lamp/1/OnOff/OnOff",
                      "matter-twin/default-home/room/kitchen/pm10",
                      "matter-twin/default-home/event/washer/1/OperationalState/OperationCompletion"]
    bodies = [json.loads(p) for _, p, _ in out]
    assert bodies[0] == {"value": 2512, "unit": "0.01 °C", "tick": 42, "virtual_time": "2025-06-01 09:00:04.2",
                         "wall_time": "2026-01-01T00:00:00.000+00:00"}
    assert "unit" not in bodies[1] and bodies[2]["unit"] == "µg/m³"
    assert bodies[3]["fields"] == {"completionErrorCode": 0}
    assert [r for _, _, r in out] == [True, True, True, False]     # events are not retained


def test_mqtt_without_a_url_takes_the_embedded_broker():
    optional = {"--mqtt": "embedded"}
    assert with_optional_values(["run", "--mqtt"], optional) == ["run", "--mqtt", "embedded"]
    assert with_optional_values(["run", "--mqtt", "--http", "1"], optional) == [
        "run", "--mqtt", "embedded", "--http", "1"]
    assert with_optional_values(["run", "--mqtt", "mqtt://b"], optional) == ["run", "--mqtt", "mqtt://b"]
    assert with_optional_values(["tool", "--", "--mqtt"], optional) == ["tool", "--", "--mqtt"]
