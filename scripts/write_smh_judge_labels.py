"""Write SMH-Bench's independent judge labels: replies to every TC3 and TC7 task, each labelled
pass or fail by the category's definition (docs/judge-labels.md says how; the labels come from
the kind of reply, never from running a judge).

    PYTHONPATH=. python scripts/write_smh_judge_labels.py OUT.jsonl

Byte-identical output: every task draws its shapes from `Random(task id)`.
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any

from scenarios.smh.tasks import SmhTask, build_home, load_tasks
from twin.home import Home

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def split(task_id: str) -> str:
    return "heldout" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 3 else "dev"


def row(task: SmhTask, kind: str, label: str, reason: str, **reply: Any) -> dict[str, Any]:
    return {"task_id": task.id, **reply, "label": label, "kind": kind, "reason": reason, "split": split(task.id)}


# ---- TC7: answers --------------------------------------------------------------------------------
def _yesno_state(query: str, value: bool) -> str:
    q = query.lower().rstrip("?")
    if q.startswith("is charging enabled on the "):
        return "charging is enabled" if value else "charging is switched off"
    if q.endswith(" locked"):
        return "it is locked" if value else "it is unlocked"
    if q.endswith(" charging right now"):
        return "it is charging" if value else "it is not charging at the moment"
    return "it is on" if value else "it is off"


def yesno_replies(task: SmhTask, rng: random.Random) -> list[dict[str, Any]]:
    value = bool(task.answer["value"])  # type: ignore[index]
    yes, no = ("Yes", "No") if value else ("No", "Yes")
    state, other = _yesno_state(task.query, value), _yesno_state(task.query, not value)
    out = [
        row(task, "correct", "pass", "states the reading", answer=rng.choice((f"{yes}.", f"{yes}, {state}.",
                                                                             f"{yes} - {state} right now."))),
        row(task, "correct", "pass", "states the reading without yes or no", answer=f"Right now {state}."),
        row(task, "wrong", "fail", "the opposite of the reading", answer=rng.choice((f"{no}.", f"{no}, {other}."))),
        row(task, "hedged", "fail", "takes the reading back",
            answer=rng.choice((f"{yes}, {state}, but I can't be sure, it may be the other way.",
                               f"{yes}... although actually {other}, I'm not certain."))),
        row(task, "stuffed", "fail", "both answers at once", answer="Yes or no, it could be either."),
        row(task, "refusal", "fail", "no reading given", answer=rng.choice(("Sorry, I can't check that.",
                                                                           "I'm unable to help with that."))),
        row(task, "raw", "fail", "tool output instead of an answer",
            answer=json.dumps({"ok": True, "value": task.answer["value"]})),  # type: ignore[index]
    ]
    return out


def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, int) or float(value).is_integer() else f"{value:.1f}"


def number_replies(task: SmhTask, rng: random.Random) -> list[dict[str, Any]]:
    value = task.answer["value"]  # type: ignore[index]
    q = task.query.lower()
    unit = " degrees" if "degrees?" in q and "warmer" not in q else "%" if "percent" in q else ""
    said = _fmt(value)
    out = [row(task, "correct", "pass", "states the value",
               answer=rng.choice((f"{said}{unit}.", f"It is {said}{unit}.",
                                  f"The reading is {said}{unit} right now.")))]
    counting = q.startswith("how many")
    if counting and value <= 10:
        word = NUMBER_WORDS[int(value)]
        text = "None." if value == 0 else f"{word.capitalize()}."
        out.append(row(task, "in_words", "pass", "the count in words", answer=text))
    if isinstance(value, float) and not value.is_integer() and unit == " degrees" and "temperature in" in q:
        fahrenheit = value * 9 / 5 + 32
        out.append(row(task, "converted", "pass", "the value in another unit, with the asked one",
                       answer=f"{value:.1f} °C, which is {fahrenheit:.1f} °F."))
        if abs(value - round(value)) > 0.2:
            out.append(row(task, "rounded", "pass", "rounded to whole degrees, as the question asks",
                           answer=f"About {round(value)} degrees."))
    step = 10 if unit == "%" else 2 if unit == " degrees" else 1
    wrong = value + step if value - step < 0 or rng.random() < 0.5 else value - step
    out += [
        row(task, "wrong", "fail", "a different value", answer=rng.choice((f"{_fmt(wrong)}{unit}.",
                                                                            f"It is {_fmt(wrong)}{unit}."))),
        row(task, "stuffed", "fail", "several candidate values",
            answer=f"Either {_fmt(value)}{unit} or {_fmt(value + step)}{unit}."),
        row(task, "hedged", "fail", "takes the value back",
            answer=f"{said}{unit}, but I'm not sure that reading is right, it could be something else."),
        row(task, "refusal", "fail", "no value given", answer=rng.choice(("I can't tell you that.",
                                                                           "Sorry, I don't know."))),
        row(task, "raw", "fail", "tool output instead of an answer", answer=json.dumps({"value": value})),
    ]
    return out


def room_replies(task: SmhTask, home: Home, rng: random.Random) -> list[dict[str, Any]]:
    right = task.answer["value"]  # type: ignore[index]
    name = (home.rooms[right].name or right).lower()
    others = sorted(r for r in home.rooms if r != right and (home.rooms[r].name or r).lower() not in name
                    and name not in (home.rooms[r].name or r).lower())
    other = (home.rooms[rng.choice(others)].name or "").lower()
    humidity = home.rooms[right].humidity
    return [
        row(task, "correct", "pass", "names the room", answer=rng.choice((f"The {name}.", f"It's the {name}.",
                                                                          f"The {name} is the most humid room."))),
        row(task, "correct", "pass", "names the room and its true humidity",
            answer=f"The {name}, at {humidity:.0f}% humidity."),
        row(task, "wrong", "fail", "another room", answer=f"The {other} is the most humid."),
        row(task, "stuffed", "fail", "two candidate rooms", answer=f"Either the {name} or the {other}."),
        row(task, "hedged", "fail", "takes the room back",
            answer=f"Probably the {name}, though the {other} may well be more humid."),
        row(task, "refusal", "fail", "no room given", answer="I'm not able to check humidity."),
    ]


# ---- TC3: clarifying questions ------------------------------------------------------------------
UNRELATED = ("Would you like to hear today's weather forecast?", "Shall I add milk to your shopping list?",
             "Do you want me to set a timer?", "What's your favourite song?")


def _room_of(task: SmhTask, home: Home) -> str:
    room = home.device_info(task.targets[0])["room"]
    return (home.rooms[room].name or room).lower()


def clarify_replies(task: SmhTask, home: Home, rng: random.Random) -> list[dict[str, Any]]:
    assert task.user is not None
    room = _room_of(task, home)
    device = home.device_info(task.targets[0])["name"].lower()
    slots = task.user.get("slots") or {}
    grounded = set(task.targets)
    unrelated_devices = sorted(d for d in home.devices.objects if d not in grounded
                               and home.device_info(d)["room"] != home.device_info(task.targets[0])["room"])
    stray = home.device_info(rng.choice(unrelated_devices))["name"].lower() if unrelated_devices else "front door"
    if slots:   # a setting is missing: ask for it
        word = slots["value"]["keywords"][0]
        good = rng.choice((f"What {word} would you like for the {device}?",
                           f"Which {word} should I set the {device} to?", f"Sure - what {word} do you want?"))
    else:
        good = rng.choice((f"What would you like me to change in the {room}?",
                           f"Which devices in the {room} should I adjust, and how?",
                           f"How can I help in the {room} - what should I do?"))
    out = [
        row(task, "targeted", "pass", "asks what the request leaves open", questions=[good]),
        row(task, "confirm_only", "fail", "confirms what was asked, not the missing setting",
            questions=[f"Shall I adjust the {device}?"]) if slots else
        row(task, "grounded_offer", "pass", "offers a change the request gives ground for",
            questions=[rng.choice((f"Shall I adjust the {device}?", f"Would you like me to change the {device}?"))]),
        row(task, "two_questions", "pass", "a greeting, then the open question",
            questions=["Happy to help!", good] if rng.random() < 0.5 else [good, "Anything else?"]),
        row(task, "unrelated", "fail", "asks about something else", questions=[rng.choice(UNRELATED)]),
        row(task, "baseless_guess", "fail", "confirms a guess the request gives no ground for",
            questions=[rng.choice((f"Shall I turn off the {stray}?", f"Do you want me to use the {stray}?"))]),
        row(task, "not_a_question", "fail", "tells instead of asking",
            questions=[rng.choice(("OK, I'll take care of it.", "Done.", "Working on it now."))]),
        row(task, "none", "fail", "nothing asked", questions=[]),
    ]
    return out


def replies(task: SmhTask) -> list[dict[str, Any]]:
    rng = random.Random(task.id)
    if task.category == "TC3":
        return clarify_replies(task, build_home(task), rng)
    kind = task.answer["kind"]  # type: ignore[index]
    if kind == "yesno":
        return yesno_replies(task, rng)
    if kind == "room":
        return room_replies(task, build_home(task), rng)
    return number_replies(task, rng)


def main(out: str) -> None:
    rows = [r for t in load_tasks() if t.category in ("TC3", "TC7") for r in replies(t)]
    with open(out, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
    print(f"wrote {len(rows)} labelled replies to {out}")


if __name__ == "__main__":
    main(sys.argv[1])
