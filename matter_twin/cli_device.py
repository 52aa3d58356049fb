"""`twin device types`, `twin device clone` and `twin device export`: the catalogue of device
types, products cloned from node dumps, and node dumps of any node (a twin device directly, a
real node through python-matter-server).

A dump is python-matter-server's node JSON; Home Assistant's "Download diagnostics" of a
Matter device holds one under `data.node`. Bad input is one line, exit code 2.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import typer

from bridge.backend import ToolError
from bridge.matter_connection import MatterConnection
from clusters.clone import (
    AttributeStoreServer,
    DumpError,
    Product,
    differences,
    export_attributes,
    limit_breaches,
    product_type,
    read_dump,
)
from clusters.device import DEVICE_TYPES
from clusters.devices import create_device
from matter_twin.console import CliError, load_home
from matter_twin.extras import require

device_app = typer.Typer(name="device", no_args_is_help=True, rich_markup_mode="markdown",
                         help="The device catalogue; clone real products from node dumps; export any "
                              "node as a dump.\n\n"
                              "Examples:\n\n"
                              "    twin device types --json\n\n"
                              "    twin device clone diagnostics.json -o acme_plug.json\n\n"
                              "    twin device export kitchen_light -o kitchen_light.json\n\n"
                              "    twin device export --server ws://127.0.0.1:5580/ws --node 4 -o plug.json")

#: python-matter-server's node schema version written into twin dumps (7.0.1 writes 6).
INTERVIEW_VERSION = 6


@device_app.command("types")
def types(as_json: bool = typer.Option(False, "--json", help="JSON: one object per type."),
          as_markdown: bool = typer.Option(False, "--markdown", help="A Markdown table (docs/devices.md).")) -> None:
    """List every device type a home file can name: its key, Matter device type id and revision,
    ProductID, endpoints and clusters, whether it has physics, and the rooms it belongs in.

    Examples:

        twin device types

        twin device types --json | jq '.[] | select(.physics) | .key'

        twin device types --markdown > table.md
    """
    from twin.catalogue import catalogue, markdown
    entries = catalogue()
    if as_json:
        sys.stdout.write(json.dumps(entries, indent=1) + "\n")
    elif as_markdown:
        sys.stdout.write(markdown(entries))
    else:
        for e in entries:
            clusters = sorted({c for ep in e["endpoints"] for c in ep["servers"]} - {"Descriptor"})
            sys.stdout.write(f"{e['key']:<30} 0x{e['device_type_id']:04X} r{e['revision']} "
                             f"PID 0x{e['product_id']:04X}{' physics' if e['physics'] else '        '}  "
                             f"{', '.join(clusters)}\n")
        sys.stdout.write(f"{len(entries)} device types\n")


def node_dump(node_id: int, attributes: dict[str, Any], when: str) -> dict[str, Any]:
    """A node dump in python-matter-server's MatterNodeData shape."""
    return {"node_id": node_id, "date_commissioned": when, "last_interview": when,
            "interview_version": INTERVIEW_VERSION, "available": True, "is_bridge": False,
            "attributes": attributes, "attribute_subscriptions": []}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "product"


def _write(data: Any, output: Path | None, force: bool) -> None:
    text = json.dumps(data, indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    if output.exists() and not force:
        raise CliError(f"{output} exists; use --force to overwrite it")
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        raise CliError(f"{output}: {err.strerror or err}") from None


def describe(product: Product) -> list[str]:
    """One line per endpoint: device types, then clusters (ours, or `*` stored)."""
    device = create_device("clone", product_type("clone", product))
    lines = []
    for ep_id, ep in sorted(device.endpoints.items()):
        types = ", ".join(f"0x{d:04X} rev {r}" for d, r in product_device_types(product, ep_id))
        clusters = ", ".join(f"{s.name}{'*' if isinstance(s, AttributeStoreServer) else ''}"
                             for _, s in sorted(ep.servers.items()))
        lines.append(f"endpoint {ep_id} [{types}]: {clusters}")
    return lines


def product_device_types(product: Product, ep_id: int) -> list[tuple[int, int]]:
    raw = product.attributes.get(f"{ep_id}/29/0") or []
    return [(e["0"], e.get("1", 1)) for e in raw if isinstance(e, dict) and isinstance(e.get("0"), int)]


@device_app.command("clone")
def clone(dump: Path = typer.Argument(..., help="A node dump: python-matter-server's node JSON, or "
                                      "Home Assistant's diagnostics file of a Matter device."),
          output: Path | None = typer.Option(None, "-o", "--output",
                                             help="The product file to write (default: KEY.json)."),
          key: str | None = typer.Option(None, "--key", help="Device type name for home files "
                                         "(default: from the vendor and product names)."),
          node: int | None = typer.Option(None, "--node", help="Which node, when the dump holds several."),
          force: bool = typer.Option(False, "--force", help="Overwrite an existing product file.")) -> None:
    """Make a device type from a real product's node dump.

    The clone has the product's endpoints, device types, clusters, feature maps, attribute
    and command lists, revisions and values. Clusters the twin has servers for behave as ours
    do, with the product's features; the others (marked `*`) hold the product's values,
    typed by the Matter data model, writable where it allows (within the spec's ranges and
    lengths: a warning names any value of the product's own outside them, kept as it is), and
    answer commands with UNSUPPORTED_COMMAND. The product file is the node dump itself; name
    it in a home file:

        products:
          acme_plug: acme_plug.json
        rooms:
          - id: kitchen
            devices: [{id: plug, type: acme_plug}]

    Examples:

        twin device clone ~/Downloads/config_entry-matter-01J0.json -o acme_plug.json

        twin device clone server_dump.json --node 4 --key hall_sensor
    """
    if not dump.exists():
        raise CliError(f"{dump}: no such file")
    try:
        product = read_dump(str(dump), node)
    except DumpError as err:
        raise CliError(str(err)) from None
    key = key or _slug(product.label)
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", key):
        raise CliError(f"--key {key!r}: use letters, digits, _ . - (starting with a letter or digit)")
    if key in DEVICE_TYPES:  # a home refuses a product under a built-in type's name
        raise CliError(f"--key {key!r} is a built-in device type; choose another key for the clone")
    output = output or Path(f"{key}.json")
    clone_device = create_device("clone", product_type(key, product))
    left = differences(product.attributes, export_attributes(clone_device))
    _write(node_dump(0, product.attributes, "1970-01-01T00:00:00"), output, force)
    err = sys.stderr
    print(f"wrote {output}: {product.label} as device type {key!r}", file=err)
    for line in describe(product):
        print(f"  {line}", file=err)
    print("  (* = the product's values, stored; others behave as the twin's servers)", file=err)
    if left:
        print(f"  {len(left)} attribute(s) do not read back as dumped: " + "; ".join(left[:5]), file=err)
    breaches = limit_breaches(clone_device)
    if breaches:
        print(f"  warning: {len(breaches)} value(s) break the spec's constraints, kept as the product has "
              "them (writes there must obey): " + "; ".join(breaches), file=err)
    print(f"use it in a home file:\n  products:\n    {key}: {output}", file=err)


@device_app.command("export")
def export(device: str | None = typer.Argument(None, help="A twin device id (from the home)."),
           home: Path | None = typer.Option(None, "--home", help="Home file (default: the built-in home)."),
           server: str | None = typer.Option(None, "--server", help="python-matter-server WebSocket URL: "
                                             "export a real node (with --node) instead of a twin device."),
           node: int | None = typer.Option(None, "--node", help="Node id on --server."),
           output: Path | None = typer.Option(None, "-o", "--output", help="Write here (default: stdout)."),
           force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Write a node dump (python-matter-server's node JSON) of a twin device or a real node.

    A twin device is read directly from the home (its endpoint 0 has what the simulation
    holds; a running `twin run` node adds its commissioning clusters). A real node comes
    from python-matter-server, as it last read it. `twin device clone` takes either back.

    Examples:

        twin device export kitchen_light -o kitchen_light.json

        twin device export plug --home lab.yaml | jq '.attributes["1/6/0"]'

        twin device export --server ws://127.0.0.1:5580/ws --node 4 -o plug.json
    """
    if server is not None:
        require("matter-server", "twin device export --server")
        if node is None or device is not None:
            raise CliError("--server exports one real node: give --node ID and no DEVICE")
        _write(real_node_dump(server, node), output, force)
        return
    if device is None:
        raise CliError("name a twin DEVICE, or --server URL --node ID for a real node")
    the_home = load_home(home, None)
    if device not in the_home.devices:
        raise CliError(f"no device {device!r} in the home; devices: " + ", ".join(sorted(the_home.devices)))
    when = the_home.now.isoformat()
    _write(node_dump(0, export_attributes(the_home.device(device)), when), output, force)


def real_node_dump(url: str, node_id: int, timeout: float = 30.0) -> dict[str, Any]:
    """A node as python-matter-server holds it, in its own JSON form."""
    from matter_server.common.helpers.json import json_dumps  # noqa: PLC0415 - optional extra
    from matter_server.common.helpers.util import dataclass_to_dict  # noqa: PLC0415
    conn = MatterConnection(url, timeout)
    try:
        nodes = conn.nodes()
    except ToolError as err:
        raise CliError(f"{url}: {err.message}") from None
    finally:
        conn.close()
    if node_id not in nodes:
        raise CliError(f"{url} has no node {node_id}; nodes: " + (", ".join(map(str, sorted(nodes))) or "none"))
    data: dict[str, Any] = json.loads(json_dumps(dataclass_to_dict(nodes[node_id].node_data)))
    return data


__all__ = ["device_app", "node_dump", "real_node_dump"]
