"""The reference agent reads SimuHome's own free-text wording (`scenarios/simuhome/reader.py`).
The files are ours, in SimuHome's format; the queries are phrasings we wrote in its style."""
from __future__ import annotations

from scenarios.simuhome.evaluate import run_episode
from scenarios.simuhome.importer import import_file
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from tests.scenarios.test_simuhome_import import ac, asserts, dimmer, dryer, light, room, timed, washer, write


def solve(path):
    episode = import_file(path).episode
    return run_episode(episode, ReferenceAgent(), RuleJudge())


def test_explicit_commands(tmp_path):
    path = write(tmp_path, "qt3_f", "qt3", "feasible",
                 {"hall": room(light("hall_light_1")), "den": room(ac("den_air_conditioner_1"))},
                 [asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True)),
                  asserts("den", "den_air_conditioner_1", "air_conditioner", ("1.OnOff.OnOff", True),
                          ("1.Thermostat.SystemMode", 3), ("1.FanControl.PercentSetting", 45))],
                 query="Coming home soon, so switch on the hall light 1. Also power on AC 1 in the den, "
                       "put it on cooling and the fan at forty five percent.")
    result = solve(path)
    assert result["success"], result["failures"]


def test_missing_device_is_refused(tmp_path):
    path = write(tmp_path, "qt3_if", "qt3", "infeasible", {"hall": room(light("hall_light_1"))},
                 [asserts("hall", "hall_light_2", "on_off_light", ("1.OnOff.OnOff", True))],
                 query="It is dark by the stairs, turn on hall light 2 please.")
    result = solve(path)
    assert result["success"], result["failures"]
    assert "no light 2" in result["answer"]


def test_room_question(tmp_path):
    path = write(tmp_path, "qt1_f", "qt1", "feasible", {"den": room(light("den_light_1"), humidity=4800)},
                 [{"variant": "room_state", "room_id": "den", "room_state": "humidity", "current_value": 48,
                   "unit": "%"}], query="I want to read in the den later, how humid does it feel in there now",
                 required=[{"tool": "get_room_states", "params": {"room_id": "den"}}])
    result = solve(path)
    assert result["success"], result["failures"]


def test_complaint_moves_the_room(tmp_path):
    path = write(tmp_path, "qt2_f", "qt2", "feasible", {"den": room(dimmer("den_dimmable_light_1", on=False))},
                 [{"room_id": "den", "room_state": "illuminance", "direction": "increase", "feasibility": True}],
                 query="Ugh, the den is so gloomy tonight, I can barely see the page of my book.")
    result = solve(path)
    assert result["success"], result["failures"]


def test_minutes_from_now_and_after_the_previous_one(tmp_path):
    goals = [timed(600, 30, asserts("den", "den_dimmable_light_1", "dimmable_light", ("1.OnOff.OnOff", True),
                                    ("1.LevelControl.CurrentLevel", 40))),
             timed(900, 30, asserts("den", "den_dimmable_light_1", "dimmable_light",
                                    ("1.LevelControl.CurrentLevel", 15)))]
    path = write(tmp_path, "qt4-1_f", "qt4-1", "feasible", {"den": room(dimmer("den_dimmable_light_1", on=False))},
                 goals, query="Movie night: 10 minutes from now set dimmer light 1 in the den to level 40, and "
                              "5 minutes after the previous action bring it down to level 15.")
    result = solve(path)
    assert result["success"], result["failures"]


def test_clock_time_that_disagrees_is_a_conflict(tmp_path):
    # it is 10:00 now: 10 minutes from now is 10:10, not 10:25
    goals = [timed(600, 30, asserts("den", "den_light_1", "on_off_light", ("1.OnOff.OnOff", True)))]
    path = write(tmp_path, "qt4-1_if", "qt4-1", "infeasible", {"den": room(light("den_light_1"))}, goals,
                 query="At 10:25 AM, which is 10 minutes from now, turn on light 1 in the den.",
                 temporal_conflict={"expected_time": "10:10"})
    result = solve(path)
    assert result["success"], result["failures"]
    assert "10:10 AM" in result["answer"]


def test_after_an_appliance_finishes(tmp_path):
    # the washer has 30 minutes left: 5 minutes after it finishes is 35 minutes from now
    goals = [timed(2100, 30, asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True)),
                   anchor={"room_id": "hall", "device_id": "hall_laundry_washer_1", "device_type": "laundry_washer"})]
    path = write(tmp_path, "qt4-2_f", "qt4-2", "feasible",
                 {"hall": room(light("hall_light_1"), washer("hall_laundry_washer_1", remaining=1800),
                               dryer("hall_laundry_dryer_1"))},
                 goals, query="Folding later. 5 minutes after washer 1 in the hall finishes, turn on light 1 in "
                              "the hall.")
    result = solve(path)
    assert result["success"], result["failures"]


def test_complaint_nothing_can_fix_is_explained(tmp_path):
    path = write(tmp_path, "qt2_if", "qt2", "infeasible", {"den": room(light("den_light_1"))},
                 [{"room_id": "den", "room_state": "humidity", "direction": "decrease", "feasibility": False}],
                 query="Ugh, the den is so muggy, the cushions feel damp every time I sit down.",
                 meta={"infeasible_family": "nonexistence"})
    result = solve(path)
    assert result["success"], result["failures"]
    assert "no device in the den" in result["answer"]


def test_wait_for_a_finish_in_another_sentence(tmp_path):
    # the washer has 30 minutes left; the dryer starts 10 minutes after it is done
    goals = [timed(2400, 30, asserts("hall", "hall_laundry_dryer_1", "laundry_dryer",
                                     ("1.OperationalState.OperationalState", 1)),
                   anchor={"room_id": "hall", "device_id": "hall_laundry_washer_1", "device_type": "laundry_washer"})]
    path = write(tmp_path, "qt4-3_f", "qt4-3", "feasible",
                 {"hall": room(washer("hall_laundry_washer_1", remaining=1800), dryer("hall_laundry_dryer_1"))},
                 goals, query="I'm heading out for groceries. Wait for washer 1 in the hall to finish. After 10 "
                              "minutes start dryer 1 in the hall.")
    result = solve(path)
    assert result["success"], result["failures"]
    assert "Scheduled" in result["answer"]
