"""The conformance suite's controller: the CHIP SDK's Python controller (home-assistant-chip-core's
`chip.ChipDeviceCtrl`) in one long-lived process inside the test namespace, serving the test
process over a Unix socket.

    python chip_controller.py SOCKET WORKDIR PAA_DIR

The stack starts once (its own certificate authority, fabric 1, vendor 0xFFF1, controller node
112233) and every node is commissioned once per test session. A request is a pickled
`(function name, args, kwargs)`; the function is one of this module's `op_*` coroutines, or any
module-level coroutine `module:function` (a test case's steps that must run beside the
controller: subscriptions, PASE, mDNS), called as `await function(controller, *args, **kwargs)`.
The answer is `("ok", value)`, `("status", status, cluster_status, text)` for an Interaction
Model error, or `("error", traceback)`.
"""
from __future__ import annotations

import asyncio
import importlib
import json
import sys
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any
from urllib.request import urlopen

FABRIC_ID = 1
ADMIN_VENDOR_ID = 0xFFF1
CONTROLLER_NODE_ID = 112233


@dataclass
class Controller:
    """What a request's function gets: the SDK controller and the stack objects behind it."""
    dev: Any                      # chip.ChipDeviceCtrl.ChipDeviceController
    admin: Any                    # chip.FabricAdmin.FabricAdmin (fabric 1)
    authority: Any                # chip.CertificateAuthority.CertificateAuthority
    paa_dir: str
    keep: tuple = ()              # the stack and the authority manager: collecting them shuts the controller
    extra: dict[str, Any] = field(default_factory=dict)   # controllers on other fabrics, by name


def start_stack(workdir: Path, paa_dir: str) -> Controller:
    import chip.CertificateAuthority
    import chip.native
    from chip.ChipStack import ChipStack
    chip.native.Init(999)   # a Bluetooth adapter id that does not exist: no BLE
    stack = ChipStack(persistentStoragePath=str(workdir / "chip.json"), enableServerInteractions=True)
    authorities = chip.CertificateAuthority.CertificateAuthorityManager(chipStack=stack)
    authorities.LoadAuthoritiesFromStorage()
    authority = authorities.NewCertificateAuthority()
    authority.maximizeCertChains = False
    admin = authority.NewFabricAdmin(vendorId=ADMIN_VENDOR_ID, fabricId=FABRIC_ID)
    dev = admin.NewController(nodeId=CONTROLLER_NODE_ID, paaTrustStorePath=paa_dir)
    return Controller(dev, admin, authority, paa_dir, keep=(stack, authorities))


def raise_status(value: Any) -> Any:
    """A read's per-path value, or the Interaction Model error it carries."""
    from chip.clusters.Attribute import ValueDecodeFailure
    if isinstance(value, ValueDecodeFailure):
        if value.Reason is not None:
            raise value.Reason
        raise RuntimeError(f"undecodable value {value.TLVValue!r}")
    return value


# --- the operations the NetworkDut uses ----------------------------------------------------------

async def op_commission(c: Controller, code: str, node_id: int) -> int:
    from chip.discovery import DiscoveryType
    return await c.dev.CommissionWithCode(setupPayload=code, nodeid=node_id,
                                          discoveryType=DiscoveryType.DISCOVERY_NETWORK_ONLY)


async def op_read(c: Controller, node_id: int, endpoint: int, attribute: Any) -> Any:
    from chip.clusters.ClusterObjects import ALL_CLUSTERS
    from chip.interaction_model import InteractionModelError, Status
    result = await c.dev.ReadAttribute(node_id, [(endpoint, attribute)])
    try:
        return raise_status(result[endpoint][ALL_CLUSTERS[attribute.cluster_id]][attribute])
    except KeyError:
        # No data and no status for a concrete path is not allowed; say what came back.
        raise InteractionModelError(Status.Failure) from None


async def op_read_paths(c: Controller, node_id: int, paths: list[Any], fabric_filtered: bool = True) -> dict:
    """A read of several (possibly wildcard) paths: {endpoint: {cluster name: {attribute name: value}}},
    where a path's status error appears as `("status", code)`."""
    from chip.clusters.Attribute import ValueDecodeFailure
    result = await c.dev.ReadAttribute(node_id, paths, fabricFiltered=fabric_filtered)
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for endpoint, clusters in result.items():
        for cluster, attributes in clusters.items():
            names = out.setdefault(endpoint, {}).setdefault(cluster.__name__, {})
            for attribute, value in attributes.items():
                if attribute.__name__ == "DataVersion" or not isinstance(attribute, type):
                    continue
                if isinstance(value, ValueDecodeFailure):
                    reason = value.Reason
                    value = ("status", int(getattr(reason, "status", 1)))
                names[attribute.__name__] = value
    return out


async def op_read_node(c: Controller, node_id: int) -> dict[int, dict[int, dict[int, Any]]]:
    """One wildcard read of the whole node (chunked by the DUT): {endpoint: {cluster id:
    {attribute id: value}}}; a path's error as `("status", code)`."""
    from chip.clusters.Attribute import ValueDecodeFailure
    result = await c.dev.ReadAttribute(node_id, [()])
    out: dict[int, dict[int, dict[int, Any]]] = {}
    for endpoint, clusters in result.items():
        for cluster, attributes in clusters.items():
            ids = out.setdefault(endpoint, {}).setdefault(cluster.id, {})
            for attribute, value in attributes.items():
                if not hasattr(attribute, "attribute_id"):
                    continue    # the DataVersion entry
                if isinstance(value, ValueDecodeFailure):
                    value = ("status", int(getattr(value.Reason, "status", 1)))
                ids[attribute.attribute_id] = value
    return out


async def op_subscribe_change(c: Controller, node_id: int, endpoint: int, attribute: Any, command: Any,
                              min_interval: int, max_interval: int, wait: float) -> dict[str, Any]:
    """Subscribe to one attribute, invoke `command` (which changes it), and collect the reports:
    {"granted": (min, max), "priming": value, "reports": [(seconds after the command, value)]}."""
    loop = asyncio.get_running_loop()
    reports: list[tuple[float, Any]] = []
    started = [0.0]

    def on_change(path: Any, transaction: Any) -> None:
        value = transaction.GetAttribute(path)
        loop.call_soon_threadsafe(reports.append, (loop.time() - started[0], value))

    subscription = await c.dev.ReadAttribute(node_id, [(endpoint, attribute)],
                                             reportInterval=(min_interval, max_interval),
                                             keepSubscriptions=True, autoResubscribe=False)
    try:
        from chip.clusters.ClusterObjects import ALL_CLUSTERS
        priming = subscription.GetAttributes()[endpoint][ALL_CLUSTERS[attribute.cluster_id]][attribute]
        subscription.SetAttributeUpdateCallback(on_change)
        started[0] = loop.time()
        await c.dev.SendCommand(node_id, endpoint, command)
        await asyncio.sleep(wait)
        return {"granted": subscription.GetReportingIntervalsSeconds(), "priming": priming, "reports": reports}
    finally:
        subscription.Shutdown()


#: Subscriptions the test process holds (op_subscribe): id -> (the SDK's transaction, queued reports).
SUBSCRIPTIONS: dict[int, tuple[Any, list[tuple]]] = {}


def event_record(result: Any) -> tuple:
    """An EventReadResult as ("event", endpoint, cluster id, event id, number, priority, data)."""
    header = result.Header
    return ("event", header.EndpointId, header.ClusterId, header.EventId, header.EventNumber, header.Priority.value,
            result.Data)


async def op_read_event_records(c: Controller, node_id: int, endpoint: int, event: Any, event_min: int | None = None,
                                fabric_filtered: bool = True) -> list[tuple]:
    """Every event record the node holds for one event path (event_record tuples), with an
    optional event number filter."""
    records = await c.dev.ReadEvent(node_id, [(endpoint, event, 0)], eventNumberFilter=event_min,
                                    fabricFiltered=fabric_filtered)
    return [event_record(r) for r in records]


async def op_subscribe(c: Controller, node_id: int, paths: list[tuple[int, Any]], min_interval: int,
                       max_interval: int, event_min: int | None = None) -> tuple[int, int]:
    """Subscribe to (endpoint, attribute or event class) paths and queue every report here, the
    priming one first, until op_subscription_poll takes them: (subscription id, granted max)."""
    loop = asyncio.get_running_loop()
    attributes = [(e, p) for e, p in paths if hasattr(p, "attribute_id")]
    events = [(e, p, 0) for e, p in paths if hasattr(p, "event_id")]
    subscription = await c.dev.Read(node_id, attributes=attributes or None, events=events or None,
                                    eventNumberFilter=event_min, reportInterval=(min_interval, max_interval),
                                    keepSubscriptions=True, autoResubscribe=False)
    queued: list[tuple] = []
    for endpoint, clusters in subscription.GetAttributes().items():
        for attributes_of in clusters.values():
            queued += [("attribute", endpoint, a, v) for a, v in attributes_of.items() if hasattr(a, "attribute_id")]
    queued += [event_record(r) for r in subscription.GetEvents()]

    def on_attribute(path: Any, transaction: Any) -> None:
        item = ("attribute", path.Path.EndpointId, path.AttributeType, transaction.GetAttribute(path))
        loop.call_soon_threadsafe(queued.append, item)

    subscription.SetAttributeUpdateCallback(on_attribute)
    subscription.SetEventUpdateCallback(lambda result, _: loop.call_soon_threadsafe(queued.append,
                                                                                    event_record(result)))
    key = subscription.subscriptionId
    SUBSCRIPTIONS[key] = (subscription, queued)
    return key, subscription.GetReportingIntervalsSeconds()[1]


async def op_subscription_poll(c: Controller, key: int, timeout: float) -> list[tuple]:
    """The reports queued for subscription `key`, waiting up to `timeout` s for the first."""
    _, queued = SUBSCRIPTIONS[key]
    deadline = asyncio.get_running_loop().time() + timeout
    while not queued and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)
    taken = list(queued)
    del queued[:len(taken)]
    return taken


async def op_subscription_close(c: Controller, key: int) -> None:
    subscription, _ = SUBSCRIPTIONS.pop(key)
    subscription.Shutdown()


def second_controller(c: Controller, name: str, fabric_id: int, node_id: int) -> Any:
    """Another controller, made once: on fabric 1 (a second subject of the same admin) or on a
    fabric of its own (another administrator)."""
    if name not in c.extra:
        admin = c.admin if fabric_id == FABRIC_ID else c.authority.NewFabricAdmin(vendorId=ADMIN_VENDOR_ID,
                                                                                 fabricId=fabric_id)
        c.extra[name] = admin.NewController(nodeId=node_id, paaTrustStorePath=c.paa_dir)
    return c.extra[name]


async def op_open_window(c: Controller, node_id: int, discriminator: int, enhanced: bool = True,
                         timeout: int = 180) -> dict[str, Any]:
    """Opens a commissioning window: enhanced (a fresh passcode) or basic (the device's own)."""
    from chip.ChipDeviceCtrl import ChipDeviceController
    option = (ChipDeviceController.CommissioningWindowPasscode.kTokenWithRandomPin if enhanced
              else ChipDeviceController.CommissioningWindowPasscode.kOriginalSetupCode)
    params = await c.dev.OpenCommissioningWindow(node_id, timeout, 1000, discriminator, option)
    return {"passcode": params.setupPinCode, "manual_code": params.setupManualCode}


async def op_discover(c: Controller, discriminator: int, timeout: int = 10) -> list[dict[str, Any]]:
    """Commissionable nodes advertising `discriminator` (DNS-SD, the controller's own browser)."""
    from chip.discovery import FilterType
    found = await c.dev.DiscoverCommissionableNodes(FilterType.LONG_DISCRIMINATOR, discriminator,
                                                    stopOnFirst=False, timeoutSecond=timeout)
    fields = ("instanceName", "hostName", "port", "longDiscriminator", "vendorId", "productId", "commissioningMode",
              "deviceType", "deviceName", "pairingInstruction", "pairingHint", "mrpRetryIntervalIdle",
              "mrpRetryIntervalActive", "addresses")
    # The SDK's list also holds what it saw of other nodes meanwhile: keep the ones asked for.
    return [{name: getattr(node, name, None) for name in fields} for node in found or []
            if node.longDiscriminator == discriminator]


async def op_commission_other_fabric(c: Controller, name: str, fabric_id: int, new_node_id: int,
                                     address: str, port: int, passcode: int) -> int:
    """Commission the node (whose window is open) into another fabric: PASE at its address and
    port, then the commissioning steps. (By discriminator, the SDK's commissioner reused what it
    had discovered of another node earlier in the session and sent PASE there.)"""
    other = second_controller(c, name, fabric_id, CONTROLLER_NODE_ID + fabric_id)
    await other.EstablishPASESessionIP(address, passcode, new_node_id, port)
    return await other.Commission(new_node_id)


async def op_as(c: Controller, name: str, op: str, *args: Any, **kwargs: Any) -> Any:
    """Run another op with controller `name` (made by second_controller) in place of ours."""
    other = Controller(c.extra[name], c.admin, c.authority, c.paa_dir, c.keep, c.extra)
    return await resolve(op)(other, *args, **kwargs)


async def op_make_controller(c: Controller, name: str, fabric_id: int, node_id: int) -> int:
    second_controller(c, name, fabric_id, node_id)
    return node_id


async def op_drop_controller(c: Controller, name: str) -> None:
    """Shut a controller made by second_controller down: controllers left running share the
    SDK's DNS-SD discovery and disturb later commissionings."""
    other = c.extra.pop(name, None)
    if other is not None:
        other.Shutdown()


async def op_resolve(c: Controller, node_id: int) -> tuple[str, int]:
    """The node's operational address, found again by DNS-SD (_matter._tcp)."""
    c.dev.ExpireSessions(node_id)
    await c.dev.GetConnectedDevice(node_id, allowPASE=False, timeoutMs=30000)
    return c.dev.GetAddressAndPort(node_id)


async def op_compressed_fabric_id(c: Controller) -> int:
    return c.dev.GetCompressedFabricId()


async def op_expire_sessions(c: Controller, node_id: int) -> None:
    c.dev.ExpireSessions(node_id)


async def op_write(c: Controller, node_id: int, endpoint: int, attribute_value: Any,
                   timed_ms: int | None = None) -> int:
    """Writes one attribute value (an Objects attribute instance); the path's status (the first
    failure, for a list written in chunks: replace, then append items)."""
    statuses = await c.dev.WriteAttribute(node_id, [(endpoint, attribute_value)], timedRequestTimeoutMs=timed_ms)
    return next((int(s.Status) for s in statuses if int(s.Status) != 0), 0)


async def op_invoke(c: Controller, node_id: int, endpoint: int, command: Any, timed_ms: int | None = None) -> Any:
    return await c.dev.SendCommand(node_id, endpoint, command, timedRequestTimeoutMs=timed_ms)


async def op_http_json(c: Controller, url: str) -> Any:
    """A JSON document from inside the namespace (the twin's tool API listens on its loopback)."""
    def get() -> Any:
        with urlopen(url, timeout=30) as response:
            return json.loads(response.read())
    return await asyncio.get_running_loop().run_in_executor(None, get)


async def op_http_post_json(c: Controller, url: str, body: Any) -> Any:
    """POST a JSON body inside the namespace (the twin's tool API and /faults); its JSON answer,
    error statuses included."""
    from urllib.error import HTTPError
    from urllib.request import Request

    def post() -> Any:
        request = Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            with urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except HTTPError as err:
            return json.loads(err.read())
    return await asyncio.get_running_loop().run_in_executor(None, post)


async def op_fabric_index(c: Controller) -> int:
    return c.dev.GetFabricIndexInternal()


# --- the serving loop ---------------------------------------------------------------------------

def resolve(name: str) -> Any:
    if ":" in name:
        module, func = name.split(":")
        return getattr(importlib.import_module(module), func)
    return globals()[f"op_{name}"]


async def answer(c: Controller, request: tuple[str, tuple, dict]) -> tuple:
    from chip.interaction_model import InteractionModelError
    name, args, kwargs = request
    try:
        return ("ok", await resolve(name)(c, *args, **kwargs))
    except InteractionModelError as err:
        return ("status", int(err.status), err.clusterStatus if err.hasClusterStatus else None, str(err))
    except Exception:  # noqa: BLE001 - everything goes back to the test as text
        return ("error", traceback.format_exc())


async def serve(socket_path: str, workdir: Path, paa_dir: str) -> None:
    loop = asyncio.get_running_loop()
    c = start_stack(workdir, paa_dir)
    with Listener(socket_path, family="AF_UNIX") as listener:
        print("ready", flush=True)
        conn: Connection = await loop.run_in_executor(None, listener.accept)
        while True:
            try:
                request = await loop.run_in_executor(None, conn.recv)
            except EOFError:
                break
            reply = await answer(c, request)
            try:
                conn.send(reply)
            except (TypeError, ValueError, AttributeError) as err:      # an answer that does not pickle
                conn.send(("error", f"{request[0]}: its answer cannot be sent back: {err}"))
    c.dev.Shutdown()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
