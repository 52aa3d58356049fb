"""The Matter data model, `chip.clusters.Objects`, built one class at a time on first use.

Importing `chip.clusters.Objects` builds all of its 2,606 dataclasses: about 1.3 s of CPU, most
of a command's start-up, when a command touches a few dozen clusters. `install()` (the `twin`
command runs it first) puts a module in its place whose classes are built from the same source
file when first asked for:

- Objects.py is split once (`ast`) into its imports, run at once, and one code object per
  top-level class, compiled with the file's own name and line numbers so tracebacks stay right.
  The split is cached (marshal) in the user's cache directory, keyed on the file and the Python
  version; a missing, stale or unreadable cache is rebuilt.
- A class is built once per process, under a lock, after the classes its body names (a class
  body and a lambda look names up in the module's dict, which skips `__getattr__`). Every user,
  chip's own controller code included, gets the same class objects.
- chip keeps registries that the classes fill as they are built (`ClusterObjects.ALL_CLUSTERS`
  and the like). They are replaced by dicts that build every class on their first read from
  outside, so code that looks a cluster up by id is right without knowing about any of this.
  `dir()` lists every class and `getattr` builds it, so chip's `inspect.getmembers` indexes
  are whole too. Only `vars()` of the module shows what is built so far.

Nothing here changes a class; without `install()` everything works the same, only slower.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import inspect
import marshal
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

NAME = "chip.clusters.Objects"
#: Set to 0 to import the data model whole, as without `install()`.
SWITCH = "TWIN_LAZY_MODEL"
_FORMAT = 4   # bump when the cached split's or methods' shape changes
_REGISTRIES = ("ALL_CLUSTERS", "ALL_ATTRIBUTES", "ALL_ACCEPTED_COMMANDS", "ALL_GENERATED_COMMANDS")


class _Split:
    """Objects.py cut into its imports and one code object per top-level class."""

    def __init__(self, header: bytes, units: dict[str, bytes], needs: dict[str, list[str]],
                 ids: dict[int, str], key: str = "") -> None:
        self.key = key           # of the source file and the Python version (load_split)
        self.header = header     # marshalled code of the imports
        self.units = units       # class name -> marshalled code of its statement
        self.needs = needs       # class name -> the other classes its statement names
        self.ids = ids           # cluster id -> class name


def split(source: str, filename: str) -> _Split:
    """Cut the generated module; ValueError if it holds anything but imports and classes."""
    tree = ast.parse(source, filename)
    header: list[ast.stmt] = []
    units: dict[str, ast.ClassDef] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            units[stmt.name] = stmt
        elif isinstance(stmt, ast.Import | ast.ImportFrom) and not units:
            header.append(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or _is_all(stmt):
            continue   # the licence docstring; `__all__` would make `import *` build every class
        else:
            raise ValueError(f"{filename}:{stmt.lineno}: a statement that is neither an import nor a class")
    needs = {name: sorted({n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} & units.keys() - {name})
             for name, stmt in units.items()}
    ids = {}
    for name, stmt in units.items():
        for item in stmt.body:   # `id: typing.ClassVar[int] = 0x0006` in a cluster class
            if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == "id"
                    and isinstance(item.value, ast.Constant) and isinstance(item.value.value, int)):
                ids[item.value.value] = name
    # dont_inherit: this module's `from __future__ import annotations` must not turn the
    # model's annotations into strings
    return _Split(marshal.dumps(compile(ast.Module(header, []), filename, "exec", dont_inherit=True)),
                  {name: marshal.dumps(compile(ast.Module([stmt], []), filename, "exec", dont_inherit=True))
                   for name, stmt in units.items()}, needs, ids)


def _is_all(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)


def cache_dir() -> Path | None:
    """~/.cache/matter-twin (or under $XDG_CACHE_HOME); None without a home: nothing is cached."""
    try:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "matter-twin"
    except RuntimeError:
        return None


def _key(path: Path) -> str:
    st = path.stat()
    raw = f"{_FORMAT}|{path}|{st.st_size}|{st.st_mtime_ns}|{importlib.util.MAGIC_NUMBER.hex()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def load_split(path: Path) -> _Split:
    """The split of `path`, from the cache when it is there and whole, else made and cached."""
    key = _key(path)
    folder = cache_dir()
    cached = folder / f"objects-{key}.marshal" if folder else None
    try:
        data = marshal.loads(cached.read_bytes()) if cached else {}
        if data["key"] == key:
            return _Split(data["header"], data["units"], data["needs"], data["ids"], key)
    except Exception:   # missing, truncated, another format: make it again
        pass
    made = split(path.read_text(encoding="utf-8"), str(path))
    made.key = key
    _write(cached, marshal.dumps({"key": key, "header": made.header, "units": made.units,
                                  "needs": made.needs, "ids": made.ids}))
    return made


def _write(path: Path | None, data: bytes) -> None:
    """Write beside and rename, so a parallel reader sees the old file or the whole new one;
    a cache that cannot be written (a read-only home) is only slower."""
    import tempfile
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, path)
    except OSError:
        pass


class _Methods:
    """What `dataclasses` makes the same way for the same class in every run, kept (marshal)
    for one Objects.py and Python: the methods it writes as text and compiles (__init__,
    __repr__, __eq__: half of the model's build time), keyed on the exact text (running the
    same code object is what `exec(text)` does), and the signature it makes each docstring
    from (a sixth), keyed on the class's qualified name. Each code object stays marshalled
    until a class uses it: a command builds a third of the model."""

    def __init__(self, key: str) -> None:
        folder = cache_dir()
        self.path = folder / f"dataclass-methods-{key}.marshal" if folder else None
        try:
            data = marshal.loads(self.path.read_bytes()) if self.path else {}
            self.codes: dict[str, bytes] = data["codes"]   # text -> its marshalled code
            self.docs: dict[str, str] = data["docs"]
        except Exception:   # missing, truncated or another format: start empty
            self.codes, self.docs = {}, {}
        self.added = False

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        if not isinstance(source, str):
            return exec(source, globals, locals)
        kept = self.codes.get(source)
        if kept is None:
            # as exec(text) in dataclasses.py, which has no `from __future__` of its own
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.codes[source] = marshal.dumps(code)
            self.added = True
        else:
            code = marshal.loads(kept)
        return exec(code, globals, locals)

    def signature(self, cls: type) -> Any:
        """`inspect.signature` for dataclasses, which only takes its str() for the docstring."""
        if cls.__module__ != NAME:
            return inspect.signature(cls)
        text = self.docs.get(cls.__qualname__)
        if text is None:
            text = str(inspect.signature(cls))
            if " at 0x" not in text:   # a default's repr with an address would differ next run
                self.docs[cls.__qualname__] = text
                self.added = True
        return text

    def save(self) -> None:
        if self.added:
            self.added = False
            _write(self.path, marshal.dumps({"codes": self.codes, "docs": self.docs}))


class _Inspect:
    """`inspect` as dataclasses sees it while the model builds: `signature` from the cache."""

    def __init__(self, methods: _Methods) -> None:
        self.signature = methods.signature

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)


class _Model:
    """Builds the classes of one lazy module, each once, under one lock."""

    def __init__(self, module: types.ModuleType, parts: _Split) -> None:
        self.module = module
        self.parts = parts
        self.lock = threading.RLock()
        self.building: int | None = None   # the thread building, whose registry reads stay plain
        self.complete = False
        self.methods: _Methods | None = None
        self.names_to_ids: dict[str, int] | None = None   # cluster_id's index, made on first use

    def build(self, name: str) -> Any:
        """The class `name`, built now (with the classes it needs) unless it is already."""
        self._build_some([name])
        return self.module.__dict__[name]

    def build_all(self) -> None:
        if not self.complete and self.building != threading.get_ident():
            self._build_some(list(self.parts.units))
            self.complete = True

    def _build_some(self, names: list[str]) -> None:
        with self.lock:
            if self.building is not None:   # asked for by a class being built: already set up
                for name in names:
                    self._build(name, set())
                return
            if self.methods is None:
                self.methods = _Methods(self.parts.key)
            # dataclasses calls `exec` and `inspect` by their global names: the cached ones
            # serve while we build (and serve another thread's dataclass meanwhile, the same).
            # Set inside the try, so an interrupt at any point still restores both.
            try:
                self.building = threading.get_ident()
                vars(dataclasses).update(exec=self.methods.exec, inspect=_Inspect(self.methods))
                for name in names:
                    self._build(name, set())
            finally:
                vars(dataclasses).pop("exec", None)
                vars(dataclasses)["inspect"] = inspect
                self.building = None
            self.methods.save()

    def _build(self, name: str, started: set[str]) -> None:
        if name in self.module.__dict__ or name in started:
            return
        started.add(name)
        for other in self.parts.needs[name]:
            self._build(other, started)
        exec(marshal.loads(self.parts.units[name]), self.module.__dict__)

    def built(self) -> list[str]:
        """The classes built so far, in file order."""
        return [name for name in self.parts.units if name in self.module.__dict__]


_model: _Model | None = None


class _Registry(dict):  # type: ignore[type-arg]
    """One of chip's registries: complete on its first read from outside the builder."""

    def _whole(self) -> None:
        if _model is not None:
            _model.build_all()

    def __getitem__(self, key: Any) -> Any:
        self._whole()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._whole()
        return super().__contains__(key)

    def __iter__(self) -> Any:
        self._whole()
        return super().__iter__()

    def __len__(self) -> int:
        self._whole()
        return super().__len__()

    def __repr__(self) -> str:
        self._whole()
        return super().__repr__()

    def __eq__(self, other: object) -> bool:
        self._whole()
        return super().__eq__(other)

    def get(self, key: Any, default: Any = None) -> Any:
        self._whole()
        return super().get(key, default)

    def keys(self) -> Any:
        self._whole()
        return super().keys()

    def values(self) -> Any:
        self._whole()
        return super().values()

    def items(self) -> Any:
        self._whole()
        return super().items()

    def copy(self) -> dict[Any, Any]:
        self._whole()
        return dict(super().items())


#: What chip/clusters/__init__.py must hold for the lazy package to stand in for it.
_PACKAGE_INIT = ["from . import Attribute, CHIPClusters, Command, Objects", "from .Objects import *"]


class _Loader:
    """Imports `chip.clusters` as a package whose data model (Objects) builds lazily.

    Found on `sys.meta_path`, so nothing happens until something imports chip.clusters (a
    command that never touches the data model pays nothing). chip/clusters/__init__.py only
    imports the controller's modules (Attribute, Command, CHIPClusters: 0.1 s) and copies the
    model's classes: the package made here imports the first on access and forwards the second.
    If the cached split cannot be had, the package runs its own __init__.py, as without us."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "chip.clusters":
            return None
        sys.meta_path.remove(self)   # once: later imports find the module in sys.modules
        folder = next((Path(p) / "clusters" for p in path or [] if (Path(p) / "clusters" / "Objects.py").is_file()),
                      None)
        try:
            init = ast.parse((folder / "__init__.py").read_text(encoding="utf-8")) if folder else None
        except (OSError, SyntaxError):
            init = None
        if folder is None or init is None or [ast.unparse(stmt) for stmt in init.body] != _PACKAGE_INIT:
            return None   # another chip: imported as it is
        return importlib.util.spec_from_file_location(name, folder / "__init__.py", loader=self,  # type: ignore[arg-type]
                                                      submodule_search_locations=[str(folder)])

    def create_module(self, spec: Any) -> None:
        return None   # the usual module object

    def exec_module(self, package: types.ModuleType) -> None:
        global _model
        folder = Path(package.__file__ or "").parent
        try:
            parts = load_split(folder / "Objects.py")
        except (OSError, SyntaxError, ValueError):
            init = folder / "__init__.py"
            exec(compile(init.read_text(encoding="utf-8"), str(init), "exec"), package.__dict__)
            return
        eager = ("Attribute", "CHIPClusters", "Command")
        module = types.ModuleType(NAME, "The Matter data model, each class built on first use (clusters.lazy_objects).")
        module.__file__ = str(folder / "Objects.py")
        module.__package__ = "chip.clusters"
        package.Objects = module  # type: ignore[attr-defined]
        model = _Model(module, parts)

        def model_getattr(name: str) -> Any:
            if name in parts.units:
                return model.build(name)
            raise AttributeError(f"module {NAME!r} has no attribute {name!r}")

        def package_getattr(name: str) -> Any:   # chip.clusters.OnOff, chip.clusters.Attribute
            if name in eager:
                return importlib.import_module(f"chip.clusters.{name}")
            if name in parts.units:
                return model.build(name)
            raise AttributeError(f"module 'chip.clusters' has no attribute {name!r}")

        module.__getattr__ = model_getattr  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted(module.__dict__.keys() | parts.units.keys())  # type: ignore[method-assign]
        package.__getattr__ = package_getattr  # type: ignore[method-assign]
        package.__dir__ = lambda: sorted(package.__dict__.keys() | parts.units.keys() | set(eager))  # type: ignore[method-assign]
        sys.modules[NAME] = module
        try:
            exec(marshal.loads(parts.header), module.__dict__)   # imports ClusterObjects, Types, enum
            from chip.clusters import ClusterObjects
            for registry in _REGISTRIES:
                if getattr(ClusterObjects, registry):
                    raise RuntimeError(f"{registry} was filled before the data model was built")
                setattr(ClusterObjects, registry, _Registry())
        except BaseException:
            del sys.modules[NAME]
            raise
        _model = model


_loader: _Loader | None = None


def install() -> bool:
    """Have `chip.clusters` import with its data model built class by class; True if it will.

    False (nothing done) once `chip.clusters` is imported, or when switched off by the
    environment variable TWIN_LAZY_MODEL=0. An installed chip of another shape than the one
    this was written for is imported as it is, when it is imported."""
    global _loader
    if _loader is not None or _model is not None:
        return True
    if os.environ.get(SWITCH) == "0" or "chip.clusters" in sys.modules:
        return False
    _loader = _Loader()
    sys.meta_path.insert(0, _loader)
    return True


def installed() -> bool:
    return _model is not None


def load_all() -> None:
    """Build every class now (a no-op without `install()`)."""
    if _model is not None:
        _model.build_all()


def cluster_id(name: str) -> int:
    """`Objects.<name>.id`, without building the class when the model is lazy: the split read
    the same literal from the same source file (`id: typing.ClassVar[int] = 0x0101`).
    AttributeError for a name that is not a cluster of the model."""
    import chip.clusters  # noqa: F401  # readies the lazy model if install() ran
    if _model is not None:
        if _model.names_to_ids is None:
            _model.names_to_ids = {name: ident for ident, name in _model.parts.ids.items()}
        ident = _model.names_to_ids.get(name)
        if ident is not None:
            return ident
    from chip.clusters import Objects
    return int(getattr(Objects, name).id)


class _ClusterIds:
    """`CLUSTER_ID.DoorLock` is `Objects.DoorLock.id` (see `cluster_id`): code that only looks a
    server up by its cluster's id builds no class for a cluster the home does not serve."""

    def __getattr__(self, name: str) -> int:
        if name.startswith("__"):   # copy, pickle and the like probing for hooks
            raise AttributeError(name)
        ident = cluster_id(name)
        setattr(self, name, ident)
        return ident


CLUSTER_ID = _ClusterIds()


def built() -> list[str]:
    """The classes built so far, in file order; every class without `install()`."""
    if _model is not None:
        return _model.built()
    from chip.clusters import Objects
    return [name for name in vars(Objects) if isinstance(vars(Objects)[name], type)
            and vars(Objects)[name].__module__ == NAME]
