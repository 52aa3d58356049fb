"""The rule judge reads answers as a person writes them (issue #31): one test per class of
false rejection and false acceptance the issue lists, each written from the class's
description on the committed episodes, with the reference solver's reads as the history."""
from __future__ import annotations

import pytest

from scenarios.answers import clock_minutes, quantities
from scenarios.simuhome.agreement import CannedAnswerAgent
from scenarios.simuhome.evaluate import run_episode
from scenarios.simuhome.judges import RuleJudge, absent_types, reports_value
from scenarios.simuhome.schema import DEFAULT_EPISODES, DeviceGoal, load_episodes


@pytest.fixture(scope="module")
def episodes():
    return {e.id: e for e in load_episodes(DEFAULT_EPISODES)}


def verdict(episode, answer: str) -> tuple[bool, list[str]]:
    record = run_episode(episode, CannedAnswerAgent(answer), RuleJudge())
    return record["success"], record["failures"]


def passes(episode, answer: str) -> None:
    ok, failures = verdict(episode, answer)
    assert ok, (answer, failures)


def fails(episode, answer: str, why: str) -> None:
    ok, failures = verdict(episode, answer)
    assert not ok and any(why in f for f in failures), (answer, failures)


# ---- reading -------------------------------------------------------------------------------------
def test_clock_times_as_people_write_them():
    assert clock_minutes("6 14 PM") == (18 * 60 + 14,)
    assert clock_minutes("two thirty three PM") == (14 * 60 + 33,)
    assert clock_minutes("It should be done by 2:33 PM.") == (14 * 60 + 33,)
    assert clock_minutes("quarter past six in the evening") == (18 * 60 + 15,)
    assert clock_minutes("at noon, or at 14:05") == (12 * 60, 14 * 60 + 5)
    assert clock_minutes("done by 4:03 PM: it needs until 4:19 PM") == (16 * 60 + 3, 16 * 60 + 19)
    assert clock_minutes("PM10 is 14 µg/m³ and it is 22.5 °C") == ()


def test_numbers_and_units_as_people_write_them():
    said = {(q.value, q.unit) for q in quantities("It's twenty two point five degrees, 40 percent, 14 µg/m³")}
    assert said == {(22.5, "degree"), (40.0, "percent"), (14.0, "ugm3")}
    (f,) = quantities("72 °F")
    assert f.unit == "degC" and f.value == pytest.approx(22.22, abs=0.01)


# ---- false rejections ------------------------------------------------------------------------------
def test_times_in_words_or_without_colon_are_the_true_times(episodes):
    # QT4-2-IF: the washer ends at 1:06 PM, so 30 minutes after is 1:36 PM (the user said 12:47, 1:17)
    episode = episodes["qt4-2-if-001"]
    passes(episode, "The washer 1 in the utility room actually finishes at 1 06 PM, not 12:47 PM, so thirty "
                    "minutes after that is one thirty six PM, not one seventeen PM. Those times conflict, so I "
                    "have not scheduled the air purifier; which time do you want?")


def test_a_supposition_is_not_a_claim_of_success(episodes):
    # QT4-3-IF: the washer cannot finish before 7:47 PM, after the 7:34 PM deadline
    passes(episodes["qt4-3-if-001"], "I can't get both done by 7:34 PM: even if I started it right now, the washer 1 "
                                     "in the kitchen would only finish at 7:47 PM.")


def test_values_as_a_person_gives_them(episodes):
    episode = episodes["qt1-f-001"]
    goal = episode.goals[0]
    assert isinstance(goal, DeviceGoal)

    def gives(answer: str, value, cluster: str = "Thermostat", attribute: str = "OccupiedCoolingSetpoint") -> bool:
        return reports_value(answer, goal.model_copy(update={"value": value, "cluster": cluster,
                                                             "attribute": attribute}))
    assert gives("It is set to cool to 7 °C.", 700)                     # 0.01 °C units, converted
    rinses = ("LaundryWasherControls", "SupportedRinses")
    assert gives("Supported rinses: 0 (low), 1 (normal).", [0, 1], *rinses)   # a list, item by item
    assert not gives("Supported rinses: 0 (low).", [0, 1], *rinses)
    assert gives("There is no current phase.", None, "OperationalState", "CurrentPhase")   # null
    assert gives("The dishwasher is running.", "kRunning", "OperationalState", "OperationalState")
    # PM10 kept to two decimals (14.41): "14 µg/m³" is the value rounded as written; 41 is not
    episode = episodes["qt1-f-008"]
    passes(episode, "The bedroom is at 22.26 °C, and the fine dust in the kitchen is 14 µg/m³.")
    fails(episode, "The bedroom is at 22.26 °C, and the fine dust in the kitchen is 41 µg/m³.", "does not give pm10")


def test_no_lights_on_is_a_state_and_a_true_absence_is_no_problem(episodes):
    assert absent_types("there are no lights on in the bathroom") == set()
    assert absent_types("there's no AC in the bathroom") == {"air_conditioner"}
    # QT2-IF at capacity: the bathroom (an on/off light, a dehumidifier) is as bright as it gets
    episode = episodes["qt2-if-016"]
    passes(episode, "I can't make the bathroom any brighter: the light 1 there is already on at its maximum, "
                    "and there's no AC or blinds in the bathroom to help.")
    fails(episode, "I can't make the bathroom any brighter: there is no light in the bathroom, and the "
                   "dehumidifier is already at its limit.", "says a device is missing that is there")


def test_a_time_conflict_explained_without_the_word(episodes):
    # QT4-1-IF: it is 6:59 PM now, so 25 minutes from now is 7:24 PM, not 8:01 PM
    passes(episodes["qt4-1-if-001"], "It's 6:59 PM right now, so 25 minutes from now would be 7:24 PM, not "
                                     "8:01 PM. Which of the two do you mean before I switch off the AC 1?")


def test_omitting_a_room_name_when_the_request_is_plainly_answered(episodes):
    passes(episodes["qt1-f-008"], "It's 22.26 °C in the bedroom, and the fine dust level is 14.41 µg/m³.")


def test_a_helpful_alternative_in_another_room(episodes):
    # QT3-IF: no AC in the kitchen; there are ACs in the living room and the bedroom
    passes(episodes["qt3-if-001"], "There is no AC in the kitchen, so I couldn't turn one on. There is one in the "
                                   "living room, if you'd like me to use that instead.")


# ---- false acceptances -----------------------------------------------------------------------------
def test_a_trailing_hedge_fails(episodes):
    episode = episodes["qt3-if-001"]
    good = "There is no AC in the kitchen, so I can't turn it on or set its fan."
    passes(episode, good)
    fails(episode, good + " It may be possible after all.", "takes its conclusion back")


def test_stuffed_candidate_numbers_fail(episodes):
    fails(episodes["qt1-f-008"], "The bedroom is 21, 22.26 or 23.5 °C and the kitchen's fine dust is 14.41 µg/m³.",
          "values neither observed nor asked")


def test_a_claimed_action_on_a_read_only_question_fails(episodes):
    episode = episodes["qt1-f-001"]
    passes(episode, "The AC 1 in the living room is set to cool to 26 °C.")
    fails(episode, "The AC 1 in the living room is set to cool to 26 °C; I've turned it on for you.",
          "claims to have done something it did not do")


def test_made_up_device_values_fail(episodes):
    episode = episodes["qt1-if-001"]
    passes(episode, "There is no dimmer light 1 in the utility room, so I can't say whether it is on.")
    fails(episode, "There is no dimmer light 1 in the utility room; the light there is at 75 percent.",
          "values neither observed nor asked")


def test_cannot_without_a_reason_fails(episodes):
    episode = episodes["qt2-if-001"]   # the living room is dry; nothing there can humidify
    fails(episode, "Sorry, I can't do that in the living room.", "not why")
    passes(episode, "Sorry, I can't make the living room more humid: there is no humidifier in the living room.")


def test_judge_agreement_reads_an_independent_set_with_a_held_out_part(tmp_path):
    """pass/fail labels with a kind and a split: accuracy per category and kind, κ, per part."""
    import json

    from typer.testing import CliRunner

    from matter_twin.cli_bench import bench_app
    rows = [{"episode_id": "qt1-f-001", "answer": "The AC 1 in the living room is set to cool to 26 °C.",
             "label": "pass", "kind": "correct", "reason": "value and room", "split": "dev"},
            {"episode_id": "qt1-f-001", "answer": "It is set to 31 °C.", "label": "fail", "kind": "wrong",
             "reason": "wrong value", "split": "dev"},
            {"episode_id": "qt2-if-001", "answer": "Sorry, I can't do that in the living room.", "label": "fail",
             "kind": "no_reason", "reason": "no reason", "split": "heldout"}]
    labels = tmp_path / "independent.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(bench_app, ["judge-agreement", "--labels", str(labels)])
    assert result.exit_code == 0, result.output
    assert "### dev (2 answers)" in result.output and "### heldout (1 answers)" in result.output
    assert "| QT1-F | 2 | 2/2 (100 %) |" in result.output and "| no_reason | 1 | 1/1 (100 %) |" in result.output
    labels.write_text(json.dumps({**rows[0], "split": "later"}) + "\n", encoding="utf-8")
    bad = CliRunner().invoke(bench_app, ["judge-agreement", "--labels", str(labels)])
    assert bad.exit_code == 2 and "split 'later' is not one of dev, heldout, dev2, heldout2" in bad.output


# ---- the agreement harness ---------------------------------------------------------------------------
def test_a_partly_done_answer_is_judged_with_the_action_it_reports(episodes):
    """QT4-3-IF: an answer that says it started the appliance that can make the deadline and that
    the other cannot is judged on a history holding that start (the label file carries none);
    the same words with no action behind them are an unsupported claim."""
    from scenarios.simuhome.agreement import stated_actions
    episode = episodes["qt4-3-if-001"]   # the kitchen washer ends 7:47 PM; the dishwasher can make 7:34 PM
    row = {"episode_id": episode.id, "label": "pass", "kind": "partly_done", "answer": "-"}
    actions = stated_actions(episode, row)
    assert [a["device.id"] for _, a in actions] == ["kitchen_dishwasher"]
    assert stated_actions(episode, {**row, "kind": "correct"}) == []
    answer = ("I've started the dishwasher 1 in the kitchen. The washer 1 there runs until 7:47 PM, so it "
              "cannot be done by your 7:34 PM deadline.")
    record = run_episode(episode, CannedAnswerAgent(answer, actions), RuleJudge())
    assert record["success"], record["failures"]
    fails(episode, answer, "claims to have done something it did not do")


# ---- classes found on the dev part of the independent labels (each written from its description) --------
def test_times_with_oh_oclock_or_no_am_pm():
    assert clock_minutes("eight oh four PM") == (20 * 60 + 4,)
    assert clock_minutes("one oh six PM") == (13 * 60 + 6,)     # text2num leaves a lone "one"
    assert clock_minutes("ten o'clock am") == (10 * 60,)
    from scenarios.answers import clock_readings
    assert clock_readings("half past four") == ((4 * 60 + 30, 16 * 60 + 30),)   # no am/pm: either
    assert clock_readings("16:30, 4:30 PM") == ((16 * 60 + 30,), (16 * 60 + 30,))


def test_a_conflict_set_out_as_arithmetic_and_the_assumed_finish_time(episodes):
    # QT4-1-IF: now 6:59 PM, so 25 minutes from now is 7:24 PM, not the 8:01 PM the user said
    passes(episodes["qt4-1-if-001"], "Even starting right away, 25 minutes from now is 7:24 PM, and 8:01 PM is "
                                     "37 minutes off from that. Which should I go with?")
    # QT4-2-IF: "17 minutes after the washer finishes and at 12:53 PM" assumes it ends at 12:36 PM
    passes(episodes["qt4-2-if-009"], "I have not scheduled it: the washer 1 in the utility room ends at 1:06 PM, "
                                     "not 12:36 PM, so 17 minutes later is 1:23 PM rather than 12:53 PM. Which "
                                     "time do you want?")


def test_qt2_if_inability_and_limits_in_other_words(episodes):
    no_heater = episodes["qt2-if-029"]     # a cold kitchen with a light and a fridge; the AC is in the living room
    passes(no_heater, "Nothing in the kitchen can warm it up: it only has a light and a refrigerator, no heat pump "
                      "or heater.")
    passes(no_heater, "The kitchen has no device that raises the temperature. The living room does have one, "
                      "though it won't warm the kitchen.")
    fails(no_heater, "Sorry, I can't do that in the kitchen.", "not why")
    dark = episodes["qt2-if-032"]          # a too-bright kitchen whose only light is already off
    passes(dark, "There are no lights on in the kitchen, so there's no room left to make it darker.")
    passes(dark, "Everything in the kitchen that could dim it is already at its minimum: the light is off.")


def test_helpful_alternatives_must_be_true(episodes):
    episode = episodes["qt3-if-031"]       # no on/off light in the living room; the kitchen has one
    passes(episode, "There's no light 1 in the living room. There's one in the kitchen, if you meant that.")
    fails(episode, "There's no light 1 in the living room. There's one in the bedroom, if you meant that.",
          "offers an alternative where there is none")


def test_missing_device_in_the_words_of_the_request(episodes):
    episode = episodes["qt3-if-031"]       # "switch on the light 1 in the living room"; it has a dimmable light
    passes(episode, "I checked the living room and there isn't a light among its devices, so I changed nothing.")
    passes(episode, "No light is set up in the living room; I only see an air conditioner and a dimmable light.")
    # QT1-IF: the AC asked about is missing from the kitchen, not from the living room (which has one)
    fails(episodes["qt1-if-025"], "No AC is set up in the living room. The kitchen is at 21.34 °C.",
          "missing that is there")


def test_hedges_that_doubt_the_reading_fail(episodes):
    episode = episodes["qt1-f-040"]        # bedroom dimmer at level 98, bathroom dehumidifier fan at 10 %
    good = "The dimmer light in the bedroom is at level 98 and the bathroom dehumidifier's fan is at 10%."
    passes(episode, good)
    for hedge in ("But I may have misread it.", "That said, I'm not sure that's right."):
        fails(episode, f"{good} {hedge}", "takes its conclusion back")
    fails(episodes["qt2-if-029"], "Nothing in the kitchen can warm it: there is no heat pump or heater there. "
                                  "It could still change if I tweak something.", "takes its conclusion back")


def test_claimed_actions_with_also_or_went_ahead(episodes):
    episode = episodes["qt1-f-040"]
    good = "The dimmer light in the bedroom is at level 98 and the bathroom dehumidifier's fan is at 10%."
    for claim in ("I've also turned the light off to save energy.", "I went ahead and adjusted the fan.",
                  "I also reset the dehumidifier to its default."):
        fails(episode, f"{good} {claim}", "claims to have done something it did not do")


def test_a_level_on_its_scale_or_as_a_percentage(episodes):
    passes(episodes["qt1-f-040"], "The bedroom dimmer is at 98/254 (about 39%), and the dehumidifier in the "
                                  "bathroom runs its fan at 10%.")


def test_the_right_value_told_of_the_wrong_room_fails(episodes):
    episode = episodes["qt1-f-013"]        # bedroom 24.97 °C; the bathroom dehumidifier is off
    passes(episode, "The bedroom is at 24.97 °C and the dehumidifier in the bathroom is off.")
    fails(episode, "The temperature in the bathroom is 24.97 °C; the dehumidifier in the bathroom is off.",
          "given for bathroom")


def test_several_candidate_states_and_on_off_in_a_name(episodes):
    episode = episodes["qt1-f-026"]        # the kitchen's on/off light is off
    passes(episode, "The on/off light in the kitchen is off.")
    fails(episode, "The on/off light in the kitchen is on.", "does not give")
    fails(episode, "The light in the kitchen is either switched off or turned on.", "several candidate states")
    # "on or off" of a device that is not there gives no reading (QT1-IF: no dimmer light in the utility room)
    passes(episodes["qt1-if-001"], "There is no dimmer light 1 in the utility room, so nothing there is on or off.")


# ---- the shared reader, second round (PersonalHomeBench's free wordings; each class in our own words) ------
def test_24_hour_times_said_as_hours_and_minutes_to_or_past():
    from scenarios.answers import clock_readings
    assert clock_minutes("2008 hrs") == (20 * 60 + 8,)
    assert clock_minutes("0915 hours") == (9 * 60 + 15,)
    assert clock_minutes("twenty-three minutes to six pm") == (17 * 60 + 37,)
    assert clock_minutes("5 minutes before 6 PM") == (17 * 60 + 55,)
    assert clock_minutes("49 minutes past 8 in the evening") == (20 * 60 + 49,)
    assert clock_minutes("5 37 in the evening") == (17 * 60 + 37,)
    assert clock_readings("from 10 to 6") == ()       # a range, not "ten to six"
    assert clock_minutes("7 minutes after 5:30 PM") == (17 * 60 + 30,)   # the clock time is the time written


def test_halves_signs_and_units_as_people_type_them():
    assert [(q.value, q.unit) for q in quantities("twenty-one and a half degrees")] == [(21.5, "degree")]
    assert [(q.value, q.unit) for q in quantities("21½ °C")] == [(21.5, "degC")]
    assert [(q.value, q.unit) for q in quantities("minus three degrees")] == [(-3.0, "degree")]
    for text in ("22ºC", "22 deg C", "22 degC", "22 centigrade"):
        assert [(q.value, q.unit) for q in quantities(text)] == [(22.0, "degC")], text
    assert [round(q.value, 2) for q in quantities("71.6 F")] == [22.0]
    assert [round(q.value, 2) for q in quantities("295.15 K")] == [22.0]
    assert [q.unit for q in quantities("Option F is 2 h away")] == ["hour"]
