"""Clones of real products, end to end: matter.js devices (hardware/standins/devices.mjs) are
commissioned by python-matter-server in a namespace this module creates, their node dumps
captured; each dump cloned round-trips (export(clone(dump)) == dump); then `twin run` serves
clones of the light and the multi-sensor as Matter nodes, python-matter-server commissions
them and reads them back equal to the products on every attribute that is not fabric- or
network-specific (clusters.clone.SESSION_CLUSTERS)."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import yaml
from matterjs.lab import SERVER_URL, lab
from netns import REPO, wait_for_line

from clusters.clone import differences, export_attributes, load_product, product_type
from clusters.devices import create_device
from matter_twin.cli_device import real_node_dump
from matter_twin.console import codes_rows
from twin.home import Home

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server and matter.js

BASE_PORT = 5600   # clear of the lab's matter.js devices (5541-5543)


async def _commission_and_dump(codes: list[str]) -> list[dict[str, Any]]:
    """In the namespace: commission each code with python-matter-server, return its node JSON."""
    import aiohttp
    from matter_server.client.client import MatterClient
    from matter_server.common.helpers.json import json_dumps
    from matter_server.common.helpers.util import dataclass_to_dict

    async with aiohttp.ClientSession() as http:
        client = MatterClient(SERVER_URL, http)
        for _ in range(120):   # the server takes ~10 s to start
            try:
                await client.connect()
                break
            except Exception:
                await asyncio.sleep(0.5)
        ready = asyncio.Event()
        listener = asyncio.create_task(client.start_listening(ready))
        await ready.wait()
        try:
            dumps = []
            for code in codes:
                node = await client.commission_with_code(code, network_only=True)
                dumps.append(json.loads(json_dumps(dataclass_to_dict(node))))
            return dumps
        finally:
            await client.disconnect()
            listener.cancel()


def commission_and_dump(codes: list[str]) -> list[dict[str, Any]]:
    return asyncio.run(_commission_and_dump(codes))


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("clone-lab")
    with lab(workdir) as the_lab:
        kinds = ["light", "thermostat", "sensors"]
        try:
            dumps = the_lab.ns.call(commission_and_dump, [the_lab.codes[k] for k in kinds], timeout=300)
        except Exception as err:
            raise AssertionError(f"{err}\n--- server ---\n{the_lab.log('server', 3000)}") from None
        yield the_lab, dict(zip(kinds, dumps))


def test_matterjs_dumps_round_trip(captured):
    _, dumps = captured
    for kind, dump in dumps.items():
        device = create_device(kind, product_type(kind, load_product(dump, kind)))
        exported = json.loads(json.dumps(export_attributes(device)))
        assert differences(dump["attributes"], exported) == [], kind
        assert exported == dump["attributes"], kind


def test_cloned_products_commission_and_read_back_equal(captured):
    the_lab, dumps = captured
    workdir = the_lab.workdir
    home: dict[str, Any] = {"name": "clones", "products": {}, "rooms": [{"id": "lab", "devices": []}]}
    for kind in ("light", "sensors"):
        (workdir / f"{kind}.product.json").write_text(json.dumps(dumps[kind]))
        home["products"][f"mjs_{kind}"] = f"{kind}.product.json"
        home["rooms"][0]["devices"].append({"id": f"clone_{kind}", "type": f"mjs_{kind}"})
    # The multi-sensor measures the room: the room (and ambient, so nothing drifts) holds the
    # values the product reported.
    measured = {key.split("/")[1]: value for key, value in dumps["sensors"]["attributes"].items()
                if key.endswith("/0") and key.split("/")[1] in ("1024", "1026", "1029", "1069")}
    ambient = {"temperature": measured["1026"] / 100, "humidity": measured["1029"] / 100, "pm10": measured["1069"]}
    home["rooms"][0].update(ambient, daylight_lux=10 ** ((measured["1024"] - 1) / 10000))
    home["ambient"] = ambient
    home_file = workdir / "clones.yaml"
    home_file.write_text(yaml.safe_dump(home, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    by_device = {c["device"]: c for c in codes_rows(Home.load(home_file))}   # as `twin codes` prints them
    log_path = workdir / "twin.log"
    twin = the_lab.ns.popen([sys.executable, "-m", "matter_twin.cli", "run", "--home", str(home_file),
                             "--speed", "1", "--matter", "--storage", str(workdir / "twin-storage"),
                             "--base-port", str(BASE_PORT)],
                            stdout=open(log_path, "w"), stderr=subprocess.STDOUT, cwd=str(workdir), env=env)
    the_lab.processes["twin"] = twin
    try:
        wait_for_line(log_path, lambda line: line.startswith("matter: "), 90)
        served = the_lab.ns.call(commission_and_dump, [by_device[f"clone_{k}"]["manual_code"]
                                                       for k in ("light", "sensors")], timeout=300)
        # `twin device export --server URL --node ID` writes what the server holds, unchanged.
        exported = the_lab.ns.call(real_node_dump, SERVER_URL, served[0]["node_id"], timeout=120)
        assert exported["attributes"] == served[0]["attributes"]
    except Exception as err:
        raise AssertionError(f"{err}\n--- twin ---\n{log_path.read_text()[-3000:]}\n"
                             f"--- server ---\n{the_lab.log('server', 3000)}") from None
    finally:
        the_lab.stop("twin")
    pm10 = "4/1069/0"   # the twin's PM10 sensor resolves whole µg/m³ (clusters/measurement.py)
    assert abs(served[1]["attributes"][pm10] - dumps["sensors"]["attributes"][pm10]) <= 0.5
    served[1]["attributes"][pm10] = dumps["sensors"]["attributes"][pm10]
    for kind, node in zip(("light", "sensors"), served):
        assert differences(dumps[kind]["attributes"], node["attributes"]) == [], kind
