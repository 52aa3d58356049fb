"""The lazily built data model (clusters/lazy_objects.py) is the real one, class for class.

The test process imports chip.clusters.Objects whole, as every process does that never calls
`install()`; a subprocess installs the lazy model and describes what it builds, so the two
descriptions can be compared. The subprocesses share one cache directory per test session.
"""
import json
import marshal
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from clusters import lazy_objects

REPO = Path(__file__).resolve().parents[2]

#: Describes the data model: run here (the whole module) and in a subprocess (the lazy one).
DESCRIBE = r'''
def describe():
    import enum
    from chip.clusters import ClusterObjects as CO, Objects

    def fields(cls):
        try:
            return [[f.Label, f.Tag, str(f.Type)] for f in cls.descriptor.Fields]
        except NotImplementedError:
            return None

    def members(ns):
        return sorted((n, v) for n, v in vars(ns).items() if isinstance(v, type)) if ns else []

    model = {}
    for name in sorted(n for n in dir(Objects) if isinstance(getattr(Objects, n), type)
                       and getattr(Objects, n).__module__ == "chip.clusters.Objects"):
        cls = getattr(Objects, name)
        entry = {"id": getattr(cls, "id", None), "fields": fields(cls) if hasattr(cls, "descriptor") else None}
        for n, a in members(getattr(cls, "Attributes", None)):
            entry[f"A.{n}"] = [a.attribute_id, str(a.attribute_type.Type), a.must_use_timed_write]
        for n, c in members(getattr(cls, "Commands", None)):
            entry[f"C.{n}"] = [c.command_id, c.is_client, c.response_type, fields(c)]
        for n, e in members(getattr(cls, "Events", None)):
            entry[f"E.{n}"] = [e.event_id, fields(e)]
        for n, s in members(getattr(cls, "Structs", None)):
            entry[f"S.{n}"] = fields(s)
        for kind in ("Enums", "Bitmaps"):
            for n, e in members(getattr(cls, kind, None)):
                entry[f"{kind}.{n}"] = [[m.name, int(m.value)] for m in e] if issubclass(e, enum.Enum) else None
        entry["docs"] = sorted([c.__qualname__, c.__doc__] for ns in (cls, *(v for _, v in members(cls)))
                               for _, c in [("", ns), *members(ns)])
        model[name] = entry
    return {"names": sorted(n for n in dir(Objects) if not n.startswith("_") and n != "__all__"),
            "model": model,
            "registries": {r: registry(getattr(CO, r)) for r in lazy_objects._REGISTRIES}}


def registry(entries):
    """A registry's entries from the model (other code may register classes of its own)."""
    ours = lambda cls: cls.__module__ == "chip.clusters.Objects"  # noqa: E731
    out = {}
    for key, value in entries.items():
        if isinstance(value, dict):
            if any(ours(c) for c in value.values()):
                out[str(key)] = sorted(str(k) for k, c in value.items() if ours(c))
        elif ours(value):
            out[str(key)] = value.__name__
    return out


def decode():
    """What chip's own controller code makes of a report, through its indexes."""
    import chip.clusters as package
    from chip.clusters import Attribute, Command, Objects
    from chip.tlv import uint
    Attribute._BuildAttributeIndex()
    Attribute._BuildClusterIndex()
    Attribute._BuildEventIndex()
    cache = Attribute.AttributeCache(returnClusterObject=False)
    cache.UpdateTLV(Attribute.AttributePath(1, Objects.OnOff.id, 0), 3, True)
    cache.UpdateTLV(Attribute.AttributePath(0, Objects.Descriptor.id, 0), 4, [{0: uint(0x0100), 1: uint(3)}])
    view = cache.GetUpdatedAttributeCache()
    dtl = view[0][Objects.Descriptor][Objects.Descriptor.Attributes.DeviceTypeList]
    toggle = Command.FindCommandClusterObject(True, Command.CommandPath(1, Objects.OnOff.id, 2))
    return {"indexes": [len(Attribute._AttributeIndex), len(Attribute._ClusterIndex), len(Attribute._EventIndex)],
            "onoff": view[1][Objects.OnOff][Objects.OnOff.Attributes.OnOff],
            "device_types": [[d.deviceType, d.revision] for d in dtl],
            "same_struct_class": type(dtl[0]) is Objects.Descriptor.Structs.DeviceTypeStruct,
            "toggle": toggle is Objects.OnOff.Commands.Toggle,
            "package_forwards": package.LevelControl is Objects.LevelControl}
'''

LAZY = DESCRIBE + r'''
import json, sys
from clusters import lazy_objects
assert lazy_objects.install()
from chip.clusters import Objects
# every cluster's id, from the source (Globals, the one class without an id, is not a cluster)
ids = {name: lazy_objects.cluster_id(name) for name in lazy_objects._model.parts.units if name != "Globals"}
by_ids = lazy_objects.built()
assert getattr(lazy_objects.CLUSTER_ID, "OnOff") == ids["OnOff"]
Objects.OnOff   # one class, and what it names
first = lazy_objects.built()
decoded = decode()     # chip's indexes list the module (dir) and so build every class
lazy_objects.load_all()
print(json.dumps({"ids": ids, "built_by_ids": by_ids, "first": first, "decode": decoded, **describe()}))
'''


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


def run(code: str, cache: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache)}
    env.pop(lazy_objects.SWITCH, None)
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


WARM = """
from clusters import lazy_objects
assert lazy_objects.install()
lazy_objects.load_all()
print("{}")
"""


@pytest.fixture(scope="module")
def lazy(model_cache: Path) -> dict:
    run(WARM, model_cache)   # fills the caches: the run below builds from them, as every later run does
    return run(LAZY, model_cache)


def here() -> dict:
    assert not lazy_objects.installed()   # tests never install it in their own process
    namespace: dict = {"lazy_objects": lazy_objects}
    exec(DESCRIBE, namespace)
    return {"decode": namespace["decode"](), **namespace["describe"]()}


def test_the_lazy_model_builds_a_class_and_only_what_it_names(lazy):
    assert lazy["first"] == ["OnOff"]


def test_the_lazy_model_is_the_whole_model_class_for_class(lazy):
    whole = here()
    assert lazy["names"] == whole["names"]
    assert len(lazy["model"]) == 125 and set(lazy["model"]) == set(whole["model"])
    for name in whole["model"]:   # one cluster at a time, so a difference names its cluster
        assert lazy["model"][name] == whole["model"][name], name
    assert lazy["registries"] == whole["registries"]


def test_cluster_ids_are_the_classes_ids_and_build_no_class(lazy):
    whole = here()["model"]
    assert lazy["built_by_ids"] == []
    assert lazy["ids"] == {name: entry["id"] for name, entry in whole.items() if name != "Globals"}
    assert len(lazy["ids"]) == 124 and whole["Globals"]["id"] is None
    # the same answers without the lazy model (this process imports the model whole)
    assert lazy_objects.cluster_id("OnOff") == lazy_objects.CLUSTER_ID.OnOff == lazy["ids"]["OnOff"]
    for name in ("Globals", "NoSuchCluster", "__deepcopy__"):
        with pytest.raises(AttributeError):
            getattr(lazy_objects.CLUSTER_ID, name)


def test_chip_decodes_a_report_with_the_lazy_model(lazy):
    whole = here()["decode"]
    assert lazy["decode"] == whole
    assert whole["onoff"] is True and whole["device_types"] == [[0x0100, 3]]
    assert whole["same_struct_class"] and whole["toggle"] and whole["package_forwards"]


FAKE = '''"""A generated module in miniature."""
import typing
from dataclasses import dataclass

__all__ = ["Globals", "Thing"]


class Globals:
    class Enums:
        X = 7


@dataclass
class Thing:
    id: typing.ClassVar[int] = 0x0042
    value: int = Globals.Enums.X
    made = staticmethod(lambda: Other())


class Other:
    pass
'''


def fake(tmp_path: Path, text: str = FAKE) -> Path:
    path = tmp_path / "Objects.py"
    path.write_text(text)
    return path


def build(parts: lazy_objects._Split) -> tuple[types.ModuleType, lazy_objects._Model]:
    module = types.ModuleType("fake")
    exec(marshal.loads(parts.header), module.__dict__)
    return module, lazy_objects._Model(module, parts)


def test_a_class_is_built_after_the_classes_it_names_and_without_all(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    parts = lazy_objects.load_split(fake(tmp_path))
    assert parts.ids == {0x42: "Thing"} and parts.needs == {"Globals": [], "Thing": ["Globals", "Other"], "Other": []}
    module, model = build(parts)
    thing = model.build("Thing")
    assert thing().value == 7 and type(thing.made()) is module.Other
    assert "__all__" not in vars(module) and "typing" in vars(module)
    assert model.built() == ["Globals", "Thing", "Other"]
    assert thing.__init__.__annotations__ == {"value": int, "return": None}   # not strings


def test_a_corrupt_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = fake(tmp_path)
    made = lazy_objects.load_split(path)
    (cached,) = (tmp_path / "cache" / "matter-twin").glob("objects-*.marshal")
    cached.write_bytes(cached.read_bytes()[:100])   # a write cut short
    again = lazy_objects.load_split(path)
    assert again.units == made.units and again.needs == made.needs
    assert marshal.loads(cached.read_bytes())["units"] == made.units   # whole again
    cached.write_bytes(b"not marshal at all")
    assert lazy_objects.load_split(path).units == made.units


def test_a_stale_cache_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = fake(tmp_path)
    lazy_objects.load_split(path)
    path.write_text(FAKE + "\n\nclass Added:\n    pass\n")   # another size (and mtime)
    assert "Added" in lazy_objects.load_split(path).units
    assert len(list((tmp_path / "cache" / "matter-twin").glob("objects-*.marshal"))) == 2


def test_the_method_cache_survives_corruption_and_gives_the_same_classes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    parts = lazy_objects.load_split(fake(tmp_path))
    _, model = build(parts)
    model.build("Thing")
    (methods,) = (tmp_path / "cache" / "matter-twin").glob("dataclass-methods-*.marshal")
    assert marshal.loads(methods.read_bytes())["codes"]   # the compiled __init__, __repr__, __eq__
    methods.write_bytes(b"\x00garbage")
    _, model = build(parts)
    thing = model.build("Thing")
    assert repr(thing(3)) == "Thing(value=3)" and thing(3) == thing(3)
    import dataclasses
    import inspect
    assert "exec" not in vars(dataclasses) and dataclasses.inspect is inspect   # only while building


def test_a_module_that_is_not_imports_and_classes_is_refused(tmp_path):
    with pytest.raises(ValueError, match="neither an import nor a class"):
        lazy_objects.split(FAKE + "\nX = Thing()\n", "Objects.py")


def test_without_a_home_directory_nothing_is_cached_and_the_model_still_builds(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert lazy_objects.cache_dir() is None
    _, model = build(lazy_objects.load_split(fake(tmp_path)))
    assert model.build("Thing")().value == 7
