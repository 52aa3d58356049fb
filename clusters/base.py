"""The cluster server base: one instance per cluster on an endpoint.

A server owns its attribute values (the single source of truth for device state), knows
which attributes are writable, validates writes and dispatches commands to handler
methods named exactly like the spec command (`def MoveToLevel(self, request)`).

Time: servers that change on their own (transitions, countdowns, moving covers) keep
*anchors* (start tick, start value, target). Values that move every tick (CurrentLevel
mid-transition, CountdownTime, OnTime) are derived in `get()` from the anchors and the
current tick, never stored tick by tick. Discrete changes (a transition ending, a cycle
completing) happen in `advance_to(tick)` at the tick `next_event_tick()` announced. So
stepping every tick and fast-forwarding reach byte-identical state, DataVersion included.

Changes: every method that changes a server from outside (`set`, `write`, `invoke`,
`load_state`, `power_up`; the home calls `advance_to`) first calls `changing()`, so a
home that lent the device to a fork copies it into the fork before it changes (twin/fork.py).
"""
from __future__ import annotations

import contextvars
import datetime
import functools
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import Cluster, ClusterCommand, ClusterEvent

from clusters.constraints import check_command
from clusters.status import MatterError, Status
from clusters.values import from_json, to_json, type_name

TICKS_PER_SECOND = 10
GLOBAL_ATTRIBUTES = ("GeneratedCommandList", "AcceptedCommandList", "AttributeList",
                     "FeatureMap", "ClusterRevision")
@functools.cache
def per_reader() -> frozenset[tuple[int, int]]:
    """(cluster id, attribute id) of attributes whose value depends on who reads: the accessing fabric's
    index, and FabricSceneInfo, which holds the reader's own entry even before its first scene. In
    process there is no reader fabric, so comparisons across paths or products leave them out.
    (A function: the data model builds a cluster only when asked, clusters/lazy_objects.py.)"""
    fabrics, scenes = Clusters.OperationalCredentials, Clusters.ScenesManagement
    return frozenset({(fabrics.id, fabrics.Attributes.CurrentFabricIndex.attribute_id),
                      (scenes.id, scenes.Attributes.FabricSceneInfo.attribute_id)})


@dataclass(frozen=True)
class AccessContext:
    """Who is performing the current operation, when it arrives over Matter.

    The Interaction Model sets `current_access` around each read, write and invoke; local
    callers (the simulation, tools in process) leave it None. Servers that are
    fabric-scoped or need the session (OperationalCredentials, AccessControl) read it.
    """
    auth_mode: str                  # "pase" or "case"
    fabric_index: int | None        # the accessing fabric (None on PASE before AddNOC)
    peer_node_id: int | None
    session: Any = None             # the node runtime's session object
    fabric_filtered: bool = True    # False in a read that is not fabric-filtered: a fabric-scoped
                                    # list shows every fabric's entries
    list_append: bool = False       # True in a write that appends one item (ListIndex null): the value
                                    # written is the list as it was with the item at its end


current_access: contextvars.ContextVar[AccessContext | None] = contextvars.ContextVar(
    "current_access", default=None)


def import_every_server() -> None:
    """Import every module of this package, so every server class exists (`__subclasses__`).
    Nothing else does: a device type imports its servers when a device of it is built."""
    import importlib
    import pkgutil

    import clusters
    for info in pkgutil.iter_modules(clusters.__path__):
        importlib.import_module(f"clusters.{info.name}")


class Clock(typing.Protocol):
    tick: int


class _StandaloneClock:
    """Used when a server lives outside a home (unit tests, docs)."""
    tick = 0


class ClusterServer:
    """Base class; subclasses set the class attributes below and add command handlers."""

    cluster: ClassVar[type[Cluster]]
    #: ClusterRevision this server implements.
    revision: ClassVar[int] = 1
    #: Spec names of the non-global attributes this server supports.
    attributes: ClassVar[tuple[str, ...]] = ()
    #: Spec names of attributes a client may write.
    writable: ClassVar[frozenset[str]] = frozenset()
    #: Spec names of the commands this server accepts (each has a handler method).
    commands: ClassVar[tuple[str, ...]] = ()
    #: Short human notes on cross-attribute rules, shown by get_cluster_doc.
    notes: ClassVar[tuple[str, ...]] = ()
    #: False for node-only servers (commissioning, fabrics) whose state lives in the node's
    #: storage directory, not in simulation snapshots.
    in_snapshot: ClassVar[bool] = True
    #: Attributes with the spec's "C" quality (changes omitted): a read returns the current
    #: value, but a change is never reported to subscribers (e.g. GeneralDiagnostics.UpTime).
    changes_omitted: ClassVar[frozenset[str]] = frozenset()
    #: Attributes `get()` derives from the clock or from state outside this server's stored
    #: values (a transition's CurrentLevel, a room's MeasuredValue), so they change without
    #: `set()` telling the listeners. A Matter node samples these, and only these, for its
    #: subscribers (twin/node/im/). Every attribute a `get()` override computes belongs here.
    derived: ClassVar[frozenset[str]] = frozenset()
    #: Derived attributes with the spec's "Q" quality (quieter reporting) that a node samples
    #: less often than every second: name -> seconds between samples.
    sample_seconds: ClassVar[dict[str, int]] = {}

    def __init__(self, feature_map: int = 0, **initial: Any):
        self.feature_map = int(feature_map)
        self.clock: Clock = _StandaloneClock()
        self.endpoint: Any = None  # set by Endpoint; gives access to sibling servers
        self.data_version = 0
        self.listeners: list[Callable[[ClusterServer, str], None]] = []
        self.event_sink: Callable[[ClusterServer, ClusterEvent], None] | None = None
        #: Observers of emitted events (a Matter node's IM); they keep no copy of server state.
        self.event_listeners: list[Callable[[ClusterServer, ClusterEvent], None]] = []
        self._values: dict[str, Any] = {}
        defaults = self.defaults()
        unknown = set(initial) - set(self.attributes)
        if unknown:
            raise MatterError(Status.UNSUPPORTED_ATTRIBUTE,
                              f"{self.name} has no attribute(s) {', '.join(sorted(unknown))}")
        for name in self.attributes:
            if name in initial:
                self._values[name] = self._coerce(name, initial[name])
            else:
                self._values[name] = defaults[name]

    # ---- description -------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self.cluster).__name__ if not isinstance(self.cluster, type) else self.cluster.__name__

    @property
    def id(self) -> int:
        return self.cluster.id

    def defaults(self) -> dict[str, Any]:
        """Initial value of every attribute in `attributes` (spec defaults)."""
        raise NotImplementedError

    @classmethod
    def attribute_class(cls, name: str) -> Any:
        return getattr(cls.cluster.Attributes, name)

    @classmethod
    def command_class(cls, name: str) -> type[ClusterCommand]:
        return getattr(cls.cluster.Commands, name)

    @property
    def generated_commands(self) -> tuple[str, ...]:
        out: list[str] = []
        for name in self.commands:
            response = self.command_class(name).response_type
            if response and response not in out:
                out.append(response)
        return tuple(out)

    def attribute_names(self) -> tuple[str, ...]:
        return self.attributes + GLOBAL_ATTRIBUTES

    def resolve_attribute(self, attribute: str | int) -> str:
        """Spec name of an attribute given its name (any case) or id."""
        for name in self.attribute_names():
            cls = self.attribute_class(name)
            if attribute == cls.attribute_id or (isinstance(attribute, str)
                                                  and attribute.lower() == name.lower()):
                return name
        if isinstance(attribute, str) and attribute.isdigit():
            return self.resolve_attribute(int(attribute))
        raise MatterError(Status.UNSUPPORTED_ATTRIBUTE,
                          f"{self.name} has no attribute {attribute!r}; supported: "
                          + ", ".join(self.attribute_names()))

    def resolve_command(self, command: str | int) -> str:
        for name in self.commands:
            cls = self.command_class(name)
            if command == cls.command_id or (isinstance(command, str) and command.lower() == name.lower()):
                return name
        if isinstance(command, str) and command.isdigit():
            return self.resolve_command(int(command))
        raise MatterError(Status.UNSUPPORTED_COMMAND,
                          f"{self.name} does not accept command {command!r}; accepted: "
                          + (", ".join(self.commands) or "none"))

    # ---- attributes --------------------------------------------------------------
    def read(self, attribute: str | int) -> Any:
        """The current Matter value of an attribute."""
        name = self.resolve_attribute(attribute)
        if name == "ClusterRevision":
            return self.revision
        if name == "FeatureMap":
            return self.feature_map
        if name == "AttributeList":
            return sorted(self.attribute_class(n).attribute_id for n in self.attribute_names())
        if name == "AcceptedCommandList":
            return sorted(self.command_class(n).command_id for n in self.commands)
        if name == "GeneratedCommandList":
            return sorted(self.command_class(n).command_id for n in self.generated_commands)
        return self.get(name)

    def get(self, name: str) -> Any:
        """Internal read by spec name; subclasses override for derived attributes."""
        return self._values[name]

    def write(self, attribute: str | int, data: Any) -> None:
        """A client write: checks writability, type and constraints, then stores."""
        self.changing()
        name = self.resolve_attribute(attribute)
        if name not in self.writable:
            raise MatterError(Status.UNSUPPORTED_WRITE,
                              f"{self.name}.{name} is read-only; writable: "
                              + (", ".join(sorted(self.writable)) or "none"))
        value = self._coerce(name, data)
        self.validate_write(name, value)
        self.set(name, value)
        self.after_write(name, value)

    def validate_write(self, name: str, value: Any) -> None:
        """Raise MatterError (usually CONSTRAINT_ERROR) if `value` breaks a spec constraint."""

    def after_write(self, name: str, value: Any) -> None:
        """React to a client write (e.g. FanMode driving PercentSetting)."""

    def set(self, name: str, value: Any) -> None:
        """Internal store; notifies listeners and bumps DataVersion when the value changes."""
        if self._values.get(name, _MISSING) == value and type(self._values.get(name)) is type(value):
            return
        self.changing()
        self._values[name] = value
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        for listener in self.listeners:
            listener(self, name)

    def _coerce(self, name: str, data: Any) -> Any:
        typ = self.attribute_class(name).attribute_type.Type
        return from_json(typ, data, f"{self.name}.{name}")

    def attribute_type_name(self, name: str) -> str:
        return type_name(self.attribute_class(name).attribute_type.Type)

    # ---- commands ----------------------------------------------------------------
    def invoke(self, command: str | int, fields: Any = None) -> ClusterCommand | None:
        """Run a command. `fields` is a dict (JSON) or a chip command object."""
        self.changing()
        # A spec name is already resolved (Device.invoke_on passes one): no second lookup.
        name = command if isinstance(command, str) and command in self.commands else self.resolve_command(command)
        cls = self.command_class(name)
        request = fields if isinstance(fields, cls) else from_json(cls, fields or {}, f"{self.name}.{name}")
        check_command(request, f"{self.name}.{name}", self.name)   # widths, enums, bitmaps (IM and tools)
        handler = getattr(self, name)
        return handler(request)

    # ---- events ------------------------------------------------------------------
    def emit_event(self, event: ClusterEvent) -> None:
        if self.event_sink is not None:
            self.event_sink(self, event)
        for listener in list(getattr(self, "event_listeners", ())):
            listener(self, event)

    def changing(self) -> None:
        """Called before this server changes: lets the device's home copy it into forks
        that still share it (`Device.before_change`)."""
        endpoint = self.endpoint
        if endpoint is not None and endpoint.device is not None and endpoint.device.before_change is not None:
            endpoint.device.before_change(endpoint.device)

    # ---- time --------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.clock.tick

    def next_event_tick(self) -> int | None:
        """Earliest future tick at which this server changes by itself, or None if idle.
        Answered from the server's own state, without changing it (a fork asks the servers
        it still shares with its parent)."""
        return None

    def advance_to(self, tick: int) -> None:
        """Apply the discrete changes due at or before `tick` (called at event ticks)."""

    # ---- siblings ----------------------------------------------------------------
    def attach(self) -> None:
        """Called once the whole device is composed: subscribe to siblings here."""

    def forget_fabric(self, fabric_index: int) -> None:
        """RemoveFabric took `fabric_index` away: its entries of fabric-scoped lists go with it
        (Core spec: a removed fabric's fabric-scoped data is deleted). Servers that keep
        fabric-scoped tables of their own extend this."""
        for name, value in list(self._values.items()):
            if isinstance(value, list) and any(getattr(v, "fabricIndex", None) == fabric_index for v in value):
                self.changing()
                self.set(name, [v for v in value if getattr(v, "fabricIndex", None) != fabric_index])

    def sibling(self, cluster: type[Cluster]) -> ClusterServer | None:
        """Another server on the same endpoint, if present."""
        if self.endpoint is None:
            return None
        return self.endpoint.servers.get(cluster.id)

    # ---- persistence -------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """JSON state for snapshots: attribute values plus any private anchors."""
        return {"attributes": {n: to_json(v) for n, v in self._values.items()},
                "data_version": self.data_version, **self.private_state()}

    def private_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        self.changing()
        self._values = {n: self._coerce(n, v) for n, v in state["attributes"].items()}
        self.data_version = state["data_version"]
        self.load_private_state(state)

    def load_private_state(self, state: dict[str, Any]) -> None:
        pass

    # ---- power cycles (a node's storage across `twin run` restarts) ---------------
    #: Whether this server's attributes survive a restart of the node. Servers whose state is
    #: an operation in progress (a running cycle, an energy meter, an identify timer) start
    #: afresh, as a device that lost power would.
    persists: ClassVar[bool] = True

    def saved_state(self) -> dict[str, Any]:
        """What a node stores for a restart: each stored attribute's current value (motions
        and transitions sampled where they are now) and the DataVersion."""
        return {"attributes": {n: to_json(self.get(n)) for n in self._values},
                "data_version": self.data_version}

    def power_up(self, saved: dict[str, Any]) -> None:
        """Come back from a restart with `saved` (from `saved_state`): stored values return
        (ones this server no longer has, or no longer accepts, are dropped), anything in
        motion stops where it was, then the cluster's StartUp attributes apply (`start_up`).
        DataVersion moves past the saved one, so no version names two different contents."""
        self.changing()
        for name, value in saved.get("attributes", {}).items():
            if name not in self._values:
                continue
            try:
                self._values[name] = self._coerce(name, value)
            except Exception:   # noqa: BLE001 - a value the server's type no longer accepts
                continue
        self.stop_motion()
        self.start_up()
        self.data_version = (int(saved.get("data_version", self.data_version)) + 1) & 0xFFFFFFFF

    def stop_motion(self) -> None:
        """Drop anchors of anything moving (a power cut stops it where it is)."""

    def start_up(self) -> None:
        """The cluster's StartUp* attributes (spec: applied at power-up; null keeps the
        previous value)."""

    def describe(self) -> dict[str, Any]:
        """Structure for get_device_structure / docs."""
        return {
            "id": self.id,
            "name": self.name,
            "revision": self.revision,
            "feature_map": self.feature_map,
            "attributes": [{"name": n, "id": self.attribute_class(n).attribute_id,
                            "type": self.attribute_type_name(n),
                            "writable": n in self.writable} for n in self.attribute_names()],
            "commands": [{"name": n, "id": self.command_class(n).command_id,
                          "fields": {f.Label: type_name(f.Type)
                                     for f in self.command_class(n).descriptor.Fields}}
                         for n in self.commands],
        }


class _Missing:
    pass


_MISSING = _Missing()


MATTER_EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)


def epoch_seconds(clock: Any) -> int:
    """The simulated time as Matter epoch-s (seconds since 2000-01-01 UTC); 0 for a clock that has
    no date (a server outside a home). Never the wall clock."""
    now = getattr(clock, "now", None)   # the home's VirtualClock carries the simulated date
    if not isinstance(now, datetime.datetime):
        return 0
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.UTC)
    return max(0, int((now - MATTER_EPOCH).total_seconds()))


def check_range(what: str, value: Any, low: Any = None, high: Any = None) -> None:
    """Raise CONSTRAINT_ERROR unless low <= value <= high (None bounds are open)."""
    if value is None:
        return
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{low if low is not None else '-inf'}..{high if high is not None else 'inf'}"
        raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={value} is outside {bounds}")


def feature_bits(flags: Iterable[Any]) -> int:
    out = 0
    for flag in flags:
        out |= int(flag)
    return out


__all__ = ["ClusterServer", "Clusters", "MatterError", "Status", "TICKS_PER_SECOND",
           "check_range", "feature_bits"]
