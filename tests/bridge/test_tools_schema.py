"""Tool schemas, argument validation, the session tools and the cluster docs (no home needed)."""
import json

import pytest

from bridge import docs
from bridge.backend import ToolError
from bridge.tools import (
    SCHEMAS_BY_NAME,
    TOOL_MODELS,
    TOOL_NAMES,
    TOOL_SCHEMAS,
    Session,
    call_tool,
    environment_rules,
    parse_args,
)

PAPER_TOOLS = {"get_rooms", "get_room_devices", "get_room_states", "get_device_structure",
               "get_all_attributes", "get_attribute", "execute_command", "write_attribute",
               "get_cluster_doc", "get_environment_control_rules", "get_current_time",
               "schedule_workflow", "cancel_workflow", "get_workflow_status", "get_workflow_list",
               "ask_user", "finish"}


class NoBackend:
    """Any backend access is a test failure: these calls must be settled before it."""

    def __getattr__(self, name):
        raise AssertionError(f"backend.{name} touched")


def test_schemas_are_the_papers_17_tools_in_openai_format():
    assert set(TOOL_NAMES) == PAPER_TOOLS and len(TOOL_SCHEMAS) == 17
    for schema in TOOL_SCHEMAS:
        assert schema["type"] == "function"
        fn = schema["function"]
        assert fn["description"] and fn["parameters"]["type"] == "object"
        assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])
    json.dumps(TOOL_SCHEMAS)
    ex = SCHEMAS_BY_NAME["execute_command"]["parameters"]
    assert ex["required"] == ["device.id", "endpoint.id", "cluster.id", "command.id", "args"]
    assert SCHEMAS_BY_NAME["schedule_workflow"]["parameters"]["required"] == ["start_time", "steps"]


def test_unknown_tool_lists_the_tools_and_is_recorded():
    session = Session()
    result = call_tool(NoBackend(), "turn_on_everything", {}, session)
    assert result["ok"] is False
    assert result["error"]["code"] == "UNKNOWN_TOOL"
    assert "get_rooms" in result["error"]["accepted"]
    assert session.history == [{"tool": "turn_on_everything", "args": {}, "result": result}]


@pytest.mark.parametrize("name,args,fragment", [
    ("get_room_devices", {}, "missing required argument(s) room.id"),
    ("get_room_devices", {"room.id": 3}, "room.id must be string"),
    ("get_room_devices", {"room.id": "a", "floor": 1}, "unknown argument(s) floor"),
    ("get_room_devices", {"room.id": "a", "room_id": "b"}, "given twice"),
    ("execute_command", {"device.id": "d", "endpoint.id": True, "cluster.id": "OnOff",
                         "command.id": "On", "args": {}}, "endpoint.id must be string or integer"),
    ("execute_command", {"device.id": "d", "endpoint.id": 1, "cluster.id": "OnOff",
                         "command.id": "On"}, "missing required argument(s) args"),
    ("get_cluster_doc", {"query": "fan", "top_k": 0}, "top_k=0 is outside 1..20"),
    ("get_cluster_doc", {"query": "fan", "top_k": "3"}, "top_k must be integer"),
    ("schedule_workflow", {"start_time": "2025-06-01 09:10:00", "steps": []}, "at least 1 item"),
    ("schedule_workflow", {"start_time": "2025-06-01 09:10:00",
                           "steps": [{"tool": "get_rooms", "args": {}}]}, "is not accepted"),
    ("schedule_workflow", {"start_time": "2025-06-01 09:10:00",
                           "steps": [{"tool": "execute_command", "args": {"device.id": "x"}}]},
     "steps[0]: execute_command: missing required argument(s)"),
    ("schedule_workflow", {"start_time": "June 1st", "steps": [
        {"tool": "write_attribute", "args": {"device.id": "x", "cluster.id": 6,
                                              "attribute.id": 0, "value": 1}}]},
     "is not \"YYYY-MM-DD HH:MM:SS\""),
    ("get_rooms", [1, 2], "takes a JSON object"),
])
def test_bad_arguments_are_rejected_before_the_backend(name, args, fragment):
    result = call_tool(NoBackend(), name, args, Session())
    assert result["ok"] is False
    assert result["error"]["code"] == "INVALID_ARGUMENT"
    assert fragment in result["error"]["message"], result["error"]["message"]


def test_missing_argument_error_lists_accepted_arguments():
    result = call_tool(NoBackend(), "get_attribute", {"device_id": "x"})
    assert result["error"]["accepted"] == ["device.id", "cluster.id", "attribute.id", "endpoint.id"]


def test_underscore_names_are_normalized_to_dotted():
    args = parse_args("get_attribute", {"device_id": "d", "cluster_id": 6, "attribute.id": "OnOff"})
    assert isinstance(args, TOOL_MODELS["get_attribute"])
    assert (args.device_id, args.cluster_id, args.attribute_id, args.endpoint_id) == ("d", 6, "OnOff", None)


def test_ask_user_and_finish_use_the_session():
    asked, finished = [], []
    session = Session(ask_user=lambda q: asked.append(q) or "the blue one",
                      on_finish=finished.append)
    r = call_tool(NoBackend(), "ask_user", {"question": "Which lamp?"}, session)
    assert r == {"ok": True, "question": "Which lamp?", "answer": "the blue one"}
    assert not session.finished
    r = call_tool(NoBackend(), "finish", {"answer": "Done: lamp on."}, session)
    assert r == {"ok": True, "finished": True, "answer": "Done: lamp on."}
    assert asked == ["Which lamp?"] and finished == ["Done: lamp on."]
    assert session.finished and session.answer == "Done: lamp on."
    assert [h["tool"] for h in session.history] == ["ask_user", "finish"]


def test_ask_user_without_a_user_is_unavailable():
    r = call_tool(NoBackend(), "ask_user", {"question": "?"}, Session())
    assert r["ok"] is False and r["error"]["code"] == "UNAVAILABLE"


def test_history_keeps_the_args_as_given_not_mutated_later():
    session = Session()
    args = {"answer": "x"}
    call_tool(NoBackend(), "finish", args, session)
    args["answer"] = "changed"
    assert session.history[0]["args"] == {"answer": "x"}


def test_a_crashing_backend_becomes_an_internal_error_not_a_traceback():
    class Broken:
        def rooms(self):
            raise RuntimeError("disk on fire")
    r = call_tool(Broken(), "get_rooms", {})
    assert r == {"ok": False, "error": {"code": "INTERNAL_ERROR", "message": "RuntimeError: disk on fire"}}


def test_tool_error_json_shape():
    assert ToolError("NOT_FOUND", "no room 'x'", ["a"]).to_json() == {
        "code": "NOT_FOUND", "message": "no room 'x'", "accepted": ["a"]}
    assert "accepted" not in ToolError("X", "y").to_json()


# ---- environment rules ------------------------------------------------------------------

@pytest.mark.parametrize("state,canonical,device_type,effect", [
    ("temp", "temperature", "air_conditioner", "lower or raise"),
    ("Humidity", "humidity", "dehumidifier", "lower"),
    ("light", "illuminance", "dimmable_light", "raise"),
    ("air_quality", "pm10", "air_purifier", "lower"),
])
def test_environment_control_rules(state, canonical, device_type, effect):
    r = call_tool(NoBackend(), "get_environment_control_rules", {"state": state})
    assert r["ok"] and r["state"] == canonical
    assert {"device_type": device_type, "effect": effect} in [
        {"device_type": x["device_type"], "effect": x["effect"]} for x in r["rules"]]


def test_environment_rules_follow_the_physics_table(monkeypatch):
    from twin import physics
    monkeypatch.setitem(physics.COEFFICIENTS, "light_lux", {"on_off_light": 123.0})
    rules = environment_rules("illuminance")
    assert [r["device_type"] for r in rules] == ["on_off_light", "window_covering"]
    assert "123 lux" in rules[0]["strength"]


def test_environment_control_rules_unknown_state():
    r = call_tool(NoBackend(), "get_environment_control_rules", {"state": "noise"})
    assert r["error"]["code"] == "INVALID_ARGUMENT"
    assert r["error"]["accepted"] == ["temperature", "humidity", "illuminance", "pm10"]


# ---- cluster docs -----------------------------------------------------------------------

def test_docs_cover_every_cluster_of_every_registered_device_type():
    from clusters.device import DEVICE_TYPES
    from clusters.devices import create_device
    names = {d["name"] for d in docs.documents()}
    for key in DEVICE_TYPES:
        device = create_device("x", key)
        assert {s.name for s in device.servers()} <= names


def test_cluster_doc_ranks_onoff_first_for_power_queries():
    r = call_tool(NoBackend(), "get_cluster_doc", {"query": "turn the device on or off", "top_k": 2})
    assert r["ok"] and r["results"][0]["cluster"] == "OnOff"
    doc = r["results"][0]["doc"]
    assert "OnWithTimedOff" in doc and "OnTime (id 16385, unsigned integer, writable" in doc
    assert "StartUpOnOff" in doc and "values: 0=Off, 1=On, 2=Toggle" in doc
    assert len(r["results"]) <= 2


def test_cluster_doc_finds_attribute_names_split_from_camel_case():
    results = docs.get_cluster_doc("off wait time", 1)
    assert results[0]["cluster"] == "OnOff"


def test_cluster_doc_is_deterministic_and_empty_for_nonsense():
    assert docs.get_cluster_doc("level brightness", 5) == docs.get_cluster_doc("level brightness", 5)
    assert docs.get_cluster_doc("qwertyuiop", 5) == []


def test_cluster_doc_lists_the_real_rules():
    doc = docs.get_cluster_doc("fan speed percent", 1)[0]
    assert doc["cluster"] == "FanControl"
    assert "turn it on (OnOff On) before changing its fan speed" in doc["doc"]
    assert "(otherwise INVALID_IN_STATE)" in doc["doc"]


def test_cluster_doc_lists_cross_cluster_rules(monkeypatch):
    from clusters import rules
    from clusters.status import Status
    rule = rules.Rule(("on_off_light",), "OnOff", ("OnWithTimedOff",), lambda device: True,
                      Status.INVALID_IN_STATE, "only in test: timed on needs a reason")
    monkeypatch.setattr(rules, "RULES", [*rules.RULES, rule])
    monkeypatch.setattr(docs, "RULES", rules.RULES)
    docs._documents.cache_clear()
    docs._index.cache_clear()
    try:
        doc = docs.get_cluster_doc("timed on needs a reason", 1)[0]
        assert doc["cluster"] == "OnOff"
        assert "OnWithTimedOff on on_off_light: only in test: timed on needs a reason " \
               "(otherwise INVALID_IN_STATE)" in doc["doc"]
    finally:
        docs._documents.cache_clear()
        docs._index.cache_clear()


def test_bm25_prefers_rarer_terms():
    index = docs.BM25(["fan speed percent", "fan mode", "light level"])
    scores = index.scores("fan percent")
    assert scores[0] > scores[1] > scores[2] == 0


# ---- one model per tool: every schema is derived from it ------------------------------------

def test_every_openai_schema_is_its_tools_model():
    from bridge.tools import TOOL_MODELS
    from twin.tool_arguments import parameters_schema
    assert list(TOOL_MODELS) == [s["function"]["name"] for s in TOOL_SCHEMAS]
    for name, model in TOOL_MODELS.items():
        fn = SCHEMAS_BY_NAME[name]
        assert fn["parameters"] == parameters_schema(model), name
        assert fn["description"] == " ".join(model.__doc__.split()), name
        # the arguments are the model's fields, dotted as SimuHome writes ids
        assert list(fn["parameters"]["properties"]) == [f.alias for f in model.model_fields.values()], name
        for field in model.model_fields.values():
            assert fn["parameters"]["properties"][field.alias]["description"] == field.description
            assert (field.alias in fn["parameters"]["required"]) == field.is_required()


def test_validation_follows_the_model_not_a_copy_of_it(monkeypatch):
    from pydantic import Field

    from bridge import tools
    from twin.tool_arguments import Integer

    class Doc(tools.GetClusterDoc):
        top_k: Integer = Field(ge=1, le=5, description="fewer")
    monkeypatch.setitem(tools.TOOL_MODELS, "get_cluster_doc", Doc)
    r = call_tool(NoBackend(), "get_cluster_doc", {"query": "fan", "top_k": 6})
    assert r["error"]["code"] == "INVALID_ARGUMENT" and "top_k=6 is outside 1..5" in r["error"]["message"]


def test_a_step_with_a_bad_argument_gets_the_tools_own_error():
    bad = {"device.id": "x", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": True, "args": {}}
    direct = call_tool(NoBackend(), "execute_command", bad)["error"]
    step = call_tool(NoBackend(), "schedule_workflow", {"start_time": "2025-06-01 09:10:00", "steps": [
        {"tool": "write_attribute", "args": {"device.id": "x", "cluster.id": 6, "attribute.id": 0, "value": 1}},
        {"tool": "execute_command", "args": bad}]})["error"]
    assert direct["code"] == step["code"] == "INVALID_ARGUMENT"
    assert direct["message"] == "execute_command.command.id must be string or integer, got bool True"
    assert step["message"] == "steps[1]: " + direct["message"]
    missing = call_tool(NoBackend(), "write_attribute", {"device_id": "x"})["error"]
    step = call_tool(NoBackend(), "schedule_workflow", {"start_time": "2025-06-01 09:10:00", "steps": [
        {"tool": "write_attribute", "args": {"device_id": "x"}}]})["error"]
    assert step == {**missing, "message": "steps[0]: " + missing["message"]}
    assert missing["accepted"] == ["device.id", "cluster.id", "attribute.id", "value", "endpoint.id"]


def test_cluster_docs_describe_the_homes_own_types():
    # A SimuHome home reads exactly the documents of SimuHome's types, however many the twin knows.
    from bridge.docs import _documents, get_cluster_doc
    from bridge.tools import call_tool
    from bridge.twin_backend import TwinBackend
    from twin.home import Home
    simuhome = sorted({d.type.key for d in Home.default().devices.values()})
    assert len(simuhome) == 17
    answer = call_tool(TwinBackend(Home.default()), "get_cluster_doc", {"query": "turn the light on", "top_k": 3})
    assert answer["results"] == get_cluster_doc("turn the light on", 3, simuhome)
    texts = {d["name"]: d["text"] for d in _documents(tuple(simuhome))}
    assert answer["results"][0]["doc"] == texts[answer["results"][0]["cluster"]]
    assert "ColorControl" not in texts and "Extended Color Light" not in texts["OnOff"]
    modern = call_tool(TwinBackend(Home.embedded("modern")), "get_cluster_doc",
                       {"query": "colour temperature of a light", "top_k": 1})
    assert modern["results"][0]["cluster"] == "ColorControl"
