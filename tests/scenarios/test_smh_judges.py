"""SMH-Bench's rule judge reads a reply's claims against the start home: true extras pass, false
ones (a reading, a device's state, a device the room lacks) fail anywhere in the reply, and so do
doubt, a second candidate and a guess; a TC3 ask must leave the open value to the user and say
nothing false. The sentences are ours, one per class of reply."""
from __future__ import annotations

import json
from typing import Any

import pytest

from scenarios.smh.judges import RULE_JUDGE, _Home
from scenarios.smh.tasks import SmhTask, build_home, load_tasks


@pytest.fixture(scope="module")
def tasks() -> list[SmhTask]:
    return load_tasks()


def _first(tasks: list[SmhTask], test: Any) -> tuple[SmhTask, Any, _Home]:
    task = next(t for t in tasks if test(t))
    home = build_home(task)
    return task, home, _Home(home)


def test_a_reading_with_true_extras_passes_and_a_false_extra_fails(tasks):
    task, home, facts = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    other = next(n for n in facts.rooms if n != room)
    there = round(home.rooms[facts.rooms[other]].temperature, 1)
    ok = RULE_JUDGE.answer
    assert ok(task, f"The {room} is at {value} °C; for comparison the {other} is at {there} °C.", home)[0]
    assert ok(task, f"It's {value} degrees in the {room}. The {other} reads {there}°.", home)[0]
    assert not ok(task, f"The {room} is at {value} °C; the {other} is at {there + 2.5:.1f} °C.", home)[0]
    assert not ok(task, f"{value} °C, and {round(home.rooms[facts.rooms[room]].humidity) + 9}% humidity in "
                        f"the {room}.", home)[0]
    # doubt, a second candidate or a guess takes the reading back wherever it stands
    for tail in ("I cannot promise that, the sensor may vary.", "Or possibly a degree more.",
                 "That's my best guess.", "I don't have direct access to the sensor, though."):
        assert not ok(task, f"It's {value} °C in the {room}. {tail}", home)[0], tail
    assert not ok(task, f"Either {value} or {value + 1:.1f} degrees.", home)[0]


def test_a_count_is_read_from_words_and_the_listed_devices_must_be_so(tasks):
    task, home, facts = _first(tasks, lambda t: t.query == "How many lights are on in the home?"
                               and t.answer["value"] >= 2)
    lights = {n: facts.read(d, "OnOff", "OnOff") for n, d in facts.devices.items() if "light" in n}
    on, off = [n for n, v in lights.items() if v], [n for n, v in lights.items() if v is False]
    count = task.answer["value"]
    assert RULE_JUDGE.answer(task, f"{count} of them. The lights on: the " + " and the ".join(on) + ".", home)[0]
    assert not RULE_JUDGE.answer(task, f"{count}. The lights on: the {off[0]} and the {on[0]}.", home)[0]
    assert RULE_JUDGE.answer(task, f"{count} are lit; the {off[0]} is switched off.", home)[0]
    assert not RULE_JUDGE.answer(task, f"{count} are lit; the {off[0]} is on too.", home)[0]
    none, _, _ = _first(tasks, lambda t: t.query == "How many lights are on in the home?" and t.answer["value"] == 0)
    home = build_home(none)
    assert RULE_JUDGE.answer(none, "No lights at all: none of them is on.", home)[0]
    assert not RULE_JUDGE.answer(none, "No data on the lights right now, sorry.", home)[0]   # "no" of no count
    words = "zero one two three four five six seven eight nine ten".split()
    assert RULE_JUDGE.answer(task, f"No problem! {words[count].capitalize()} lights are on.", build_home(task))[0]
    one, _, _ = _first(tasks, lambda t: t.category == "TC7" and t.answer["kind"] == "number"
                       and t.answer["value"] == 1)
    assert not RULE_JUDGE.answer(one, "Sorry, I can't help with that one.", build_home(one))[0]


def test_readings_that_back_a_count_are_checked_and_not_counted(tasks):
    task, home, _ = _first(tasks, lambda t: t.query.startswith("How many rooms are warmer")
                           and t.answer["value"] == 2)
    above = float(task.query.split("than ")[1].split()[0])
    warm = [((r.name or r.id).lower(), round(r.temperature, 1)) for r in home.rooms.values() if r.temperature > above]
    (a, ta), (b, tb) = warm
    assert RULE_JUDGE.answer(task, f"Two of them: the {a} ({ta} °C) and the {b} ({tb} °C).", home)[0]
    assert not RULE_JUDGE.answer(task, f"Two of them: the {a} ({ta + 2:.1f} °C) and the {b} ({tb} °C).", home)[0]
    assert not RULE_JUDGE.answer(task, f"Three: the {a} ({ta} °C) and the {b} ({tb} °C).", home)[0]


def test_a_room_answer_may_give_the_rooms_reading(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and t.answer["kind"] == "room")
    room = home.rooms[task.answer["value"]]
    name, humidity = (room.name or room.id).lower(), round(room.humidity, 1)
    assert RULE_JUDGE.answer(task, f"The {name}, with {humidity} % relative humidity.", home)[0]
    assert not RULE_JUDGE.answer(task, f"The {name}, with {humidity + 8:.1f} % relative humidity.", home)[0]


def test_a_fan_speed_set_to_a_percentage_is_not_a_temperature_claim(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "fan speed is the" in t.query
                           and "air conditioner" in t.query)
    device = task.query.split("the ")[1].split(" set to")[0]
    assert RULE_JUDGE.answer(task, f"The {device} is set to {task.answer['value']}%.", home)[0]


def test_a_clarification_says_nothing_false_of_the_home(tasks):
    task, home, facts = _first(tasks, lambda t: t.subcategory == "state_ambiguity" and "dark" in t.query)
    room = task.query.split("in the ")[1].rstrip(".")
    light = home.device_info(task.targets[0])["name"].lower()
    state = "on" if facts.read(task.targets[0], "OnOff", "OnOff") else "off"
    wrong = "off" if state == "on" else "on"
    ask = RULE_JUDGE.clarification
    assert ask(task, [f"The {light} is {state} at the moment. Do you want it brighter?"], home)[0]
    assert not ask(task, [f"The {light} is {wrong} at the moment. Do you want it brighter?"], home)[0]
    assert ask(task, [f"Should I switch on the {room} lamp?"], home)[0]          # its light, said loosely
    assert not ask(task, [f"Should I switch on the {room} standing lamp?"], home)[0]   # a lamp it lacks
    assert not ask(task, [f"Should I switch on the {room} ceiling fan?"], home)[0]
    assert ask(task, [f"What should the {room} fan speed and light level be?"], home)[0]   # settings, not devices
    other = next(n for n, d in facts.devices.items() if home.device_info(d)["room"] != facts.rooms[room])
    assert not ask(task, [f"Which one: the {light} or the {other}?"], home)[0]   # a list across the home
    assert not ask(task, [f"I have switched on the {light}. Anything else?"], home)[0]   # acted, then asks
    assert not ask(task, [f"I just turned the {light} on. Better?"], home)[0]
    assert ask(task, [f"I've not changed anything yet. Shall I switch on the {light}?"], home)[0]


def test_a_missing_setting_is_asked_for_not_confirmed(tasks):
    task, home, _ = _first(tasks, lambda t: t.subcategory == "slot_missing" and "brightness" in t.query)
    ask = RULE_JUDGE.clarification
    assert ask(task, ["Happy to. Which brightness suits you? A percentage or dim, medium, bright is fine."], home)[0]
    assert ask(task, ["Please tell me the brightness you have in mind."], home)[0]
    assert ask(task, ["Should the brightness be 30% or 70%?"], home)[0]
    assert not ask(task, ["So you'd like me to change the brightness, right?"], home)[0]
    assert not ask(task, ["Done. Let me know if there is anything else."], home)[0]


def test_a_yes_no_question_is_answered_by_the_state_of_a_device_named_with_a_slash(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and t.query.startswith("Is the")
                           and "on/off" in t.query and t.query.endswith(" on?"))
    device, on = task.query[len("Is the "):-len(" on?")], task.answer["value"]
    assert RULE_JUDGE.answer(task, f"The {device} is currently {'on' if on else 'off'}.", home)[0]
    assert not RULE_JUDGE.answer(task, f"The {device} is currently {'off' if on else 'on'}.", home)[0]


def test_yes_and_no_in_casual_words_and_by_a_negated_state(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and t.query.startswith("Is the")
                           and "on/off" in t.query and t.query.endswith(" on?"))
    device, on = task.query[len("Is the "):-len(" on?")], task.answer["value"]
    yes, no = ("Yep", "Nope") if on else ("Nope", "Yep")
    assert RULE_JUDGE.answer(task, f"{yes} - it's switched {'on' if on else 'off'}.", home)[0]
    assert not RULE_JUDGE.answer(task, f"{no}, I checked it for you.", home)[0]
    negated = f"The {device} isn't on." if not on else f"The {device} is not off, it is on."
    assert RULE_JUDGE.answer(task, negated, home)[0]


def test_a_list_under_a_state_heading_names_only_devices_in_that_state(tasks):
    task, home, facts = _first(tasks, lambda t: t.query == "How many lights are on in the home?"
                               and t.answer["value"] >= 2)
    lights = {n: facts.read(d, "OnOff", "OnOff") for n, d in facts.devices.items() if "light" in n}
    on, off = [n for n, v in lights.items() if v], [n for n, v in lights.items() if v is False]
    count = task.answer["value"]
    bullets = "".join(f"\n- {n}" for n in on)
    assert RULE_JUDGE.answer(task, f"Total {count}.\nSwitched on at the moment:{bullets}", home)[0]
    assert not RULE_JUDGE.answer(task, f"Total {count}.\nSwitched on at the moment:{bullets}\n- {off[0]}", home)[0]
    # a light the home does not have, in a list of those that are on
    assert not RULE_JUDGE.answer(task, f"Total {count}.\nLit now:{bullets}\n- attic reading lamp", home)[0]


def test_units_as_typed_and_a_state_read_off_the_device(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    comma = str(value).replace(".", ",")
    assert RULE_JUDGE.answer(task, f"{room.title()}: {comma} ℃ according to its sensor.", home)[0]
    humidity = round(home.rooms[_Home(home).rooms[room]].humidity, 1)
    assert RULE_JUDGE.answer(task, f"{value} °C in the {room} (humidity {humidity} pct).", home)[0]
    assert not RULE_JUDGE.answer(task, f"{value} °C in the {room} (humidity {humidity + 7:.1f} pct).", home)[0]
    clar, home, facts = _first(tasks, lambda t: t.subcategory == "state_ambiguity" and "dark" in t.query)
    light = home.device_info(clar.targets[0])["name"].lower()
    wrong = "off" if facts.read(clar.targets[0], "OnOff", "OnOff") else "on"
    assert not RULE_JUDGE.clarification(clar, [f"Your {light} reads {wrong} at present. Brighter, then?"], home)[0]


def test_a_disclaimer_a_trailing_alternative_or_an_answer_not_looked_up_fails(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    assert RULE_JUDGE.answer(task, f"The {room} sits at {value} °C.", home)[0]
    for reply in (f"The {room} sits at {value} °C, but don't count on it.",
                  f"The {room} sits at {value} °C (this figure is unconfirmed).",
                  f"The {room} sits at {value} °C. Or a little above, one of those.",
                  f"Without checking the sensor, I'd say {value} °C in the {room}.",
                  f"Rooms like the {room} are typically at {value} °C.",
                  f"{value} °C, if I'm not mistaken."):
        assert not RULE_JUDGE.answer(task, reply, home)[0], reply


def test_a_timestamp_beside_a_count_is_no_second_number(tasks):
    task, home, _ = _first(tasks, lambda t: t.query == "How many lights are on in the home?"
                           and t.answer["value"] >= 2)
    count = task.answer["value"]
    assert RULE_JUDGE.answer(task, f"As read at 2031-04-09T07:45:12Z: {count} lights are on.", home)[0]
    assert not RULE_JUDGE.answer(task, f"As read on 2031-04-09: {count + 1} lights are on.", home)[0]


def test_tool_output_quoted_beside_an_answer_is_read_past(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    quoted = json.dumps({"room": {"temp_c": value}})
    assert RULE_JUDGE.answer(task, f"The sensor returned {quoted}, so the {room} is at {value} °C.", home)[0]
    assert RULE_JUDGE.answer(task, quoted, home) == (False, "raw_output")
    assert not RULE_JUDGE.answer(task, f"Here is what the tool returned: {quoted}", home)[0]


def test_a_table_gives_its_column_unit_and_a_value_out_of_a_hundred_is_a_percentage(tasks):
    task, home, facts = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    other = next(n for n in facts.rooms if n != room)
    there = round(home.rooms[facts.rooms[other]].temperature, 1)
    table = f"| where | reading (°C) |\n| --- | --- |\n| {room} | {value} |\n| {other} | {{}} |"
    assert RULE_JUDGE.answer(task, "Measured just now:\n" + table.format(there), home)[0]
    assert not RULE_JUDGE.answer(task, "Measured just now:\n" + table.format(round(there + 3.1, 1)), home)[0]
    speed, home, _ = _first(tasks, lambda t: t.category == "TC7" and "fan speed is the" in t.query)
    n = speed.answer["value"]
    assert RULE_JUDGE.answer(speed, f"Fan speed reads {n}/100.", home)[0]
    assert not RULE_JUDGE.answer(speed, f"Fan speed reads {(n + 30) % 100}/100.", home)[0]


def test_a_difference_between_rooms_is_checked_not_read_as_the_answer(tasks):
    task, home, facts = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    other, at = next((n, r.temperature) for n, r in ((n, home.rooms[i]) for n, i in facts.rooms.items())
                     if n != room and abs(r.temperature - value) >= 0.5)
    gap, word = round(abs(value - at), 1), "warmer" if value > at else "cooler"
    assert RULE_JUDGE.answer(task, f"{value} °C in the {room}, {gap} °C {word} than the {other}.", home)[0]
    assert not RULE_JUDGE.answer(task, f"{value} °C in the {room}, {gap + 2} °C {word} than the {other}.", home)[0]


def test_a_state_after_an_arrow_or_a_label_and_yes_no_in_formal_words(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and t.query.startswith("Is the")
                           and "on/off" in t.query and t.query.endswith(" on?"))
    device, on = task.query[len("Is the "):-len(" on?")], task.answer["value"]
    state, wrong = ("ON", "OFF") if on else ("OFF", "ON")
    assert RULE_JUDGE.answer(task, f"{'Affirmative' if on else 'Negative'}: {device} → {state}", home)[0]
    assert not RULE_JUDGE.answer(task, f"{'Negative' if on else 'Affirmative'}.", home)[0]
    assert RULE_JUDGE.answer(task, f"Device status: {state}", home)[0]
    assert RULE_JUDGE.answer(task, f"{state.capitalize()}.", home)[0]
    assert not RULE_JUDGE.answer(task, f"{device} → {wrong}", home)[0]
    lock, home, _ = _first(tasks, lambda t: t.category == "TC7" and t.query.endswith(" locked?"))
    name, locked = lock.query[len("Is the "):-len(" locked?")], lock.answer["value"]
    assert RULE_JUDGE.answer(lock, f"The {name} reports {'locked' if locked else 'unlocked'}.", home)[0]
    assert not RULE_JUDGE.answer(lock, f"Checked it: the {name} is {'unlocked' if locked else 'locked'}.", home)[0]


def test_there_is_the_room_just_named_and_a_list_takes_the_state_said_before_it(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    humidity = round(home.rooms[_Home(home).rooms[room]].humidity, 1)
    assert RULE_JUDGE.answer(task, f"The {room} is at {value} °C. Humidity there: {humidity} %.", home)[0]
    assert not RULE_JUDGE.answer(task, f"The {room} is at {value} °C. Humidity there: {humidity + 12:.1f} %.",
                                 home)[0]
    count, home, facts = _first(tasks, lambda t: t.query == "How many lights are on in the home?"
                                and t.answer["value"] >= 2)
    lights = {n: facts.read(d, "OnOff", "OnOff") for n, d in facts.devices.items() if "light" in n}
    on, off = [n for n, v in lights.items() if v], [n for n, v in lights.items() if v is False]
    n = count.answer["value"]
    numbered = "".join(f"\n{i}. {name}" for i, name in enumerate(on, 1))
    assert RULE_JUDGE.answer(count, f"{n} lights are on. Namely:{numbered}", home)[0]
    assert not RULE_JUDGE.answer(count, f"{n} lights are on. Namely:{numbered}\n{len(on) + 1}. {off[0]}", home)[0]


def test_a_count_is_no_reading_and_a_numbered_name_is_no_count(tasks):
    task, home, facts = _first(tasks, lambda t: t.query.startswith("How many rooms are warmer")
                               and t.answer["value"] == 0)
    warmest = max(home.rooms.values(), key=lambda r: r.temperature)
    name, at = (warmest.name or warmest.id).lower(), round(warmest.temperature, 1)
    assert RULE_JUDGE.answer(task, f"Not a single room; the {name} is the warmest at {at} °C.", home)[0]
    assert RULE_JUDGE.answer(task, "No room is.", home)[0]
    assert not RULE_JUDGE.answer(task, f"Not a single room; the {name} is the warmest at {at + 4} °C.", home)[0]
    devices, home, facts = _first(tasks, lambda t: t.query.startswith("How many devices are in the")
                                  and t.answer["value"] >= 2)
    n = devices.answer["value"]
    assert RULE_JUDGE.answer(devices, f"{n} of them, among them a light 2.", home)[0]
    room = devices.query.split("in the ")[1].split(" itself")[0]
    missing = next(k for k in ("dishwasher", "oven", "refrigerator", "fan", "tv")
                   if not any(name.startswith(room) and k in name for name in facts.devices))
    assert not RULE_JUDGE.answer(devices, f"{n}, the {room} {missing} among them.", home)[0]


def test_doubt_in_more_words_fails(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    for reply in (f"{value} °C in the {room}, give or take.", f"About {value} °C or so.",
                  f"The {room}: {value} °C. I wasn't able to verify the sensor, though.",
                  f"Assuming the sensor works, {value} °C."):
        assert not RULE_JUDGE.answer(task, reply, home)[0], reply


def test_a_missing_setting_asked_in_a_fragment_a_pick_or_the_sentence_before(tasks):
    task, home, _ = _first(tasks, lambda t: t.subcategory == "slot_missing" and "brightness" in t.query)
    ask = RULE_JUDGE.clarification
    assert ask(task, ["Brightness wanted?"], home)[0]
    assert ask(task, ["Choose a brightness level: low, medium or high."], home)[0]
    assert ask(task, ["Could you specify the desired brightness?"], home)[0]
    assert ask(task, ["One thing first: the brightness. What value?"], home)[0]
    assert ask(task, ["what brightness should it have"], home)[0]
    assert ask(task, ["Sure, e.g. 40 % or 80 %: which brightness?"], home)[0]
    assert not ask(task, ["Alright: raise the brightness. OK?"], home)[0]
    assert not ask(task, ["Adjust the brightness?"], home)[0]
    cool, home, facts = _first(tasks, lambda t: t.subcategory == "slot_missing" and t.query.startswith("Cool the room"))
    room = next(n for n, r in facts.rooms.items() if r == home.device_info(cool.targets[0])["room"])
    at = round(home.rooms[facts.rooms[room]].temperature, 1)
    assert ask(cool, [f"The {room} is at {at} °C. Cool the {room} to {at - 3:.0f} or {at - 1:.0f} °C?"], home)[0]
    assert not ask(cool, [f"The {room} is at {at + 4:.1f} °C. Cool the {room} to {at - 3:.0f} or {at - 1:.0f} °C?"],
                   home)[0]
    assert not ask(task, ["Just checking, you want a new brightness?"], home)[0]
    scene, home, _ = _first(tasks, lambda t: t.subcategory == "scene_ambiguity")
    room = scene.query.rstrip(".").split(" the ")[-1]
    assert ask(scene, [f"Before I start in the {room} — next step: what should I adjust?"], home)[0]
    assert ask(scene, ["Next step: what should I adjust there?"], home)[0]


def test_fahrenheit_is_held_to_its_written_precision_and_a_rooms_reading_may_equal_the_questions_number(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query)
    room, value = task.query.split("in the ")[1].split(",")[0], task.answer["value"]
    whole = round(value * 9 / 5 + 32)
    assert RULE_JUDGE.answer(task, f"The {room} reads {value} °C, roughly {whole} °F.", home)[0]
    assert not RULE_JUDGE.answer(task, f"The {room} reads {value} °C, roughly {whole + 2} °F.", home)[0]
    count, home, facts = _first(tasks, lambda t: t.query.startswith("How many rooms are warmer")
                                and t.answer["value"] == 0)
    above = float(count.query.split("than ")[1].split()[0])
    cool = next(n for n, r in facts.rooms.items() if abs(home.rooms[r].temperature - above) > 0.5)
    assert not RULE_JUDGE.answer(count, f"None. The {cool} is at {above:.1f} degrees.", home)[0]
    assert not RULE_JUDGE.answer(count, f"None.\n| room | °C |\n|---|---|\n| {cool} | {above:.1f} |", home)[0]
    assert RULE_JUDGE.answer(count, f"None is above {above:g} degrees.", home)[0]


def test_an_enumeration_of_devices_names_only_the_homes(tasks):
    task, home, facts = _first(tasks, lambda t: t.query.startswith("How many devices are in the")
                               and t.answer["value"] >= 2)
    room, n = task.query.split("in the ")[1].split(" itself")[0], task.answer["value"]
    mine = [name for name, d in facts.devices.items() if home.device_info(d)["room"] == facts.rooms[room]]
    listed = "; ".join(mine)
    assert RULE_JUDGE.answer(task, f"{n} devices.\n({listed})", home)[0]
    assert not RULE_JUDGE.answer(task, f"{n} devices.\n({listed}; attic heater)", home)[0]
    assert RULE_JUDGE.answer(task, f"{n}. They are the " + ", the ".join(mine) + ".", home)[0]
    assert not RULE_JUDGE.answer(task, f"{n}. They are the " + ", the ".join(mine[:-1]) + ", the garage lamp.", home)[0]


def test_a_half_is_rounded_up_as_people_do(tasks):
    task, home, _ = _first(tasks, lambda t: t.category == "TC7" and "temperature in the" in t.query
                           and round(t.answer["value"] % 1, 1) == 0.5)
    value = task.answer["value"]
    assert RULE_JUDGE.answer(task, f"About {value + 0.5:.0f} degrees.", home)[0]
    assert not RULE_JUDGE.answer(task, f"About {value + 1.5:.0f} degrees.", home)[0]


def test_a_setting_read_after_a_colon_and_a_pronoun_is_checked(tasks):
    task, home, facts = _first(tasks, lambda t: t.category == "TC3" and "water_heater" in t.targets[0])
    name = home.device_info(task.targets[0])["name"].lower()
    setpoint = facts.read(task.targets[0], "Thermostat", "OccupiedHeatingSetpoint") / 100
    assert RULE_JUDGE.clarification(task, [f"I looked at the {name}: it's set to {setpoint:g} °C. Hotter?"], home)[0]
    assert not RULE_JUDGE.clarification(task, [f"I looked at the {name}: it's set to {setpoint + 8:g} °C. Hotter?"],
                                        home)[0]
