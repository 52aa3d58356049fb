"""PersonalHomeBench's scorer measured on labelled answers (`twin bench personal judge-agreement`):
each row is scored as in a run (a plan run on its household), the table is SimuHome's, and bad
label files give one line."""
from __future__ import annotations

import json

import openai
import pytest

from matter_twin.cli import app
from scenarios.personal.agreement import judge_labels, load_labels
from scenarios.personal.evaluate import PersonalJudge
from scenarios.personal.suite import DEFAULT_TASKS
from scenarios.personal.tasks import load_tasks
from tests.openai_stub import OpenAIStub


def _step(check: dict) -> dict:
    """The workflow step that leaves a checked value (a plan a person would accept)."""
    target = {"device.id": check["device"], "endpoint.id": check["endpoint"]}
    cluster, attribute = check["attribute"].split(".")
    if attribute == "OnOff":
        return {"tool": "execute_command", "args": {**target, "cluster.id": "OnOff",
                                                    "command.id": "On" if check["value"] else "Off", "args": {}}}
    if attribute == "CurrentLevel":
        return {"tool": "execute_command", "args": {**target, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
                                                    "args": {"level": check["value"], "transitionTime": 0,
                                                             "optionsMask": 0, "optionsOverride": 0}}}
    return {"tool": "write_attribute", "args": {**target, "cluster.id": cluster, "attribute.id": attribute,
                                                "value": check["value"]}}


def twin(capsys, *args: str) -> tuple[int, str, str]:
    """The CLI in process, as the console script runs it: (exit code, stdout, stderr)."""
    try:
        app(["bench", "personal", *args], prog_name="twin")
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """The committed set's first task of each category, a good and a bad answer to each, as a
    person would label them; the rows' kinds and splits as the independent set has them."""
    tasks = load_tasks(DEFAULT_TASKS)
    first = {c: next(t for t in tasks if t.category == c) for c in ("IG", "CF", "MC", "FR", "PG")}
    first["IG"] = next(t for t in tasks if t.template == "came_home")   # a time: the hedge names another
    fr, pg, mc = first["FR"], first["PG"], first["MC"]
    others = [f for f in fr.features if f not in fr.relevant]
    on_first = sorted(pg.checks, key=lambda c: c["attribute"] != "OnOff.OnOff")   # a light goes on, then dims
    plan = [{"program_id": "arrival", "tool": "schedule_workflow",
             "args": {"start_time": pg.params["arrival"], "steps": [_step(c) for c in on_first]}}]
    wrong_letter = next(x for x in "ABCDE" if x != mc.answer)
    rows = [
        (first["IG"], f"It was {first['IG'].answer}.", "pass", "correct", "dev"),
        (first["IG"], f"{first['IG'].answer}, or maybe 03:00", "fail", "hedged", "dev"),
        (first["CF"], first["CF"].answer, "pass", "correct", "heldout"),
        (first["CF"], "I don't know.", "fail", "evasive", "heldout"),
        (mc, f"{mc.answer})", "pass", "correct", "dev"),
        (mc, wrong_letter, "fail", "wrong", "heldout"),
        (fr, json.dumps(fr.relevant + others), "pass", "correct", "dev"),
        (fr, json.dumps(others + fr.relevant), "fail", "wrong", "heldout"),
        (pg, "Here is the plan: " + json.dumps(plan), "pass", "correct", "dev"),
        (pg, "[]", "fail", "evasive", "heldout"),
    ]
    path = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    path.write_text("".join(json.dumps({"task_id": t.id, "answer": a, "label": label, "kind": kind, "split": split})
                            + "\n" for t, a, label, kind, split in rows))
    return tasks, path


def test_each_row_is_scored_as_in_a_run(labelled):
    tasks, path = labelled
    rows = judge_labels(tasks, load_labels(path), DEFAULT_TASKS.parent)
    assert [r["verdicts"] for r in rows] == [{"rule": r["label"] == "pass"} for r in rows]
    assert [r["category"] for r in rows] == ["IG", "IG", "CF", "CF", "MC", "MC", "FR", "FR", "PG", "PG"]


def test_a_model_judge_decides_only_ig_and_cf_answers_no_rule_matches(labelled):
    tasks, path = labelled
    rows = load_labels(path)
    paraphrase = [{"task_id": rows[0]["task_id"], "answer": "the answer you want", "label": "fail", "kind": "evasive"},
                  *rows]
    with OpenAIStub(["YES"] * 10) as stub:
        judge = PersonalJudge("m", client=openai.OpenAI(base_url=stub.base_url, api_key="k"))
        rows = judge_labels(tasks, paraphrase, DEFAULT_TASKS.parent, [judge])
    # Asked for the rows no rule matches in IG/CF only: the paraphrase, the hedge and the evasion.
    assert len(stub.requests) == 3
    assert [r["verdicts"]["llm:m"] for r in rows] == [True, True, True, True, True] + \
        [r["label"] == "pass" for r in rows[5:]]


def test_cli_prints_accuracy_and_kappa_per_part_category_and_kind(labelled, capsys):
    _, path = labelled
    code, out, err = twin(capsys, "judge-agreement", "--labels", str(path))
    assert code == 0, err
    assert "### dev (5 answers)" in out and "### heldout (5 answers)" in out
    assert "| PG | 1 | 1/1 (100 %) |" in out and "| hedged | 1 | 1/1 (100 %) |" in out
    assert out.count("rule: kappa with the labels 1.000") == 4
    code, out, err = twin(capsys, "judge-agreement", "--labels", str(path), "--split", "dev")
    assert code == 0 and "### dev (5 answers)" in out and "heldout" not in out, err


@pytest.mark.parametrize("line, message", [
    ('{"task_id": "ig-nowhere-001", "answer": "x", "label": "pass"}',
     "labelled answer for unknown task 'ig-nowhere-001'"),
    ('{"task_id": "t", "answer": "x", "label": "maybe"}', "labels.jsonl:2: needs task_id and a label in pass, fail"),
    ('{"task_id": "t", "answer": 3, "label": "pass"}', "labels.jsonl:2: answer must be a string"),
    ('{"task_id": "t", "answer": "x", "label": "pass", "split": "test"}', "labels.jsonl:2: split 'test' is not one"),
    ("not json", "labels.jsonl:2: not JSON"),
])
def test_cli_bad_labels_give_one_line(tmp_path, capsys, line, message):
    path = tmp_path / "labels.jsonl"
    path.write_text("\n" + line + "\n")
    code, out, err = twin(capsys, "judge-agreement", "--labels", str(path))
    assert code == 2 and not out.strip() and len(err.strip().splitlines()) == 1 and message in err, err


def test_cli_bad_options_give_one_line(tmp_path, capsys):
    for args, message in ((["--labels", str(tmp_path / "none.jsonl")], "none.jsonl: cannot read"),
                          (["--split", "test"], "unknown split 'test'"),
                          (["--judge", "rule"], "unknown judge 'rule'")):
        code, out, err = twin(capsys, "judge-agreement", *args)
        assert code == 2 and not out.strip() and len(err.strip().splitlines()) == 1 and message in err, err
