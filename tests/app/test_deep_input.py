"""Deeply nested input is refused with the usual errors, never a RecursionError (issue #12
item 6): a home file or bridge config gives one `UserFileError` line, a tool call's body an
HTTP 400 with the structured JSON error."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_cli import one_line_error, twin

from bridge.config import load_config
from bridge.twin_backend import TwinBackend
from matter_twin.http import create_app
from twin.home import Home
from twin.schema import MAX_NESTING, UserFileError, check_nesting, json_nesting, parse_file

DEEP = 5000


@pytest.mark.parametrize("name, text", [
    ("home.json", '{"name": "x", "rooms": ' + "[" * DEEP + "]" * DEEP + "}"),
    ("home.yaml", "name: x\nrooms: " + "[" * DEEP + "]" * DEEP + "\n"),
    ("home.yaml", "name: x\nrooms:\n  " + "- " * DEEP + "x\n"),
    ("home.yaml", "name: x\nrooms: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n"),
], ids=["json", "yaml-flow", "yaml-block", "yaml-mappings"])
def test_a_deep_home_file_is_one_user_file_error(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UserFileError) as e:
        parse_file(path)
    assert str(e.value).startswith(f"{path}: ") and "nested too deeply" in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_the_cli_prints_one_line_for_a_deep_home_file(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"rooms": ' + "[" * DEEP + "]" * DEEP + "}")
    line = one_line_error(twin("tool", "get_rooms", "{}", "--home", str(path)))
    assert line.startswith(f"error: {path}: line 1: nested too deeply")


@pytest.mark.parametrize("name, text", [
    ("bridge.json", '{"rooms": ' + "[" * DEEP + "]" * DEEP + "}"),
    ("bridge.yaml", "rooms: " + "[" * DEEP + "]" * DEEP + "\n"),
], ids=["json", "yaml"])
def test_a_deep_bridge_config_is_one_user_file_error(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UserFileError, match="nested too deeply"):
        load_config(path)


def test_a_deep_tool_call_body_is_a_400_with_the_structured_error():
    client = TestClient(create_app(TwinBackend(Home.default())))
    answer = client.post("/tools/get_room_devices", content=b'{"room.id": ' + b"[" * DEEP + b"]" * DEEP + b"}",
                         headers={"Content-Type": "application/json"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert answer.json()["ok"] is False and error["code"] == "INVALID_ARGUMENT"
    assert f"at most {MAX_NESTING} levels" in error["message"]
    # Nesting within the bound still reaches the tool (which says what it accepts).
    shallow = client.post("/tools/get_room_devices", json={"room.id": [[["kitchen"]]]})
    assert shallow.status_code == 400 and "Traceback" not in shallow.text


def test_the_nesting_scanner_ignores_brackets_in_strings():
    assert json_nesting('{"a": "[[[[[[[[", "b": [1, {"c": "]]]"}]}', limit=3) is None
    assert json_nesting('{"a": "\\"[[[", "b": [[[]]]}', limit=3) == 1
    assert json_nesting("[\n[\n[", limit=2) == 3
    check_nesting({"a": [[1]]}, "f", limit=3)
    with pytest.raises(UserFileError, match="f: \\(file\\): nested too deeply"):
        check_nesting({"a": [[[1]]]}, "f", limit=3)
