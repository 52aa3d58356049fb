"""Deeply nested input is refused with the usual errors, never a RecursionError (issue #12
item 6): a home file or bridge config gives one `UserFileError` line, a tool call's body an
HTTP 400 with the structured JSON error."""
from __future__ import annotations

import time

import pytest
import yaml
from fastapi.testclient import TestClient
from test_cli import one_line_error, twin

from bridge.config import load_config
from matter_twin.http import create_app
from twin.home import Home
from twin.schema import MAX_NESTING, MAX_VALUES, UserFileError, check_nesting, json_nesting, parse_file

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
    client = TestClient(create_app(Home.default()))
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


# --- issue #32 item 7: the alias bomb -------------------------------------------------------

def alias_bomb(top: str = "rooms") -> str:
    """About 400 bytes of YAML that stand for 9^9 (387 million) strings: each anchor is a list of
    nine aliases of the one before ("billion laughs")."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join(["*" + previous] * 9) + "]")
        previous = name
    return "\n".join(lines) + f"\n{top}: *i\n"


def loaders():
    from bridge.config import load_config
    from hardware.labfile import load_lab
    from scenarios.lifelong.config import load_scenario
    from twin.faults import load_fault_file
    return {"home": parse_file, "bridge config": load_config, "faults": load_fault_file, "lab": load_lab,
            "lifelong scenario": load_scenario}


@pytest.mark.parametrize("kind", ["home", "bridge config", "faults", "lab", "lifelong scenario"])
def test_every_loader_refuses_the_alias_bomb_at_once_with_one_line(tmp_path, kind):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    assert len(path.read_bytes()) < 425
    started = time.process_time()
    with pytest.raises(UserFileError) as e:
        loaders()[kind](path)
    assert time.process_time() - started < 0.5
    assert str(e.value).startswith(f"{path}: (file): expands to more than {MAX_VALUES} values")
    assert len(str(e.value).splitlines()) == 1


def test_aliases_within_bounds_still_load_and_a_self_reference_is_one_line(tmp_path):
    # An alias used as the YAML spec means it (a shared ambient block) is measured, not refused.
    check_nesting(yaml.safe_load("base: &b {t: 20, rh: 40}\nx: *b\ny: *b\n"), "f")
    with pytest.raises(UserFileError, match="f: \\(file\\): refers to itself"):
        check_nesting(yaml.safe_load("a: &a [1, *a]\n"), "f")
    # Depth through an alias counts where the alias is used.
    deep = "d: &d " + "[" * 40 + "]" * 40 + "\n" + "e: " + "[" * 30 + "*d" + "]" * 30 + "\n"
    with pytest.raises(UserFileError, match="nested too deeply"):
        check_nesting(yaml.safe_load(deep), "f")
    with pytest.raises(UserFileError, match="expands to more than 100 values"):
        check_nesting({"a": list(range(200))}, "f", max_values=100)


def test_the_cli_prints_one_line_for_the_alias_bomb(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    line = one_line_error(twin("tool", "get_rooms", "{}", "--home", str(path)))
    assert line.startswith(f"error: {path}: (file): expands to more than")
