"""The node's fabric table, the fail-safe context and their storage (Core spec 11.10, 11.18).

`FabricTable` holds every fabric this node belongs to: its certificates (RCAC, ICAC, NOC),
operational private key, IPK epoch key, admin vendor id, label, access control entries and
group key sets. It is the single source of truth behind the OperationalCredentials,
AccessControl and GroupKeyManagement attributes and behind CASE (`to_case_fabrics()`).

Staging: a fabric added by AddNOC, or a NOC replaced by UpdateNOC, is live at once (CASE must
work with it so that CommissioningComplete can arrive over CASE), but it is *uncommitted*:
`save()` writes only the committed view, `commit()` makes it permanent and `rollback()` undoes
it. Changes to committed fabrics (labels, ACL writes, key sets, removals) are not staged; the
spec rolls back only what the commissioning steps added.

`FailSafe` is the sans-IO fail-safe timer plus what commissioning staged under it (the pending
root certificate and the CSR's key pair). It runs on the caller's millisecond clock:
`arm(now_ms, seconds)`, `expired(now_ms)`, `next_timer()`.

Storage: one directory per node holds `fabrics.json` (mode 0600, private keys as PKCS#8 PEM,
certificates and keys as hex), written atomically: temp file, fsync, os.replace, fsync of the
directory. The same file keeps the node's persistent counters (e.g. RebootCount) and settings.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

from chip.clusters import Objects as Clusters
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from clusters.values import from_json, to_json
from matter_protocol.case import FabricInfo
from matter_protocol.certs import CertificateError, MatterCertificate, compressed_fabric_id, verify_chain
from matter_protocol.crypto import public_key_bytes
from twin.node.files import FileStorage, Storage

__all__ = ["Fabric", "FabricTable", "FailSafe", "FabricError", "FabricStorageError", "NocStatus",
           "FABRICS_FILE", "MIN_FABRIC_INDEX", "MAX_FABRIC_INDEX", "IPK_KEY_SET_ID",
           "is_operational_node_id", "is_cat_subject", "check_root_certificate"]

OC = Clusters.OperationalCredentials
AC = Clusters.AccessControl
GKM = Clusters.GroupKeyManagement
NocStatus = OC.Enums.NodeOperationalCertStatusEnum

FABRICS_FILE = "fabrics.json"
FORMAT_VERSION = 1
MIN_FABRIC_INDEX, MAX_FABRIC_INDEX = 1, 254
IPK_KEY_SET_ID = 0
IPK_SIZE = 16
MAX_OPERATIONAL_NODE_ID = 0xFFFFFFEFFFFFFFFF
CAT_PREFIX = 0xFFFFFFFD00000000


def is_operational_node_id(value: int) -> bool:
    return 1 <= value <= MAX_OPERATIONAL_NODE_ID


def is_cat_subject(value: int) -> bool:
    """A CASE Authenticated Tag as an ACL subject: 0xFFFFFFFD_iiii_vvvv with version != 0."""
    return value & 0xFFFFFFFF00000000 == CAT_PREFIX and value & 0xFFFF != 0


class FabricError(Exception):
    """AddNOC/UpdateNOC input that does not make a valid fabric; `status` is the NOCResponse code."""

    def __init__(self, status: IntEnum, message: str):  # a NocStatus
        super().__init__(message)
        self.status = status


class FabricStorageError(Exception):
    """The node's fabric storage file is unreadable or inconsistent; the message names it."""


def check_root_certificate(rcac: bytes) -> MatterCertificate:
    """Decode an RCAC and check it is a self-signed CA root; CertificateError says why not."""
    root = MatterCertificate.from_tlv(bytes(rcac))
    if root.cert_type != "root":
        raise CertificateError("root certificate subject has no matter-rcac-id")
    if not root.is_ca:
        raise CertificateError("root certificate is not a CA certificate")
    if root.issuer != root.subject:
        raise CertificateError("root certificate is not self-issued (issuer differs from subject)")
    root.verify_signature(root.public_key)
    return root


@dataclass
class Fabric:
    """One fabric of this node. Ids and the root key are derived from the chain at build time."""

    fabric_index: int
    rcac: bytes
    icac: bytes | None
    noc: bytes
    operational_key: ec.EllipticCurvePrivateKey
    ipk_epoch_key: bytes
    vendor_id: int
    node_id: int
    fabric_id: int
    root_public_key: bytes
    label: str = ""
    #: AccessControlEntryStruct entries of this fabric, fabricIndex filled in.
    acl: list[Any] = field(default_factory=list)
    #: GroupKeySetStruct by id, other than the IPK (set 0), epoch keys included.
    group_key_sets: dict[int, Any] = field(default_factory=dict)
    #: GroupKeyMapStruct entries of this fabric.
    group_key_map: list[Any] = field(default_factory=list)

    @classmethod
    def build(cls, fabric_index: int, rcac: bytes, icac: bytes | None, noc: bytes,
              operational_key: ec.EllipticCurvePrivateKey, ipk_epoch_key: bytes, vendor_id: int,
              at: int | None = None, **extra: Any) -> Fabric:
        """Verify NOC [-> ICAC] -> RCAC against the operational key; FabricError with the NOCResponse status."""
        try:
            leaf = MatterCertificate.from_tlv(bytes(noc))
            leaf_node_id = leaf.node_id
        except CertificateError as e:
            raise FabricError(NocStatus.kInvalidNOC, f"NOC: {e}") from None
        if leaf_node_id is None or not is_operational_node_id(leaf_node_id):
            raise FabricError(NocStatus.kInvalidNodeOpId,
                              f"NOC node id {leaf_node_id!r} is not an operational node id "
                              f"(1..{MAX_OPERATIONAL_NODE_ID:#x})")
        if leaf.public_key != public_key_bytes(operational_key):
            raise FabricError(NocStatus.kInvalidPublicKey,
                              "NOC public key is not the key from this node's CSRResponse")
        try:
            node_id, fabric_id, _ = verify_chain(noc, icac, rcac, at)
            root = MatterCertificate.from_tlv(bytes(rcac))
        except CertificateError as e:
            raise FabricError(NocStatus.kInvalidNOC, str(e)) from None
        if len(ipk_epoch_key) != IPK_SIZE:
            raise FabricError(NocStatus.kInvalidNOC, f"IPK is {len(ipk_epoch_key)} bytes; accepted: 16")
        return cls(fabric_index=fabric_index, rcac=bytes(rcac), icac=bytes(icac) if icac is not None else None,
                   noc=bytes(noc), operational_key=operational_key, ipk_epoch_key=bytes(ipk_epoch_key),
                   vendor_id=vendor_id, node_id=node_id, fabric_id=fabric_id,
                   root_public_key=root.public_key, **extra)

    @property
    def compressed_fabric_id(self) -> bytes:
        return compressed_fabric_id(self.root_public_key, self.fabric_id)

    def case_info(self) -> FabricInfo:
        return FabricInfo(fabric_index=self.fabric_index, fabric_id=self.fabric_id, node_id=self.node_id,
                          root_public_key=self.root_public_key, ipk_epoch_key=self.ipk_epoch_key,
                          rcac=self.rcac, noc=self.noc, icac=self.icac, operational_key=self.operational_key)

    # ---- storage form ----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        pem = self.operational_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()).decode()
        return {"fabric_index": self.fabric_index, "vendor_id": self.vendor_id, "label": self.label,
                "rcac": self.rcac.hex(), "icac": self.icac.hex() if self.icac is not None else None,
                "noc": self.noc.hex(), "operational_key": pem, "ipk_epoch_key": self.ipk_epoch_key.hex(),
                "acl": [to_json(e) for e in self.acl],
                "group_key_sets": [to_json(s) for _, s in sorted(self.group_key_sets.items())],
                "group_key_map": [to_json(m) for m in self.group_key_map]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fabric:
        key = serialization.load_pem_private_key(data["operational_key"].encode(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("operational key is not an EC private key")
        sets = [from_json(GKM.Structs.GroupKeySetStruct, s, "group key set") for s in data["group_key_sets"]]
        fabric = cls.build(
            int(data["fabric_index"]), bytes.fromhex(data["rcac"]),
            bytes.fromhex(data["icac"]) if data["icac"] is not None else None, bytes.fromhex(data["noc"]),
            key, bytes.fromhex(data["ipk_epoch_key"]), int(data["vendor_id"]), label=str(data["label"]),
            acl=[from_json(AC.Structs.AccessControlEntryStruct, e, "ACL entry") for e in data["acl"]],
            group_key_sets={s.groupKeySetID: s for s in sets},
            group_key_map=[from_json(GKM.Structs.GroupKeyMapStruct, m, "group key map") for m in data["group_key_map"]])
        if not MIN_FABRIC_INDEX <= fabric.fabric_index <= MAX_FABRIC_INDEX:
            raise ValueError(f"fabric index {fabric.fabric_index} outside 1..254")
        return fabric


#: The fields UpdateNOC replaces; kept per fabric until the fail-safe commits or rolls back.
_NOC_FIELDS = ("noc", "icac", "operational_key", "node_id")


class FabricTable:
    """Fabrics by index, with staging for AddNOC/UpdateNOC and atomic persistence."""

    def __init__(self, node_dir: str | os.PathLike[str] | None = None, max_fabrics: int = 16, *,
                 storage: Storage | None = None):
        """Persist to `storage`; or to `node_dir/fabrics.json`; with neither, nothing is persisted."""
        if not 1 <= max_fabrics <= MAX_FABRIC_INDEX:
            raise ValueError(f"max_fabrics {max_fabrics} outside 1..254")
        if storage is None and node_dir is not None:
            storage = FileStorage(Path(node_dir) / FABRICS_FILE)
        self.storage = storage
        self.max_fabrics = max_fabrics
        self.fabrics: dict[int, Fabric] = {}
        self.next_index = MIN_FABRIC_INDEX
        #: Persistent node counters (RebootCount, message counters ...) and settings.
        self.counters: dict[str, int] = {}
        self.settings: dict[str, Any] = {}
        self._uncommitted: set[int] = set()          # added by AddNOC, not yet committed
        self._noc_backup: dict[int, dict[str, Any]] = {}       # committed NOC fields of fabrics under UpdateNOC

    # ---- queries ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.fabrics)

    def __iter__(self) -> Iterator[Fabric]:
        return iter(self.fabrics[i] for i in sorted(self.fabrics))

    def get(self, fabric_index: int | None) -> Fabric | None:
        return self.fabrics.get(fabric_index) if fabric_index is not None else None

    def find(self, root_public_key: bytes, fabric_id: int) -> Fabric | None:
        return next((f for f in self if f.root_public_key == root_public_key and f.fabric_id == fabric_id), None)

    def label_owner(self, label: str) -> Fabric | None:
        return next((f for f in self if label and f.label == label), None)

    def is_full(self) -> bool:
        return len(self.fabrics) >= self.max_fabrics

    def to_case_fabrics(self) -> list[FabricInfo]:
        """FabricInfo for the CASE responder, uncommitted fabrics included (CommissioningComplete needs them)."""
        return [f.case_info() for f in self]

    # ---- changes ---------------------------------------------------------------------
    def allocate_index(self) -> int:
        """The next free fabric index, counting up from the last one given out and wrapping 254 -> 1."""
        if self.is_full():
            raise FabricError(NocStatus.kTableFull, f"fabric table is full ({self.max_fabrics} fabrics)")
        index = self.next_index
        while index in self.fabrics:
            index = index + 1 if index < MAX_FABRIC_INDEX else MIN_FABRIC_INDEX
        return index

    def add_pending(self, fabric: Fabric) -> None:
        """Add a fabric built by AddNOC; live at once, persisted only after commit()."""
        if fabric.fabric_index in self.fabrics:
            raise ValueError(f"fabric index {fabric.fabric_index} is in use")
        self.fabrics[fabric.fabric_index] = fabric
        self._uncommitted.add(fabric.fabric_index)
        self.next_index = fabric.fabric_index + 1 if fabric.fabric_index < MAX_FABRIC_INDEX else MIN_FABRIC_INDEX

    def update_pending(self, fabric_index: int, noc: bytes, icac: bytes | None,
                       operational_key: ec.EllipticCurvePrivateKey, node_id: int) -> None:
        """Replace a fabric's NOC (UpdateNOC); the previous one comes back on rollback()."""
        fabric = self.fabrics[fabric_index]
        if fabric_index not in self._noc_backup and fabric_index not in self._uncommitted:
            self._noc_backup[fabric_index] = {n: getattr(fabric, n) for n in _NOC_FIELDS}
        fabric.noc, fabric.icac, fabric.operational_key, fabric.node_id = (
            bytes(noc), bytes(icac) if icac is not None else None, operational_key, node_id)

    def remove(self, fabric_index: int) -> Fabric:
        fabric = self.fabrics.pop(fabric_index)
        self._uncommitted.discard(fabric_index)
        self._noc_backup.pop(fabric_index, None)
        return fabric

    def commit(self) -> None:
        self._uncommitted.clear()
        self._noc_backup.clear()

    def rollback(self) -> list[int]:
        """Undo AddNOC/UpdateNOC since the last commit; returns the indexes of removed fabrics."""
        removed = sorted(self._uncommitted)
        for index in removed:
            self.fabrics.pop(index, None)
        for index, fields in self._noc_backup.items():
            if index in self.fabrics:
                for name, value in fields.items():
                    setattr(self.fabrics[index], name, value)
        self._uncommitted.clear()
        self._noc_backup.clear()
        return removed

    # ---- persistence -----------------------------------------------------------------
    def committed_view(self) -> list[Fabric]:
        out = []
        for fabric in self:
            if fabric.fabric_index in self._uncommitted:
                continue
            backup = self._noc_backup.get(fabric.fabric_index)
            out.append(dataclasses.replace(fabric, **backup) if backup else fabric)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, "next_fabric_index": self.next_index,
                "fabrics": [f.to_json() for f in self.committed_view()],
                "counters": dict(sorted(self.counters.items())), "settings": self.settings}

    def save(self) -> None:
        """Write the committed state through the storage (no-op for a table without storage)."""
        if self.storage is None:
            return
        self.storage.save(json.dumps(self.to_json(), indent=1, sort_keys=True).encode())

    def set_counter(self, name: str, value: int) -> None:
        """Store a persistent counter now (with the committed fabrics, as `save` does)."""
        self.counters[name] = value
        self.save()

    @classmethod
    def load(cls, node_dir: str | os.PathLike[str], max_fabrics: int = 16) -> FabricTable:
        """The table kept in `node_dir` (created empty when there is none yet)."""
        directory = Path(node_dir)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        return cls.from_storage(FileStorage(directory / FABRICS_FILE), max_fabrics)

    @classmethod
    def from_storage(cls, storage: Storage, max_fabrics: int = 16) -> FabricTable:
        """The table kept in `storage` (empty when nothing was stored yet); writes go back there."""
        table = cls(max_fabrics=max_fabrics, storage=storage)
        where = storage.name
        stored = storage.load()
        if stored is None:
            return table
        try:
            data = json.loads(stored.decode())
            if data.get("version") != FORMAT_VERSION:
                raise ValueError(f"format version {data.get('version')!r}; this build reads {FORMAT_VERSION}")
            fabrics = [Fabric.from_json(f) for f in data["fabrics"]]
            table.next_index = int(data["next_fabric_index"])
            table.counters = {str(k): int(v) for k, v in data["counters"].items()}
            table.settings = dict(data["settings"])
        except FabricError as e:
            raise FabricStorageError(f"{where}: stored certificates do not verify: {e}") from None
        except Exception as e:  # corrupt JSON, missing keys, bad hex/PEM: one clear line
            raise FabricStorageError(f"{where}: unreadable fabric storage ({type(e).__name__}: {e}); "
                                     "fix or delete the file (twin run --reset-fabrics)") from None
        for fabric in fabrics:
            if fabric.fabric_index in table.fabrics:
                raise FabricStorageError(f"{where}: fabric index {fabric.fabric_index} appears twice")
            table.fabrics[fabric.fabric_index] = fabric
        if len(table.fabrics) > max_fabrics:
            raise FabricStorageError(f"{where}: holds {len(table.fabrics)} fabrics; this node supports {max_fabrics}")
        return table

    @classmethod
    def reset(cls, node_dir: str | os.PathLike[str]) -> None:
        """Forget every fabric (NOCs, ACLs, keys) kept in `node_dir`; counters and settings stay."""
        path = Path(node_dir) / FABRICS_FILE
        if not path.exists():
            return
        try:
            table = cls.load(node_dir, MAX_FABRIC_INDEX)
        except FabricStorageError:
            path.unlink()  # unreadable: forgetting it is exactly what was asked
            return
        table.fabrics.clear()
        table.save()


# --- the fail-safe context --------------------------------------------------------------

DEFAULT_FAILSAFE_EXPIRY_S = 60
MAX_CUMULATIVE_FAILSAFE_S = 900


class FailSafe:
    """The fail-safe timer and what the commissioning steps staged under it.

    Times are milliseconds on the caller's clock. The first arm fixes a cumulative deadline
    (`max_cumulative_s` later) that re-arming can never extend past.
    """

    def __init__(self, max_cumulative_s: int = MAX_CUMULATIVE_FAILSAFE_S):
        self.max_cumulative_s = max_cumulative_s
        self._clear()

    def _clear(self) -> None:
        self.armed = False
        self.expires_ms: int | None = None
        self.deadline_ms: int | None = None
        #: The fabric this context belongs to: the arming session's fabric, then AddNOC's new fabric.
        self.fabric_index: int | None = None
        self.pending_root: bytes | None = None             # AddTrustedRootCertificate
        self.pending_key: ec.EllipticCurvePrivateKey | None = None  # CSRRequest
        self.csr_for_update: bool | None = None
        self.added_fabric: int | None = None                # AddNOC
        self.updated_fabric: int | None = None              # UpdateNOC
        self.bound_session: Any = None                      # the PASE session AddNOC bound to its fabric

    def arm(self, now_ms: int, seconds: int, fabric_index: int | None = None) -> None:
        """Arm, or re-arm to `seconds` from now, never beyond the cumulative deadline."""
        if seconds <= 0:
            raise ValueError("arm for a positive number of seconds; disarm with clear()")
        if not self.armed or self.deadline_ms is None:
            self.armed = True
            self.deadline_ms = now_ms + self.max_cumulative_s * 1000
            self.fabric_index = fabric_index
        self.expires_ms = min(now_ms + seconds * 1000, self.deadline_ms)

    def expired(self, now_ms: int) -> bool:
        return self.armed and self.expires_ms is not None and now_ms >= self.expires_ms

    def next_timer(self) -> int | None:
        return self.expires_ms if self.armed else None

    def matches(self, fabric_index: int | None) -> bool:
        """Armed, and by this accessing fabric (None: a PASE session before AddNOC)."""
        return self.armed and self.fabric_index == fabric_index

    @property
    def noc_invoked(self) -> bool:
        return self.added_fabric is not None or self.updated_fabric is not None

    def commit(self, table: FabricTable) -> None:
        """CommissioningComplete: make everything staged permanent and disarm."""
        table.commit()
        self._clear()

    def rollback(self, table: FabricTable) -> list[int]:
        """Expiry or disarm: drop the pending root and key, undo AddNOC/UpdateNOC; returns removed fabrics."""
        removed = table.rollback()
        self._clear()
        return removed

    def clear(self) -> None:
        self._clear()
