"""The standing adversarial suite (tests/adversarial.py) does not rot: every module it names
exists and has tests, and the security document lists every one."""
from __future__ import annotations

import ast
from pathlib import Path

from adversarial import ADVERSARIAL

TESTS = Path(__file__).resolve().parent


def test_every_module_of_the_suite_exists_and_has_tests():
    for module in ADVERSARIAL:
        tree = ast.parse((TESTS / module).read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_") for n in tree.body), module


def test_the_security_document_names_every_module():
    text = (TESTS.parent / "docs" / "security.md").read_text()
    assert [m for m in ADVERSARIAL if f"tests/{m}" not in text] == []
