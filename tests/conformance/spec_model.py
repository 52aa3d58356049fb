"""The spec's data model, as data: matter.js's model (@matter/model, installed in .cache/matterjs)
dumped to JSON by spec_model.mjs (attributes with their spec data type and constraint), and an
evaluator of its conformance expressions.

Conformance (spec 7.3): a comma-separated list tried in order; `M` mandatory, `O` optional, `X`
disallowed, `P` provisional, `D` deprecated, `desc` described in prose; `[expr]` optional when
expr holds; a bare `expr` mandatory when it holds; `O.a` / `[expr].a+` choices. Expressions
combine feature codes and element names with `!`, `&`, `|` and parentheses; `Rev >= vN`
compares the cluster revision. What cannot be decided from the served data (prose, attribute
values, choices) counts as optional: a test never fails on a guess.
"""
from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from netns import REPO

MATTERJS = REPO / ".cache" / "matterjs" / "node_modules"
MANDATORY, OPTIONAL, DISALLOWED = "M", "O", "X"


@functools.cache
def model() -> dict[str, Any]:
    """{"clusters": {id: cluster}, "deviceTypes": {id: device type}} from matter.js's model."""
    if not (MATTERJS / "@matter" / "model").is_dir() or shutil.which("node") is None:
        raise AssertionError(f"missing node or matter.js in {MATTERJS}: run scripts/install-test-deps.sh")
    with tempfile.TemporaryDirectory(prefix="spec-model-") as folder:
        script = Path(folder) / "spec_model.mjs"
        shutil.copy(Path(__file__).with_name("spec_model.mjs"), script)
        (Path(folder) / "node_modules").symlink_to(MATTERJS)
        out = subprocess.run(["node", str(script)], capture_output=True, text=True, check=True, timeout=120)
    data = json.loads(out.stdout)
    return {"clusters": {c["id"]: c for c in data["clusters"]},
            "deviceTypes": {d["id"]: d for d in data["deviceTypes"]}}


def cluster(cluster_id: int) -> dict[str, Any] | None:
    return model()["clusters"].get(cluster_id)


def device_type(device_type_id: int) -> dict[str, Any] | None:
    return model()["deviceTypes"].get(device_type_id)


def feature_bit(spec_cluster: dict[str, Any], name: str) -> int | None:
    """A feature's bit by its code (LT) or, as device types name them, its title (LIGHTING)."""
    for feature in spec_cluster["features"]:
        if name in (feature["name"], feature["title"].upper()):
            return feature["bit"]
    return None


# --- conformance --------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(>=|<=|==|!=|[()!&|<>\[\]]|[A-Za-z_][A-Za-z0-9_.]*|\d+)")
UNKNOWN = None   # three-valued logic: True, False, UNKNOWN


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets or parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


class _Expression:
    """A boolean conformance expression over names (features, elements) and `Rev >= vN`."""

    def __init__(self, text: str, names: set[str] | None, revision: int) -> None:
        self.tokens = [t for t in _TOKEN.findall(text)]
        self.pos = 0
        self.names = names
        self.revision = revision

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> bool | None:
        value = self.disjunction()
        if self.peek() is not None:
            return UNKNOWN
        return value

    def disjunction(self) -> bool | None:
        value = self.conjunction()
        while self.peek() == "|":
            self.take()
            other = self.conjunction()
            value = True if (value is True or other is True) else (UNKNOWN if UNKNOWN in (value, other) else False)
        return value

    def conjunction(self) -> bool | None:
        value = self.unary()
        while self.peek() == "&":
            self.take()
            other = self.unary()
            value = False if (value is False or other is False) else (UNKNOWN if UNKNOWN in (value, other) else True)
        return value

    def unary(self) -> bool | None:
        if self.peek() == "!":
            self.take()
            value = self.unary()
            return UNKNOWN if value is UNKNOWN else not value
        if self.peek() == "(":
            self.take()
            value = self.disjunction()
            if self.peek() == ")":
                self.take()
            return value
        token = self.take()
        if self.peek() in (">=", "<=", ">", "<", "==", "!="):
            op, right = self.take(), self.take()
            if token == "Rev" and right.startswith("v") and right[1:].isdigit():
                n = int(right[1:])
                return {">=": self.revision >= n, "<=": self.revision <= n, ">": self.revision > n,
                        "<": self.revision < n, "==": self.revision == n, "!=": self.revision != n}[op]
            return UNKNOWN   # a comparison of an attribute's value
        return UNKNOWN if self.names is None else token in self.names


def conformance(text: str, names: set[str] | None, revision: int) -> str:
    """M, O or X for a conformance expression, given the names that hold (features supported,
    elements present; None: no name can be decided, as for a device type's conditions) and the
    cluster revision. Undecidable parts, and no conformance at all, give O."""
    if text.strip() == "":
        return OPTIONAL     # not stated (a derived cluster's override, a response): nothing to demand
    for item in _split_top(text):
        if item in ("M",):
            return MANDATORY
        if item in ("O", "P", "D", "desc") or re.fullmatch(r"O\.[a-z]\+?", item):
            return OPTIONAL
        if item == "X":
            return DISALLOWED
        optional = item.startswith("[")
        if optional:
            body = item[1:item.rindex("]")]
        else:
            body = re.sub(r"\.[a-z]\+?$", "", item)
            if body != item:        # a choice: mandatory as a group, not one by one
                optional = True
        holds = _Expression(body, names, revision).parse()
        if holds is UNKNOWN:
            return OPTIONAL
        if holds:
            return OPTIONAL if optional else MANDATORY
    return DISALLOWED
