"""PersonalHomeBench's scorer measured on labelled answers (`twin bench personal judge-agreement`):
each row is scored as in a run (a plan run on its household), the table is SimuHome's, and bad
label files give one line."""
from __future__ import annotations

import json
import random

import openai
import pytest

from matter_twin.cli import app
from scenarios.personal.agreement import judge_labels, load_labels
from scenarios.personal.evaluate import PersonalJudge, lived, score
from scenarios.personal.reading import WITHDRAWN, answer_matches, choice, made_up, ranking, unwrapped
from scenarios.personal.suite import DEFAULT_TASKS, HOUSEHOLDS_PACK
from scenarios.personal.tasks import dump_task, load_tasks
from tests.openai_stub import OpenAIStub
from tests.scenarios.test_personal import setting


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
             "args": {"start_time": pg.params["arrival"], "steps": [setting(c) for c in on_first]}}]
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
    base = tmp_path_factory.mktemp("labels")   # the labelled tasks alone, beside the committed households
    (base / "tasks.jsonl").write_text("".join(dump_task(t) + "\n" for t in first.values()))
    (base / HOUSEHOLDS_PACK).symlink_to(DEFAULT_TASKS.parent / HOUSEHOLDS_PACK)
    path = base / "labels.jsonl"
    path.write_text("".join(json.dumps({"task_id": t.id, "answer": a, "label": label, "kind": kind, "split": split})
                            + "\n" for t, a, label, kind, split in rows))
    return tasks, path


def test_each_row_is_scored_as_in_a_run(labelled):
    tasks, path = labelled
    rows = judge_labels(tasks, load_labels(path), DEFAULT_TASKS.parent)
    assert [r["verdicts"] for r in rows] == [{"rule": r["label"] == "pass"} for r in rows]
    assert [r["category"] for r in rows] == ["IG", "IG", "CF", "CF", "MC", "MC", "FR", "FR", "PG", "PG"]


def test_one_plan_not_withdrawn(labelled):
    tasks, path = labelled
    rows = load_labels(path)
    pg = next(t for t in tasks if t.id == rows[8]["task_id"])
    plan = rows[8]["answer"].split(": ", 1)[1]
    household = lived(pg, DEFAULT_TASKS.parent)
    for answer, ok in ((f"Here is what I think works best: {plan}", True),
                       (f"{plan} On second thought, don't run it until someone confirms.", False),
                       (f"Option 1: {plan} Option 2: {plan}", False)):
        assert score(pg, answer, household, decided=True)["success"] is ok, answer


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
    small = ("--tasks", str(path.parent / "tasks.jsonl"))
    code, out, err = twin(capsys, "judge-agreement", "--labels", str(path), *small)
    assert code == 0, err
    assert "### dev (5 answers)" in out and "### heldout (5 answers)" in out
    assert "| PG | 1 | 1/1 (100 %) |" in out and "| hedged | 1 | 1/1 (100 %) |" in out
    assert out.count("rule: kappa with the labels 1.000") == 4
    code, out, err = twin(capsys, "judge-agreement", "--labels", str(path), "--split", "dev", *small)
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


# ---- reading answers as a person does ------------------------------------------------------------
MEMBERS = [{"name": "Ada Berg"}, {"name": "Ben Berg"}]
ROOMS = {"bedroom": "Bedroom", "bedroom_2": "Bedroom 2", "living_room": "Living Room"}


@pytest.mark.parametrize("truth, answer, ok", [
    ("Ada Berg", "It was Ada.", True), ("Ada Berg", "Ada Berg, or maybe Ben.", False),
    ("Ada Berg", "Either Ada Berg or nobody.", False), ("Ada Berg", "Ada. Tobias, the lodger, saw it.", False),
    ("Ada Berg", "Ada did. Ben was out all day.", True), ("nobody", "No one did.", True),
    ("nobody", "Nobody, or Ben", False), ("17:37", "5:37 PM", True), ("17:37", "17h37. (Ada is 47.)", True),
    ("17:37", "At 17:37 on 2025-01-28.", True), ("17:37", "17:37 or 17:45", False),
    ("did not come home", "She didn't come home that day.", True),
    ("22.5 °C", "22.5 degrees Celsius (72.5 °F)", True), ("22.5 °C", "22 °C", False),
    ("23 °C", "It would change from 22 °C to 23 °C.", True), ("23 °C", "23 °C (instead of 22 °C).", True),
    ("47", "Forty-seven.", True), ("47", "47 or 48", False),
    ("bedroom_2", "Bedroom 2", True), ("bedroom", "bedroom_2", False), ("bedroom", "bedroom or living_room", False),
])
def test_an_answer_is_read_as_a_person_reads_it(truth, answer, ok):
    question = "What was the temperature, to the nearest degree?" if truth == "23 °C" else "Who or when?"
    assert answer_matches(truth, answer, question, MEMBERS, ROOMS) is ok


def test_a_copied_question_is_no_answer():
    question = "Suppose Ada Berg preferred their rooms at 21 °C. What temperature does Ada Berg like?"
    assert not answer_matches("21 °C", f"You asked: {question}", question, MEMBERS)
    assert answer_matches("21 °C", "Ada prefers 21 °C.", question, MEMBERS)


@pytest.mark.parametrize("answer, picked", [
    ("B", "B"), ("b", "B"), ("The answer is B.", "B"), ("Option B: 21 °C", "B"), ("B) 21 °C", "B"),
    ("21 °C", "B"), ("B) 20 °C", None), ("A or B", None), ("B. But I may be wrong about that.", None),
    ("A B C D E", None),
])
def test_a_choice_is_one_option_by_letter_text_or_both(answer, picked):
    assert choice(answer, ["20 °C", "21 °C", "21.5 °C"]) == picked


def test_a_ranking_puts_one_real_feature_first_and_is_not_the_given_order():
    features = ["a.OnOff.On", "b.OnOff.Off", "c.LevelControl.MoveToLevel"]
    assert ranking('["c.LevelControl.MoveToLevel", "a.OnOff.On"]', features) == ["c.LevelControl.MoveToLevel",
                                                                                 "a.OnOff.On"]
    assert ranking(", ".join(features), features) == []                     # the order given
    assert ranking("x.OnOff.On, a.OnOff.On", features) == []                # a made-up feature first
    assert ranking("1. a.OnOff.On\nb.OnOff.Off\n2. the rest", features) == []   # a tie at the top
    assert ranking("b.OnOff.Off, a.OnOff.On. Though any could come first.", features) == []


def test_a_one_word_name_is_read_only_as_a_name():
    members = [{"name": "Dev Rao"}, {"name": "Ada Rao"}]
    assert answer_matches("Ada Rao", "Ada, while the dev team slept.", "Who?", members)
    assert not answer_matches("Ada Rao", "Ada or Dev", "Who?", members)
    assert answer_matches("Ada Rao", "Ada, one of the two of them.", "Who?", members)


def test_the_scorer_agrees_with_the_committed_dev_labels_on_a_sample():
    """The independent labels' dev part, on a seeded sample of households (the whole set, both
    parts: `twin bench personal judge-agreement`, docs/judge-labels.md)."""
    tasks = load_tasks(DEFAULT_TASKS)
    by_id = {t.id: t for t in tasks}
    rows = [r for r in load_labels() if r.get("split") == "dev" and r["task_id"] in by_id]
    households = sorted({by_id[r["task_id"]].household for r in rows})
    chosen = set(random.Random("agreement-sample").sample(households, 8))
    sample = [r for r in rows if by_id[r["task_id"]].household in chosen]
    judged = judge_labels(tasks, sample, DEFAULT_TASKS.parent)
    wrong = [(r["task_id"], r["kind"], r["answer"][:80]) for r in judged if r["verdicts"]["rule"] != r["should_pass"]]
    assert len(sample) > 60 and len(wrong) <= 0.02 * len(sample), wrong


@pytest.mark.parametrize("answer", ["Ada, I believe.", "Ada, if I remember right.", "Ada (don't quote me).",
                                    "Ada. According to Tobias, anyway.", "Ada. Tobias noted it down."])
def test_common_hedges_and_invented_sources_fail(answer):
    assert not answer_matches("Ada Berg", answer, "Who?", MEMBERS)


# ---- the second round: classes of free wording (each written from the class, not from a label) ----------
@pytest.mark.parametrize("answer", [
    "Ada, though it might have been Ben.", "Ada. I could easily be mixing them up.", "Ada, if memory serves.",
    "Ada, to the best of my knowledge.", "My guess: Ada.", "Ada, I'd assume.", "Ada, I'm fairly sure.",
    "Ada. Unless it was Ben.", "Ada. Or not.", "Ada. Or Ben.", "Ada, or was it Ben?", "Ada? Ben?",
    "Ada. I keep changing my mind on this one.", "Ada. Actually, wait: Ben.", "Ada (I may have this backwards).",
])
def test_doubt_in_any_words_fails(answer):
    assert not answer_matches("Ada Berg", answer, "Who?", MEMBERS)


@pytest.mark.parametrize("answer", [
    "Ada. (Source: Marek, the caretaker.)", "Ada, says Marek.", "Ada; my neighbour Marek keeps a log.",
    "Ada. Marek, our cleaner, was there.", "Ada (via Marek)",
])
def test_a_source_outside_the_household_fails(answer):
    assert not answer_matches("Ada Berg", answer, "Who?", MEMBERS)


@pytest.mark.parametrize("truth, answer", [
    ("Ada Berg", "Ada, Ben's sister."), ("Ada Berg", "Ada (Ben had left before her)."),
    ("Ada Berg", "Ada. Ben, her brother, was out."), ("Ada Berg", "ada"), ("Ada Berg", "Only Ada; nobody else."),
    ("nobody", "Not a single person."), ("nobody", "None."), ("nobody", "None of them did."),
    ("17:37", "5:37 PM (17:37)"), ("17:37", "17.37"),
    ("17:37", "seventeen thirty-seven"), ("17:37", "twenty-three minutes to six in the evening"),
    ("17:37", "1737 hrs"), ("21.5 °C", "twenty-one and a half degrees"), ("21.5 °C", "21½ °C"),
    ("22 °C", "22ºC"), ("22 °C", "22 deg C"), ("22 °C", "71.6 F"), ("22 °C", "295.15 K"),
    ("47", "47 (born the year the house was built)"),
    ("23 °C", "23 °C either way: the change makes no difference."),
    ("23 °C", "The change doesn't matter here; it stays 23 °C."),
    ("23 °C", "23 °C (vs. 21 °C as it really went)"), ("23 °C", "Under the change: 23 °C; what really happened: 21 °C"),
])
def test_a_true_answer_in_free_words_passes(truth, answer):
    assert answer_matches(truth, answer, "Who, when or how warm?", MEMBERS, ROOMS)


@pytest.mark.parametrize("truth, answer", [
    ("22 °C", "22 °C? 23 °C?"), ("17:37", "17:37 or 5:45 PM"), ("nobody", "None; Ben maybe."),
    ("Ada Berg", "Ada (or Ben)"), ("17:37", "between 17:30 and 17:45"),
])
def test_asking_or_offering_two_answers_fails(truth, answer):
    assert not answer_matches(truth, answer, "Who, when or how warm?", MEMBERS, ROOMS)


@pytest.mark.parametrize("answer, picked", [
    ("**B**", "B"), ("`B`", "B"), ("B!", "B"), ("✅ B", "B"), ("The right choice is b.", "B"),
    ("Not A — it's B.", "B"), ("B, not C.", "B"), ("Going with B.", "B"),
    ("B?", None), ("B... or C?", None), ("B (pretty sure)", None), ("B, though A could work", None),
])
def test_a_choice_in_free_words(answer, picked):
    assert choice(answer, ["20 °C", "21 °C", "21.5 °C"]) == picked


def test_a_ranking_in_free_words():
    features = ["a.OnOff.On", "b.OnOff.Off", "c.LevelControl.MoveToLevel"]
    assert ranking("Most likely **c.LevelControl.MoveToLevel**, then a.OnOff.On", features)[0] == \
        "c.LevelControl.MoveToLevel"
    assert ranking("c.LevelControl.MoveToLevel or a.OnOff.On, then b.OnOff.Off", features) == []
    assert ranking("c.LevelControl.MoveToLevel, a.OnOff.On (I could have these two swapped)", features) == []
    assert ranking("c.LevelControl.MoveToLevel, a.OnOff.On. Any order works really.", features) == []


def test_an_option_by_its_value_written_another_way():
    times = ["17:00", "18:55", "18:05", "18:30", "17:45"]
    assert choice("5:45 pm", times) == "E" and choice("E) quarter to six pm", times) == "E"
    assert choice("B) 5:45 PM", times) is None                       # letter and value disagree
    assert choice("E. She came in at 17:45, before Ben at 18:30.", times) == "E"   # a later sentence is an extra
    assert choice("22.5 degrees", ["22 °C", "22.5 °C", "23 °C"]) == "B"
    assert choice("fifty-four", ["52", "51", "55", "54"]) == "D"
    assert choice("option 2", ["52", "51"]) == "B" and choice("the second option", ["52", "51"]) == "B"


def test_features_with_other_separators_and_ties():
    features = ["a_light.OnOff.On", "b.OnOff.Off", "c.LevelControl.MoveToLevel"]
    assert ranking("c: LevelControl.MoveToLevel, then a_light: OnOff.On", features) == \
        ["c.LevelControl.MoveToLevel", "a_light.OnOff.On"]
    assert ranking("c / LevelControl / MoveToLevel > a_light.OnOff.On", features)[0] == "c.LevelControl.MoveToLevel"
    assert ranking("c.LevelControl.MoveToLevel and a_light.OnOff.On tie for first", features) == []
    assert ranking("Not b.OnOff.Off; top is c.LevelControl.MoveToLevel.", features)[0] == "c.LevelControl.MoveToLevel"


@pytest.mark.parametrize("truth, answer, ok", [
    ("Ada Berg", "Ada came home first, a few minutes ahead of Ben.", True),
    ("Ada Berg", "After Ben, Ada was the last to leave.", True), ("17:37", "17:37, just before Ben at 17:50", True),
    ("47", "Ada is 47, two years older than Ben.", True), ("47", "Ada is 47 years old; Ben is 45.", True),
    ("Ada Berg", "- Ada\n- Ben", False), ("Ada Berg", "Ada. Ben.", False), ("17:37", "17:37.\n18:05.", False),
    ("Ada Berg", "Ada.\nAda Berg.", True), ("17:37", "17:37\n5:37 PM", True), ("nobody", "Nobody.\nAda.", False),
])
def test_other_members_as_comparison_and_candidates_listed_line_by_line(truth, answer, ok):
    assert answer_matches(truth, answer, "Who or when?", MEMBERS, ROOMS) is ok


@pytest.mark.parametrize("truth, answer, ok", [
    ("Ada Berg", "Sure! Based on the household memory, Ada was the last to leave. Let me know if you need anything "
                 "else!", True),
    ("Ada Berg", "Ada. You might want to check the heating, and I could set it for her. May I help further?", True),
    ("Ada Berg", "Ada. I might be misremembering.", False), ("Ada Berg", "I might say Ada.", False),
    ("17:37", "Ada came home at 2025-03-02 17:37:00.", True),
    ("9 °C", "Had she come home 30 minutes earlier, the living room would have read 9 °C.", True),
])
def test_a_chatty_answer_is_read_for_its_claim(truth, answer, ok):
    assert answer_matches(truth, answer, "Who or when?", MEMBERS, ROOMS) is ok


def test_an_offer_to_act_is_no_doubt_about_a_ranking():
    features = ["a.OnOff.On", "b.OnOff.Off", "c.LevelControl.MoveToLevel"]
    answer = "1. c.LevelControl.MoveToLevel\n2. a.OnOff.On\nLet me know if you'd like me to act on any of these!"
    assert ranking(answer, features)[0] == "c.LevelControl.MoveToLevel"
    assert choice("Sure! The answer is D) 54, from the 2025-03-02 profile.", ["52", "51", "55", "54"]) == "D"


@pytest.mark.parametrize("truth, answer, ok", [
    ("Ada Berg", "Ada (she is 47).", True), ("Ada Berg", "Ada Berg (47)", True),
    ("Ada Berg", "Ada. She turned 47 in May.", True), ("Ada Berg", "Ada, who likes her rooms at 22.5 °C.", True),
    ("Ada Berg", "Ada. Her preferred light level is 240.", True),
    ("Ada Berg", "Ada (she is 30).", False), ("Ada Berg", "Ada Berg (30)", False),
    ("47", "Ada is 47; Ben is 50.", False),
    ("Ada Berg", "Ada, who likes her rooms at 20 °C.", False),
])
def test_a_fact_about_a_member_beside_the_answer_must_be_theirs(truth, answer, ok):
    members = [{"name": "Ada Berg", "age": 47, "preferences": {"temperature": 22.5}},
               {"name": "Ben Berg", "age": 45, "preferences": {"temperature": 21}}]
    assert answer_matches(truth, answer, "Who?", members) is ok
    # under a hypothetical preference the stated one is the supposed one
    assert answer_matches("20 °C", "Ada would like 20 °C.", "Suppose Ada preferred 20 °C. What does Ada like?", members)


@pytest.mark.parametrize("answer, ok", [
    ("Ada. Would you like me to turn on the light or adjust the thermostat?", True),
    ("Ada. Hope that helps — if not, let me know!", True), ("Assuming you mean the 2nd: Ada.", True),
    ("Hmm, let me check. Yes: Ada.", True), ("Ada. If anything seems unclear, let me know!", True),
    ("Ada; nobody else could have switched it on.", True), ("Ada, though Ben could also have.", False),
    ("Ada — let me know if I'm wrong.", False), ("Ada. Actually, no: Ben.", False),
])
def test_an_offer_or_a_closing_is_not_doubt_about_the_answer(answer, ok):
    assert answer_matches("Ada Berg", answer, "Who?", MEMBERS) is ok


def test_a_plan_written_one_step_at_a_time(labelled):
    tasks, path = labelled
    rows = load_labels(path)
    pg = next(t for t in tasks if t.id == rows[8]["task_id"])
    (step,) = json.loads(rows[8]["answer"].split(": ", 1)[1])
    household = lived(pg, DEFAULT_TASKS.parent)
    for answer, ok in ((f"Sure! Here are the steps:\n1. {json.dumps(step)}\nLet me know if you want changes.", True),
                       (f"1. {json.dumps(step)}\nActually, scrap that; leave the home as it is.", False)):
        assert score(pg, answer, household, decided=True)["success"] is ok, answer


# ---- made-up claims anywhere in the answer fail; true extras pass ----------------------------------
HOME = [{"name": "Ada Berg", "age": 47,
         "persona": "Ada Berg is a 47-year-old nurse (parent) who enjoys rowing and baking.",
         "preferences": {"wake": "06:30", "bed": "22:00", "temperature": 22.5, "light_level": 200,
                         "hobbies": ["rowing", "baking"]}},
        {"name": "Ben Berg", "age": 45, "preferences": {"wake": "07:10", "hobbies": ["chess"]}}]
DEVICES = ["hallway_occupancy_sensor", "kitchen_light", "front_door_lock"]


@pytest.mark.parametrize("answer, invented", [
    ("Ada. Ada loves rowing and baking.", False), ("Ada (Ada is really into sailing).", True),
    ("Ada; Ada enjoys baking and pottery.", True), ("Ada. Ben, a big fan of chess, came second.", False),
    ("Ada. Ada normally gets up at 6:30.", False), ("Ada. Ada usually wakes up at 9:05.", True),
    ("Ada. Ada goes to bed at 23:10.", True), ("Ada, who got up at 07:52 that day.", False),
    ("Ada prefers 22.5 °C and light level 200.", False), ("Ada prefers light level 90.", True),
    ("Ada; Ada is 47 years old.", False), ("Ada. For the record, Ben is 60.", True),
    ("Ada, going by the doorbell recording.", True), ("Ada: the driveway camera caught her.", True),
    ("Ada (the hallway motion sensor fired first).", False), ("Ada, says the door lock history.", False),
    ("Ada, per her smartwatch.", True), ("Eighteen hundred hours.", False),
    ("Ada; the dishwasher was still running when she came in.", True), ("Ada, and the kitchen light came on.", False),
    ("Ada, right after walking the dog.", True),
])
def test_a_made_up_fact_or_source_anywhere_is_caught(answer, invented):
    assert made_up(answer, HOME, {}, DEVICES, "Who was home first?") is invented
    assert answer_matches("Ada Berg", answer, "Who was home first?", HOME, {}, DEVICES) is (
        not invented and answer.startswith("Ada"))


def test_a_made_up_aside_fails_a_choice_a_ranking_and_a_plan(labelled):
    tasks, path = labelled
    rows = load_labels(path)
    mc, fr, pg = (next(t for t in tasks if t.id == rows[i]["task_id"]) for i in (4, 6, 8))
    home = lived(pg, DEFAULT_TASKS.parent)   # one household holds all three tasks' members and devices
    assert {mc.household, fr.household} == {pg.household}
    who = home.members()[0]["name"].split()[0]
    for task, answer in ((mc, rows[4]["answer"]), (fr, rows[6]["answer"]), (pg, rows[8]["answer"])):
        assert score(task, answer, home, decided=True)["success"], answer
        for extra in (f" The porch camera saw {who} leave.", f" ({who} is 130 years old, by the way.)"):
            assert not score(task, answer + extra, home, decided=True)["success"], extra


def test_label_words_hours_in_words_and_a_single_pick_are_read():
    members = [{"name": "Ada Berg"}, {"name": "Ben Berg"}]
    question = "Suppose Ben had left later. Who left last?"
    assert answer_matches("Ada Berg", "**Had he left later:** Ada\n**Actually:** Ben", question, members)
    assert not answer_matches("Ada Berg", "Ada.\nActually, it was Ben.", question, members)
    assert answer_matches("18:00", "Nineteen hundred hours, no: eighteen hundred hours.", "When?", members) is False
    assert answer_matches("18:00", "Eighteen hundred hours.", "When?", members)
    assert ranking("If I had to choose only one: **a.OnOff.On**.", ["b.OnOff.Off", "a.OnOff.On"]) == ["a.OnOff.On"]
    assert ranking("If I had to guess: a.OnOff.On", ["b.OnOff.Off", "a.OnOff.On"]) == []


@pytest.mark.parametrize("words, withdrawn", [
    ("Honestly this is only a guess, so it is safer to leave things be.", True),
    ("It would be better not to change anything tonight.", True), ("That's my best guess at her evening.", True),
    ("This sets everything before she is back.", False), ("Let me know if you'd like changes!", False),
])
def test_a_plan_called_a_guess_or_advised_against_is_withdrawn(words, withdrawn):
    assert bool(WITHDRAWN.search(words)) is withdrawn


def test_a_pet_is_the_households_own():
    pets = [{"name": "Pepper", "species": "dog"}]
    for answer, invented in (("Ada. Pepper barked when she came in.", False),
                             ("Ada, back from walking the puppy.", False), ("Ada; she fed the cat first.", True),
                             ("Ada. Biscuit barked when she came in.", True)):
        assert made_up(answer, HOME, {}, DEVICES, "Who was home first?", pets) is invented, answer


def test_a_room_the_home_does_not_have_is_made_up():
    rooms = {"kitchen": "Kitchen", "bedroom_2": "Bedroom 2", "closet": "Walk-in Closet"}
    for answer, invented in (("Ada, she was in the kitchen.", False), ("Ada; the closet light went on.", False),
                             ("Ada. She went into the garage first.", True), ("Ada, by the basement sensor.", True),
                             ("Ada, back from the office.", False)):
        assert made_up(answer, HOME, rooms, DEVICES, "Who was home first?") is invented, answer


def test_someone_brought_in_by_what_they_are_must_be_a_member():
    family = [{"name": "Ada Berg", "role": "parent", "persona": "Ada Berg is a 47-year-old nurse (parent)."},
              {"name": "Ben Berg", "role": "child", "persona": "Ben Berg is a 9-year-old pupil (child)."}]
    for answer, invented in (("Ada; her son was already in bed.", False), ("Ada, the kids say.", False),
                             ("Ada. Our lodger let her in.", True), ("Ada, according to her husband.", True),
                             ("Ada. The neighbours saw her car.", True)):
        assert made_up(answer, family, {}, DEVICES, "Who was home first?") is invented, answer


# ---- the fourth round's classes: an age or a habit said another way, a letter in words, a table --------
@pytest.mark.parametrize("answer, invented", [
    ("Ada. Mind you, Ada is only 30.", True), ("Ada. Ada's just 47, for what it's worth.", False),
    ("Ada; Ben's already 60.", True), ("Ada. Ben is still 45.", False),
    ("Ada. She is keen to know: Ada tends to turn in at 23:40.", True),
    ("Ada. Ada tends to go to bed at 22:00.", False),
    ("Ada. Ben likes to get up at 7:10.", False), ("Ada. Ben will usually wake at 5:00.", True),
    ("Ada, and Ada hits the sack around 21:15 most nights.", True),
])
def test_an_age_or_a_habit_said_another_way_must_be_the_members(answer, invented):
    assert made_up(answer, HOME, {}, DEVICES, "Who was home first?") is invented, answer


def test_a_letter_picked_in_words_is_the_pick_a_later_value_is_an_extra():
    options = ["21 °C", "22 °C", "23 °C", "24 °C", "25 °C"]
    assert choice("I'll pick option d. Ben likes 22 °C, by the way.", options) == "D"
    assert choice("going with c; the hall was 22 °C at noon", options) == "C"
    assert choice("22 °C or 24 °C.", options) is None


@pytest.mark.parametrize("answer, ok", [
    ("| Candidate |\n|---|\n| aged 47 |\n| aged 45 |", False), ("| Answer |\n|---|\n| aged 47 |", True),
    ("Candidates:\n47\n45", False), ("Answer:\n47", True),
])
def test_candidates_in_a_table_or_a_column_are_no_answer(answer, ok):
    assert answer_matches("47", answer, "How old is Ada?", HOME) is ok


def test_doubt_beside_a_plan_fails_it_as_beside_any_answer(labelled):
    tasks, path = labelled
    rows = load_labels(path)
    pg = next(t for t in tasks if t.id == rows[8]["task_id"])
    plan = rows[8]["answer"].split(": ", 1)[1]
    household = lived(pg, DEFAULT_TASKS.parent)
    for answer, ok in ((f"{plan}\nThis has her rooms ready when she walks in.", True),
                       (f"{plan} — probably, anyway.", False),
                       (f"{plan}\nIt fits her evenings, though I cannot rule out a slip in the log.", False),
                       (f"My hunch, untested:\n{plan}", False)):
        assert score(pg, answer, household, decided=True)["success"] is ok, answer


@pytest.mark.parametrize("truth, answer, ok", [
    ("Ada Berg", '{"answer": "Ada"}', True), ("17:37", '{"final_answer": "5:37 pm"}', True),
    ("47", '{"result": 47}', True), ("Ada Berg", '{"answer": "Ben"}', False),
    ("Ada Berg", '{"member": "Ada", "room": "kitchen"}', False),   # a tool's output, not an answer
    ("17:37", "Plan:\n1. Read the presence log.\n2. Take her first arrival.\nShe was back at 17:37.", True),
    ("47", "Steps:\n1. Open the members list.\n2. Find Ada.\nAda is 47.", True),
    ("47", "47. Ada also likes rooms at 22.5 °C.", True), ("47", "Candidates:\n1. 47\n2. 45", False),
    ("Ada Berg", "Ada, if I've understood the log correctly.", False),
    ("Ada Berg", "Ada — if I'm reading it right.", False),
])
def test_a_structured_reply_a_worked_answer_and_a_conditional_doubt(truth, answer, ok):
    members = [{"name": "Ada Berg", "age": 47, "preferences": {"temperature": 22.5}}, {"name": "Ben Berg", "age": 45}]
    assert answer_matches(truth, unwrapped(answer), "Who or when?", members) is ok, answer


def test_only_a_supposed_preference_excuses_another_preference():
    question = "Suppose Ada had come home an hour later. When would she have been home?"
    assert made_up("18:37. Ada likes her rooms at 19 °C.", HOME, {}, DEVICES, question)
    assert not made_up("Ada would like 19 °C.", HOME, {}, DEVICES, "Suppose Ada preferred 19 °C. What would she like?")


@pytest.mark.parametrize("answer", [
    "Joint top: a.OnOff.On and b.OnOff.Off", "Top two (tied): a.OnOff.On, b.OnOff.Off",
    "a.OnOff.On and b.OnOff.Off matter equally; then the others.",
])
def test_a_tie_at_the_top_in_any_order_of_words_ranks_nothing(answer):
    assert ranking(answer, ["b.OnOff.Off", "a.OnOff.On", "c.OnOff.On"]) == []


@pytest.mark.parametrize("answer, invented", [
    ("Ada came in first. She is 47 and a nurse.", False), ("Ada came in first. She's 39 and a nurse.", True),
    ("Ada. She normally gets up at 5:15.", True), ("Ada. Her usual wake time is 06:30.", False),
    ("Ada, then Ben. He prefers 30 °C.", False),   # two named before: whose preference is not known
    ("Ada. She was upstairs in the sauna.", True), ("Ada; she was in the shed first.", True),
])
def test_a_fact_said_of_she_or_he_is_about_the_member_just_named(answer, invented):
    assert made_up(answer, HOME, {"kitchen": "Kitchen"}, DEVICES, "Who was home first?") is invented, answer


@pytest.mark.parametrize("answer, ok", [
    ('{"final_answer": "Ada", "confidence": "high"}', True), ('{"answer": "Ada", "confidence": "low"}', False),
    ('{"answer": "Ada", "source": "the hallway motion sensor"}', True),
    ("Ada, though I couldn't fully verify it.", False), ("Ada; I was unable to confirm it in the log.", False),
])
def test_the_fields_beside_a_structured_answer_and_an_unverified_one(answer, ok):
    assert answer_matches("Ada Berg", unwrapped(answer), "Who was home first?", HOME, {}, DEVICES) is ok, answer


def test_a_role_a_named_pet_and_an_up_by_time_must_be_the_households():
    flat = [{"name": "Rosa Lind", "age": 29, "role": "roommate",
             "persona": "Rosa Lind is a 29-year-old baker (roommate).", "preferences": {"wake": "05:40"}}]
    pets = [{"name": "Pip", "species": "tortoise"}]
    for answer, invented in (("Rosa; she is the household's roommate.", False), ("Rosa, as the family's lodger.", True),
                             ("Rosa. Rosa is one of the kids.", True), ("Rosa is usually up by 05:40.", False),
                             ("Rosa is usually up by 07:00.", True), ("Rosa's routine is set up at 17:20.", False),
                             ("Rosa. Their pet named Pip slept.", False),
                             ("Rosa. A pet called Biscuit slept.", True), ("Rosa, with Pip the tortoise.", False),
                             ("Rosa, with Nugget the tortoise.", True)):
        assert made_up(answer, flat, {}, DEVICES, "Who was home first?", pets) is invented, answer


def test_under_a_supposed_preference_only_it_or_the_members_own_may_be_stated():
    members = [{"name": "Ada Berg", "age": 47, "preferences": {"temperature": 22.5}}]
    question = "Suppose Ada Berg preferred her rooms at 20 °C. What would Ada like her rooms at?"
    for answer, invented in (("20 °C; Ada really likes 22.5 °C.", False), ("20 °C. Ada likes 25 °C, mind.", True),
                             ("Ada would like 20 °C.", False)):
        assert made_up(answer, members, {}, None, question) is invented, answer
