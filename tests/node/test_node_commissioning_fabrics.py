"""FabricTable and FailSafe on their own: index allocation, staging, storage, timer rules."""
import json
import os
import random

import pytest

from matter_protocol import certs
from matter_protocol.crypto import Crypto_GenerateKeypair
from twin.node.fabrics import (
    FABRICS_FILE,
    Fabric,
    FabricError,
    FabricStorageError,
    FabricTable,
    FailSafe,
    NocStatus,
    check_root_certificate,
    is_cat_subject,
)

IPK = bytes(16)


def make_fabric(index, seed=1, fabric_id=0xF1, node_id=0x10):
    rng = random.Random(seed)
    root, root_key = certs.mint_root(1, fabric_id, rng=rng)
    noc, key = certs.mint_noc(root, root_key, node_id, fabric_id, rng=rng)
    return Fabric.build(index, root.to_tlv(), None, noc.to_tlv(), key, IPK, 0xFFF1)


def test_build_maps_chain_problems_to_noc_statuses():
    rng = random.Random(2)
    root, root_key = certs.mint_root(1, 5, rng=rng)
    key = Crypto_GenerateKeypair(rng)
    not_operational, _ = certs.mint_noc(root, root_key, 0xFFFFFFFFFFFFFFFF, 5, key.public_key(), rng=rng)
    with pytest.raises(FabricError) as e:
        Fabric.build(1, root.to_tlv(), None, not_operational.to_tlv(), key, IPK, 1)
    assert e.value.status == NocStatus.kInvalidNodeOpId
    good, _ = certs.mint_noc(root, root_key, 7, 5, key.public_key(), rng=rng)
    with pytest.raises(FabricError) as e:
        Fabric.build(1, root.to_tlv(), None, good.to_tlv(), Crypto_GenerateKeypair(rng), IPK, 1)
    assert e.value.status == NocStatus.kInvalidPublicKey
    other_root, _ = certs.mint_root(2, 5, rng=rng)
    with pytest.raises(FabricError) as e:
        Fabric.build(1, other_root.to_tlv(), None, good.to_tlv(), key, IPK, 1)
    assert e.value.status == NocStatus.kInvalidNOC
    fabric = Fabric.build(3, root.to_tlv(), None, good.to_tlv(), key, IPK, 0xFFF2)
    assert (fabric.node_id, fabric.fabric_id, fabric.root_public_key) == (7, 5, root.public_key)
    assert fabric.case_info().compressed_fabric_id == certs.compressed_fabric_id(root.public_key, 5)
    with pytest.raises(certs.CertificateError):
        check_root_certificate(good.to_tlv())


def test_cat_subjects():
    assert is_cat_subject(0xFFFFFFFD_0001_0001)
    assert not is_cat_subject(0xFFFFFFFD_0001_0000)  # version 0
    assert not is_cat_subject(0x0000_0001_0001_0001)


def test_index_allocation_counts_up_and_wraps():
    table = FabricTable(max_fabrics=3)
    table.add_pending(make_fabric(table.allocate_index()))
    assert table.allocate_index() == 2
    table.next_index = 254
    table.add_pending(make_fabric(254, seed=2))
    assert table.next_index == 1 and table.allocate_index() == 2  # 1 is taken
    table.add_pending(make_fabric(2, seed=3))
    with pytest.raises(FabricError) as e:
        table.allocate_index()
    assert e.value.status == NocStatus.kTableFull


def test_committed_view_and_rollback(tmp_path):
    table = FabricTable.load(tmp_path)
    table.add_pending(make_fabric(1))
    table.commit()
    table.add_pending(make_fabric(2, seed=2, fabric_id=0xF2))
    old = table.get(1).noc
    rng = random.Random(9)
    key = Crypto_GenerateKeypair(rng)
    # A NOC under fabric 1's root (same seed, same root key) for a new key, as UpdateNOC brings.
    root, root_key = certs.mint_root(1, 0xF1, rng=random.Random(1))
    assert root.public_key == table.get(1).root_public_key
    new_noc, _ = certs.mint_noc(root, root_key, 0x99, 0xF1, key.public_key(), rng=rng)
    table.update_pending(1, new_noc.to_tlv(), None, key, 0x99)
    table.get(1).label = "kept"  # not staged: labels are not part of the commissioning steps
    table.save()
    stored = json.loads((tmp_path / FABRICS_FILE).read_text())
    assert [f["fabric_index"] for f in stored["fabrics"]] == [1]
    assert stored["fabrics"][0]["noc"] == old.hex() and stored["fabrics"][0]["label"] == "kept"
    assert table.rollback() == [2]
    assert sorted(table.fabrics) == [1] and table.get(1).noc == old and table.get(1).node_id == 0x10
    assert table.get(1).label == "kept"


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    table = FabricTable.load(tmp_path)
    table.add_pending(make_fabric(1))
    table.commit()
    table.save()
    before = (tmp_path / FABRICS_FILE).read_bytes()
    table.get(1).label = "new"

    def boom(*a):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        table.save()
    monkeypatch.undo()
    assert (tmp_path / FABRICS_FILE).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [FABRICS_FILE]


def test_storage_errors_and_reset(tmp_path):
    (tmp_path / FABRICS_FILE).write_text(json.dumps({"version": 99}))
    with pytest.raises(FabricStorageError) as e:
        FabricTable.load(tmp_path)
    assert "format version" in str(e.value)
    FabricTable.reset(tmp_path)
    assert not (tmp_path / FABRICS_FILE).exists()
    FabricTable.reset(tmp_path)  # nothing to forget: fine
    table = FabricTable.load(tmp_path)
    table.add_pending(make_fabric(1))
    table.commit()
    table.counters["reboot_count"] = 4
    table.save()
    two = FabricTable.load(tmp_path / "two")
    two.add_pending(make_fabric(1))
    two.add_pending(make_fabric(2, seed=2, fabric_id=0xF2))
    two.commit()
    two.save()
    with pytest.raises(FabricStorageError) as e:
        FabricTable.load(tmp_path / "two", max_fabrics=1)
    assert "supports 1" in str(e.value)
    FabricTable.reset(tmp_path)
    again = FabricTable.load(tmp_path)
    assert len(again) == 0 and again.counters == {"reboot_count": 4}


def test_failsafe_timer_rules():
    fs = FailSafe(max_cumulative_s=100)
    assert not fs.expired(10**9) and fs.next_timer() is None
    fs.arm(1000, 60, fabric_index=None)
    assert fs.next_timer() == 61_000 and fs.matches(None) and not fs.matches(1)
    assert not fs.expired(60_999) and fs.expired(61_000)
    fs.arm(50_000, 90)  # re-arm: from now, but never past the cumulative deadline
    assert fs.next_timer() == 101_000
    fs.pending_root = b"r"
    table = FabricTable()
    assert fs.rollback(table) == [] and not fs.armed and fs.pending_root is None
    with pytest.raises(ValueError):
        fs.arm(0, 0)


def test_the_table_writes_through_an_injected_storage():
    from twin.node.files import MemoryStorage
    storage = MemoryStorage()
    table = FabricTable.from_storage(storage)
    assert storage.data is None and len(table) == 0
    table.set_counter("reboot_count", 3)
    assert storage.data is not None and json.loads(storage.data)["counters"] == {"reboot_count": 3}
    assert FabricTable.from_storage(storage).counters == {"reboot_count": 3}
    with pytest.raises(FabricStorageError, match="^memory: unreadable"):
        FabricTable.from_storage(MemoryStorage(b"{"))
