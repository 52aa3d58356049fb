"""The comparisons that queries, automation triggers and goal predicates share.

Values are JSON (as tools read them): numbers, booleans, strings, null, lists. Ordering
operators need two numbers (booleans are not numbers here); `==`/`!=` compare JSON values,
so 1 == 1.0 but true != 1; `in` tests membership in a list; `between` takes [low, high],
both ends included.
"""
from __future__ import annotations

from typing import Any

OPS = ("==", "!=", ">", ">=", "<", "<=", "in", "between")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def check_operand(op: str, value: Any) -> str | None:
    """Why `value` can never be the right-hand side of `op` (None: it can)."""
    if op not in OPS:
        return f"unknown operator {op!r}; accepted: {', '.join(OPS)}"
    if op in (">", ">=", "<", "<=") and not _number(value):
        return f"{op} needs a number, got {value!r}"
    if op == "in" and not isinstance(value, list):
        return f"'in' needs a list of values, got {value!r}"
    if op == "between":
        if not (isinstance(value, list) and len(value) == 2 and all(map(_number, value))):
            return f"'between' needs [low, high] numbers, got {value!r}"
        if value[0] > value[1]:
            return f"'between' range {value} is empty (low > high)"
    return None


def compare(left: Any, op: str, right: Any) -> bool:
    """`left op right` for JSON values; a comparison that does not apply is False."""
    if op == "==":
        return _same(left, right)
    if op == "!=":
        return not _same(left, right)
    if op == "in":
        return any(_same(left, r) for r in right)
    if not _number(left):
        return False
    if op == "between":
        return bool(right[0] <= left <= right[1])
    if not _number(right):
        return False
    return bool({">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[op])
