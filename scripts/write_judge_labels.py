"""Write scenarios/simuhome/data/judge_labels_independent.jsonl (docs/judge-labels.md).

Facts come from each episode's home through the agent's tools; the answer phrasings and their
labels are written by hand here, from the episode and SimuHome's judge criteria (Appendix O.2),
never from the rule judge. Usage: PYTHONPATH=. python scripts/write_judge_labels.py OUT.jsonl
"""
# ruff: noqa: E501  (the answers are prose; splitting them would hide what they say)

import hashlib
import json
import random
import re
import sys
from datetime import datetime, timedelta

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.simuhome.evaluate import build_home
from scenarios.simuhome.schema import DeviceGoal, Episode, RoomGoal

EP = "scenarios/simuhome/data/episodes.jsonl"
JUDGED = {"QT1-F", "QT1-IF", "QT2-IF", "QT3-IF", "QT4-1-IF", "QT4-2-IF", "QT4-3-IF"}
ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty"}


def words(n, rng):
    if n < 20:
        return ONES[n]
    t, o = divmod(n, 10)
    return TENS[t] + ("" if o == 0 else rng.choice(" -") + ONES[o])


def fmt_time(t, rng):
    h12 = t.hour % 12 or 12
    ap = "AM" if t.hour < 12 else "PM"
    m = t.minute
    opts = [
        f"{h12}:{m:02d} {ap}",
        f"{h12}:{m:02d} {ap.lower()}",
        f"{h12}:{m:02d}{ap.lower()}",
        f"{t.hour:02d}:{m:02d}",
        f"{t.hour}:{m:02d}",
        f"{h12} {m:02d} {ap}",
        f"{h12}:{m:02d} {'a.m.' if ap == 'AM' else 'p.m.'}",
    ]
    mw = "o'clock" if m == 0 else ("oh " + ONES[m] if m < 10 else words(m, rng))
    opts.append(f"{words(h12, rng)} {mw} {ap if rng.random() < 0.5 else ap.lower()}")
    if m == 30:
        opts.append(f"half past {words(h12, rng)}")
    if m == 15:
        opts.append(f"quarter past {words(h12, rng)}")
    return rng.choice(opts)


def hm(s, base):
    h, m = map(int, s.split(":"))
    return base.replace(hour=h, minute=m, second=0)


def parse12(s, base):
    mt = re.match(r"(\d+):(\d+) ([AP]M)", s)
    h = int(mt[1]) % 12 + (12 if mt[3] == "PM" else 0)
    return base.replace(hour=h, minute=int(mt[2]), second=0)


def room_name(rid):
    return rid.replace("_", " ")


class Facts:
    def __init__(self, ep):
        self.ep = ep
        self.home = build_home(ep)
        self.b = TwinBackend(self.home)
        self.s = Session()
        self.now = datetime.strptime(self.call("get_current_time")["current_time"], "%Y-%m-%d %H:%M:%S")
        self.rooms = [r["room_id"] if isinstance(r, dict) and "room_id" in r else r for r in []]
        self.devs = {}
        for room in ep.initial.home.rooms:
            r = self.call("get_room_devices", **{"room.id": room.id})
            self.devs[room.id] = r["devices"]

    def call(self, tool, **args):
        r = call_tool(self.b, tool, args, self.s)
        assert r.get("ok"), (tool, args, r)
        return r

    def states(self, rid):
        return self.call("get_room_states", **{"room.id": rid})

    def attrs(self, did):
        return self.call("get_all_attributes", **{"device.id": did})["attributes"]


# ---------- value wording ----------
def say_state(state, raw, rng, exact=True):
    if state == "temperature":
        c = raw / 100
        return rng.choice(
            [
                f"{c:.1f} °C",
                f"{c:.2f}°C",
                f"{c:.1f} degrees Celsius",
                f"{raw} (that's {c:.2f} °C)",
                f"about {c:.1f} degrees",
            ]
        )
    if state == "humidity":
        p = raw / 100
        return rng.choice([f"{p:.1f}%", f"{p:.2f} %RH", f"{p:.1f} percent relative humidity", f"{raw}, i.e. {p:.1f}%"])
    if state == "illuminance":
        return rng.choice([f"{raw} lux", f"{raw} lx", f"about {raw} lux"])
    v = raw
    return rng.choice(
        [f"{v} µg/m³", f"{v:.1f} µg/m³", f"{round(v)} micrograms per cubic metre", f"PM10 of {v:.1f} ug/m3"]
    )


def off_state(state, raw, rng):
    d = {
        "temperature": rng.choice([-250, 180, 310, -420]),
        "humidity": rng.choice([-900, 650, 1200]),
        "illuminance": rng.choice([-120, 90, 230]),
        "pm10": rng.choice([-12.0, 9.5, 17.0]),
    }[state]
    v = raw + d
    return max(v, 1) if state != "pm10" else round(max(v, 1.0), 2)


STATE_WORD = {
    "temperature": ["temperature", "temp"],
    "humidity": ["humidity", "relative humidity"],
    "illuminance": ["light level", "illuminance", "brightness"],
    "pm10": ["PM10", "PM10 level", "dust level (PM10)"],
}


def say_attr(attr, v, rng):
    if attr == "OnOff":
        return (
            rng.choice(["on", "switched on", "turned on"]) if v else rng.choice(["off", "switched off", "turned off"])
        )
    if attr == "CurrentLevel":
        if v is None:
            return "has no level reported"
        return rng.choice(
            [
                f"at level {v}",
                f"at brightness level {v} of 254",
                f"at level {v} (about {round(v / 254 * 100)}%)",
                f"set to {v}/254",
            ]
        )
    if attr == "PercentCurrent":
        return rng.choice([f"running at {v}%", f"at {v} percent fan speed", f"at a fan speed of {v}%"])
    if attr == "OccupiedCoolingSetpoint":
        return rng.choice(
            [
                f"set to {v / 100:g} °C",
                f"set to {v / 100:.1f} degrees",
                f"at {v} ({v / 100:g} °C)",
                f"cooling to {v / 100:g}°C",
            ]
        )
    return f"{attr} = {v}"


def wrong_attr(attr, v, rng):
    if attr == "OnOff":
        return not v
    if attr == "CurrentLevel":
        return (v or 0) + rng.choice([-40, 35, 60]) if (v or 0) > 60 else (v or 0) + 70
    if attr == "PercentCurrent":
        return (v + 30) if v <= 60 else v - 40
    if attr == "OccupiedCoolingSetpoint":
        return v + rng.choice([-200, 200, 300])
    return v


def dev_label(f, did):
    for rid, ds in f.devs.items():
        for d in ds:
            if d["device_id"] == did:
                return d["name"].replace(room_name(rid).title() + " ", "").lower() if False else d["label"].lower(), rid
    return did, None


def other_room(f, rid, rng):
    cands = [r for r in f.devs if r != rid]
    return rng.choice(cands) if cands else "garage"


def pick(rng, *xs):
    return rng.choice(xs)


# ---------- QT1-F ----------
def qt1f(f, rng):
    parts, _wrong_parts = [], []
    for g in f.ep.goals:
        rn = room_name(g.room_id)
        if isinstance(g, DeviceGoal):
            from scenarios.simuhome.evaluate import read_goal

            v = read_goal(f.home, g)
            lab, _ = dev_label(f, g.device_id)
            dev = pick(rng, f"the {lab} in the {rn}", f"the {rn} {lab}", f"your {lab} in the {rn}", f"the {lab} ({rn})")
            parts.append((g, lambda r, g=g, v=v, dev=dev: f"{dev} is {say_attr(g.attribute, v, r)}", v))
        else:
            raw = f.states(g.room_id)[g.state]
            parts.append(
                (
                    g,
                    lambda r, g=g, raw=raw, rn=rn: pick(
                        r,
                        f"the {r.choice(STATE_WORD[g.state])} in the {rn} is {say_state(g.state, raw, r)}",
                        f"the {rn} is at {say_state(g.state, raw, r)} ({STATE_WORD[g.state][0]})",
                        f"the {rn} {r.choice(STATE_WORD[g.state])} reads {say_state(g.state, raw, r)}",
                    ),
                    raw,
                )
            )

    def join(frags):
        s = "; ".join(frags) if rng.random() < 0.4 else ", and ".join(frags)
        s = s[0].upper() + s[1:]
        return pick(
            rng,
            s + ".",
            "Right now " + s[0].lower() + s[1:] + ".",
            "I checked - " + s[0].lower() + s[1:] + ".",
            s + ". Anything else?",
            "Here's what I found: " + s[0].lower() + s[1:] + ".",
            "Sure. " + s + ".",
        )

    out = []
    out.append(
        (
            join([p[1](rng) for p in parts]),
            "pass",
            "correct",
            "every asked value matches the tool reading, in the right room",
        )
    )
    out.append(
        (
            join([p[1](rng) for p in parts]),
            "pass",
            "correct",
            "same values in another wording/unit; still matches the readings",
        )
    )
    # wrong value
    i = rng.randrange(len(parts))
    g = parts[i][0]
    frs = []
    for j, (gg, fn, v) in enumerate(parts):
        if j != i:
            frs.append(fn(rng))
            continue
        rn = room_name(gg.room_id)
        if isinstance(gg, DeviceGoal):
            lab, _ = dev_label(f, gg.device_id)
            frs.append(f"the {lab} in the {rn} is {say_attr(gg.attribute, wrong_attr(gg.attribute, v, rng), rng)}")
        else:
            frs.append(
                f"the {rng.choice(STATE_WORD[gg.state])} in the {rn} is {say_state(gg.state, off_state(gg.state, v, rng), rng)}"
            )
    out.append((join(frs), "fail", "wrong", "one value differs from what the tools show"))
    # wrong room
    frs = [p[1](rng) for p in parts]
    rn = room_name(parts[0][0].room_id)
    orn = room_name(other_room(f, parts[0][0].room_id, rng))
    if rn in frs[0]:
        out.append(
            (join([frs[0].replace(rn, orn)] + frs[1:]), "fail", "wrong_room", f"names the {orn} instead of the {rn}")
        )
    # stuffed
    gg, fn, v = parts[0]
    rn = room_name(gg.room_id)
    if isinstance(gg, DeviceGoal):
        lab, _ = dev_label(f, gg.device_id)
        alts = [
            say_attr(gg.attribute, x, rng)
            for x in ([v, wrong_attr(gg.attribute, v, rng)] if gg.attribute != "OnOff" else [True, False])
        ]
        rng.shuffle(alts)
        s = pick(
            rng,
            f"The {lab} in the {rn} is either {alts[0]} or {alts[1]}.",
            f"The {lab} in the {rn} could be {alts[0]}, or possibly {alts[1]}.",
        )
    else:
        vals = [v, off_state(gg.state, v, rng), off_state(gg.state, v, rng)]
        rng.shuffle(vals)
        s = (
            f"The {rng.choice(STATE_WORD[gg.state])} in the {rn} is somewhere around "
            + ", ".join(say_state(gg.state, x, rng) for x in vals[:-1])
            + f" or {say_state(gg.state, vals[-1], rng)}."
        )
    if len(parts) > 1:
        s += " " + join([p[1](rng) for p in parts[1:]])
    out.append((s, "fail", "stuffed", "offers several candidate values, so it does not commit to the reading"))
    # hedge
    s = join([p[1](rng) for p in parts])
    s += " " + pick(
        rng,
        "Though the reading may be out of date, so it could well be different.",
        "That said, I'm not sure that's right - it might be something else entirely.",
        "But I may have misread it, it's possible the value is different.",
    )
    out.append((s, "fail", "hedged", "a trailing hedge takes back the reported value"))
    # claimed action
    if any(isinstance(p[0], DeviceGoal) for p in parts):
        gg = next(p[0] for p in parts if isinstance(p[0], DeviceGoal))
        lab, _ = dev_label(f, gg.device_id)
        s = (
            join([p[1](rng) for p in parts])
            + " "
            + pick(
                rng,
                f"I've also turned the {lab} off for you to save energy.",
                f"I went ahead and adjusted the {lab} so it's more comfortable.",
                f"I also reset the {lab} to its default.",
            )
        )
        out.append((s, "fail", "claimed_action", "claims a change the agent never made on a read-only question"))
    # partly correct
    if len(parts) > 1:
        out.append((join([parts[0][1](rng)]), "fail", "partly_correct", "answers only one of the asked values"))
    return out


KW_TYPE = {
    "dishwasher": ["dishwasher"],
    "ac": ["air_conditioner"],
    "air conditioner": ["air_conditioner"],
    "washer": ["laundry_washer"],
    "dimmer light": ["dimmable_light"],
    "dimmable light": ["dimmable_light"],
    "humidifier": ["humidifier"],
    "air purifier": ["air_purifier"],
    "fan": ["fan"],
    "dehumidifier": ["dehumidifier"],
    "tv": ["tv"],
    "television": ["tv"],
    "dryer": ["laundry_dryer"],
    "light": ["on_off_light"],
    "heat pump": ["heat_pump"],
    "blinds": ["window_covering"],
    "window covering": ["window_covering"],
}


def missing_kw(ep):
    return ep.infeasibility.keywords[0][0] if ep.infeasibility.keywords else "device"


def room_devs_text(f, rid, rng):
    labs = sorted({d["label"].lower() for d in f.devs[rid]})
    if not labs:
        return "nothing at all"
    if len(labs) == 1:
        return f"just a {labs[0]}"
    return ", ".join(labs[:-1]) + " and " + labs[-1]


def alt_room(f, kw, rid):
    types = KW_TYPE.get(kw.lower(), [])
    for r, ds in f.devs.items():
        if r != rid and any(d["device_type"] in types for d in ds):
            return r
    return None


def has_type(f, kw, rid):
    types = KW_TYPE.get(kw.lower(), [])
    return any(d["device_type"] in types for d in f.devs[rid])


def absent_phrases(f, kw, rid, rng):
    rn = room_name(rid)
    a = "an" if kw[0].lower() in "aeiou" else "a"
    if kw.endswith("s"):
        return [
            f"There are no {kw} in the {rn}.",
            f"I couldn't find any {kw} in the {rn} - the devices there are {room_devs_text(f, rid, rng)}.",
            f"The {rn} doesn't have {kw}, so there is nothing there for me to use.",
            f"I looked at the {rn}: it has {room_devs_text(f, rid, rng)}, but no {kw}.",
            f"The {rn} has no {kw}, I'm afraid.",
            f"No {kw} are set up in the {rn}; I only see {room_devs_text(f, rid, rng)} there.",
        ]
    return [
        f"There's no {kw} in the {rn}.",
        f"I couldn't find {a} {kw} in the {rn} - the devices there are {room_devs_text(f, rid, rng)}.",
        f"The {rn} doesn't have {a} {kw}, so there is nothing there for me to check.",
        f"I looked at the {rn}: it has {room_devs_text(f, rid, rng)}, but no {kw}.",
        f"There isn't any {kw} in the {rn}, I'm afraid.",
        f"No {kw} is set up in the {rn}; I only see {room_devs_text(f, rid, rng)} there.",
    ]


def missing_common(f, rng, extra_ok, extra_wrong, action_words):
    ep = f.ep
    kw = missing_kw(ep)
    rid = ep.infeasibility.room_ids[0]
    rn = room_name(rid)
    out = []
    ph = absent_phrases(f, kw, rid, rng)
    rng.shuffle(ph)

    def w(s, ex):
        return (s + " " + ex).strip()

    out.append(
        (
            w(ph[0], extra_ok()),
            "pass",
            "correct",
            f"says plainly there is no {kw} in the {rn}" + (" and gives the asked room value" if extra_ok() else ""),
        )
    )
    out.append(
        (w(ph[1], extra_ok()), "pass", "correct", f"states the {kw} is absent from the {rn}, true per get_room_devices")
    )
    ar = alt_room(f, kw, rid)
    if ar and not has_type(f, kw, rid):
        s = (
            w(ph[2], extra_ok())
            + " "
            + pick(
                rng,
                f"There is one in the {room_name(ar)} though, if that helps.",
                f"The {room_name(ar)} has one, if you meant that.",
                f"If you meant the one in the {room_name(ar)}, I can {action_words[0]} that instead.",
            )
        )
        out.append((s, "pass", "helpful", f"absence stated; the alternative in the {room_name(ar)} really exists"))
        other = [r for r in f.devs if r != rid and r != ar and not has_type(f, kw, r)]
        if other:
            s = w(ph[3], extra_ok()) + f" There's one in the {room_name(other[0])} you could use instead."
            out.append((s, "fail", "wrong", f"the suggested {kw} in the {room_name(other[0])} does not exist"))
    out.append(
        (
            w(ph[0], extra_ok())
            + " "
            + pick(
                rng,
                "Although it might just be hidden from me, so it could exist after all.",
                "Then again, maybe it is there and just not responding.",
                "But it's possible it's there and I just can't see it.",
            ),
            "fail",
            "hedged",
            "a trailing hedge undoes the statement that the device is absent",
        )
    )
    out.append(
        (
            pick(
                rng,
                "Sorry, I can't do that.",
                f"Sorry, I can't help with that in the {rn}.",
                "I'm unable to complete that request.",
                f"That's not something I can do in the {rn} right now.",
            ),
            "fail",
            "refusal_no_reason",
            "refuses without saying the device is missing",
        )
    )
    orn = room_name(other_room(f, rid, rng))
    out.append(
        (
            w(ph[0].replace(rn, orn), extra_ok()),
            "fail",
            "wrong_room",
            f"says the {kw} is missing from the {orn}, not the {rn} that was asked",
        )
    )
    out.append(
        (
            extra_wrong(kw, rn),
            "fail",
            "fabricated",
            f"reports or performs something on a {kw} that does not exist in the {rn}",
        )
    )
    return out


def qt1if(f, rng):
    ep = f.ep
    rgs = [g for g in ep.goals if isinstance(g, RoomGoal)]

    def extra_ok():
        if not rgs:
            return ""
        g = rgs[0]
        raw = f.states(g.room_id)[g.state]
        return pick(
            random.Random(len(ep.id)),
            f"The {STATE_WORD[g.state][0]} in the {room_name(g.room_id)} is {say_state(g.state, raw, rng)}.",
            f"As for the {room_name(g.room_id)}, the {STATE_WORD[g.state][0]} is {say_state(g.state, raw, rng)}.",
        )

    def extra_wrong(kw, rn):
        return (
            pick(
                rng,
                f"The {kw} in the {rn} is currently off.",
                f"The {kw} in the {rn} is on and running normally.",
                f"I checked the {kw} in the {rn}: it's switched on.",
            )
            + " "
            + extra_ok()
        )

    out = missing_common(f, rng, extra_ok, extra_wrong, ["check"])
    if rgs:
        g = rgs[0]
        raw = f.states(g.room_id)[g.state]
        kw = missing_kw(ep)
        rn = room_name(ep.infeasibility.room_ids[0])
        out.append(
            (
                f"There's no {kw} in the {rn}. The {STATE_WORD[g.state][0]} in the {room_name(g.room_id)} is {say_state(g.state, off_state(g.state, raw, rng), rng)}.",
                "fail",
                "wrong",
                "the room value does not match get_room_states",
            )
        )
        out.append(
            (f"There's no {kw} in the {rn}.", "fail", "partly_correct", "leaves out the room value that was asked")
        )
    return [(a.strip(), lab, k, r) for a, lab, k, r in out]


def qt3if(f, rng):
    def extra_wrong(kw, rn):
        return pick(
            rng,
            f"Done! The {kw} in the {rn} is now set the way you asked.",
            f"I've taken care of the {kw} in the {rn} for you.",
            f"OK, the {kw} in the {rn} has been updated.",
        )

    out = missing_common(f, rng, lambda: "", extra_wrong, ["use"])
    kw = missing_kw(f.ep)
    rn = room_name(f.ep.infeasibility.room_ids[0])
    out.append(
        (
            pick(
                rng,
                f"I wasn't able to do that: the {rn} has no {kw}. Nothing was changed.",
                f"I checked the devices in the {rn} and there isn't a {kw} among them, so I haven't operated anything.",
            ),
            "pass",
            "correct",
            "absence stated, room named, nothing claimed",
        )
    )
    out.append(
        (
            f"There's no {kw} in the {rn}, so I couldn't do it. "
            + pick(
                rng,
                "Shall I check another room?",
                "Let me know if you meant a different room.",
                "Want me to look somewhere else?",
            ),
            "pass",
            "correct",
            "absence stated with the room; offers to look elsewhere without claiming anything",
        )
    )
    return out


STATE_TYPES = {
    "illuminance": ("light", "window_covering"),
    "temperature": ("air_conditioner", "heat_pump", "thermostat", "heater"),
    "humidity": ("humidifier", "dehumidifier"),
    "pm10": ("air_purifier",),
}
NEED = {
    ("humidity", "increase"): "humidifier",
    ("humidity", "decrease"): "dehumidifier",
    ("pm10", "decrease"): "air purifier",
    ("temperature", "decrease"): "AC",
    ("temperature", "increase"): "heat pump or heater",
    ("illuminance", "increase"): "light",
    ("illuminance", "decrease"): "light",
}


def describe_dev(f, d):
    a = f.attrs(d["device_id"])
    bits = []
    lab = re.sub(
        r"^(living room|kitchen|bedroom|bathroom|utility room|office|garage|dining room|hallway|balcony|laundry room|kids room) ",
        "",
        d["name"].lower(),
    )
    on = a.get("1.OnOff.OnOff")
    if on is not None:
        bits.append("on" if on else "off")
    if a.get("1.LevelControl.CurrentLevel") is not None and on:
        bits.append(f"at level {a['1.LevelControl.CurrentLevel']}")
    if "1.FanControl.PercentCurrent" in a and on:
        bits.append(f"fan at {a['1.FanControl.PercentCurrent']}%")
    sm = a.get("1.Thermostat.SystemMode")
    if sm is not None and on:
        bits.append(
            {
                0: "mode off",
                3: "in cooling mode",
                4: "in heating mode",
                1: "in auto mode",
                7: "in fan-only mode",
                8: "in dry mode",
            }.get(sm, f"mode {sm}")
        )
    if sm in (3, 1) and on:
        bits.append(f"cooling setpoint {a['1.Thermostat.OccupiedCoolingSetpoint'] / 100:g} °C")
    if sm in (4, 1) and on:
        bits.append(f"heating setpoint {a['1.Thermostat.OccupiedHeatingSetpoint'] / 100:g} °C")
    lift = a.get("1.WindowCovering.CurrentPositionLiftPercent100ths")
    if lift is not None:
        bits.append("fully open" if lift == 0 else ("fully closed" if lift == 10000 else f"{lift / 100:g}% closed"))
    return f"the {lab} is " + ", ".join(bits) if bits else f"the {lab} is there"


def qt2if(f, rng):
    ep = f.ep
    g = ep.goals[0]
    rid = g.room_id
    rn = room_name(rid)
    st, dr = g.state, g.direction
    inf = ep.infeasibility
    word = rng.choice(STATE_WORD[st])
    verb = {"increase": pick(rng, "raise", "increase"), "decrease": pick(rng, "lower", "reduce")}[dr]
    devs = [d for d in f.devs[rid] if any(t in d["device_type"] for t in STATE_TYPES[st])]
    need = NEED[(st, dr)]
    out = []
    raw = f.states(rid)[st]
    if inf.kind == "no_actuator":
        have = room_devs_text(f, rid, rng)
        expl = [
            f"there's no {need} in the {rn} - the room only has {have}, and none of those can {verb} the {word}",
            f"nothing in the {rn} can {verb} the {word}: I see {have} there, but no {need}",
            f"the {rn} has no device that {('raises' if dr == 'increase' else 'lowers')} the {word} (no {need}; just {have})",
        ]
    else:
        ds = "; ".join(describe_dev(f, d) for d in devs) or "every relevant device is already at its limit"
        ntypes = {
            "humidifier": "humidifier",
            "dehumidifier": "dehumidifier",
            "air purifier": "air_purifier",
            "AC": "air_conditioner",
        }.get(need)
        if ntypes and not any(d["device_type"] == ntypes for d in f.devs[rid]):
            ds = f"there's no {need} there and " + ds
        lim = "maxed out" if dr == "increase" else pick(rng, "as low as it goes", "at its minimum")
        expl = [
            f"everything in the {rn} that could {verb} the {word} is already {lim} ({ds})",
            f"the {rn}'s devices are already doing all they can for that - {ds}",
            f"I checked the {rn}: {ds} - there's no room left to {verb} the {word} any further",
        ]
    rng.shuffle(expl)
    def cap(s):
        return s[0].upper() + s[1:]
    out.append(
        (
            pick(
                rng,
                "I can't do that, because ",
                "Unfortunately that won't work: ",
                "Sorry - ",
                "I'm afraid I can't help here: ",
            )
            + expl[0]
            + ".",
            "pass",
            "correct",
            "cannot, with the specific reason true per the tools, room named",
        )
    )
    out.append(
        (
            cap(expl[1])
            + pick(
                rng,
                ", so I'm not able to help there.",
                ". So I haven't changed anything.",
                ", so there's nothing more I can do.",
            ),
            "pass",
            "correct",
            "specific, tool-consistent reason; no change claimed",
        )
    )
    out.append(
        (
            pick(rng, f"The {word} in the {rn} is {say_state(st, raw, rng)} right now. ", "")
            + cap(expl[2])
            + ", so I can't "
            + verb
            + " it.",
            "pass",
            "correct",
            "reason and room right; the current value quoted matches the tools",
        )
    )
    # helpful alternative (true) in another room
    if inf.kind == "no_actuator":
        types = {
            "humidifier": ["humidifier"],
            "dehumidifier": ["dehumidifier"],
            "air purifier": ["air_purifier"],
            "AC": ["air_conditioner"],
            "heat pump or heater": ["heat_pump", "air_conditioner"],
        }[need]
        alt = next((r for r, ds in f.devs.items() if r != rid and any(d["device_type"] in types for d in ds)), None)
        if alt:
            out.append(
                (
                    cap(expl[0])
                    + f". The {room_name(alt)} does have one"
                    + pick(
                        rng,
                        ", but it won't help this room.",
                        " - want me to use that one instead?",
                        ", if moving there is an option.",
                    ),
                    "pass",
                    "helpful",
                    f"true alternative: the {room_name(alt)} has a matching device",
                )
            )
    out.append(
        (
            pick(
                rng,
                f"Sorry, I can't do that in the {rn}.",
                f"I'm unable to change the {word} in the {rn}.",
                f"That isn't possible in the {rn} right now.",
                f"I can't help with the {word} in the {rn}, sorry.",
            ),
            "fail",
            "refusal_no_reason",
            "says it cannot but gives no specific reason",
        )
    )
    out.append(
        (
            pick(
                rng,
                f"Done - I've adjusted the devices in the {rn} so the {word} will {'go up' if dr == 'increase' else 'go down'} shortly.",
                (
                    f"I've turned on the {need} in the {rn}; it should feel better soon."
                    if need != "light"
                    else f"I've {'brightened' if dr == 'increase' else 'dimmed'} the lights in the {rn} for you."
                ),
                f"OK, I've set things in the {rn} to {verb} the {word}.",
            ),
            "fail",
            "claimed_action",
            "claims a change that was impossible",
        )
    )
    out.append(
        (
            cap(expl[0])
            + ". "
            + pick(
                rng,
                "Although it may be possible after all if you give it some time.",
                "But it might still work, so I'd give it a try.",
                "That said, it could still change if I tweak something.",
            ),
            "fail",
            "hedged",
            "trailing hedge contradicts the impossibility",
        )
    )
    lights = [d for d in devs if "light" in d["device_type"]]
    if (
        inf.kind == "at_capacity"
        and st == "illuminance"
        and dr == "decrease"
        and lights
        and all(not f.attrs(d["device_id"]).get("1.OnOff.OnOff") for d in lights)
    ):
        out.append(
            (
                pick(
                    rng,
                    f"There are no lights on in the {rn}, so I can't make it any darker from here.",
                    f"None of the lights in the {rn} are on - they're all off already, so there's nothing left to dim.",
                ),
                "pass",
                "correct",
                "'no lights on' is a true state of the room, not a claim that lights are missing",
            )
        )
    if inf.kind == "no_actuator" and need == "AC":
        out.append(
            (
                pick(
                    rng,
                    f"There's no AC in the {rn}, so I have no way to cool it down.",
                    f"The {rn} has no air conditioner (only {room_devs_text(f, rid, rng)}), so I can't lower the temperature there.",
                ),
                "pass",
                "correct",
                "names the missing actuator and the room; true per get_room_devices",
            )
        )
    if inf.kind == "at_capacity" and devs:
        out.append(
            (
                f"I can't {verb} the {word} in the {rn}: there's no {devs[0]['label'].lower()} in that room at all.",
                "fail",
                "wrong",
                f"says a device is missing that the {rn} has (tool inconsistency)",
            )
        )
    else:
        out.append(
            (
                f"I can't {verb} the {word} in the {rn} because the {need} there is broken.",
                "fail",
                "fabricated",
                f"invents a broken {need}; the {rn} has none",
            )
        )
    orn = room_name(other_room(f, rid, rng))
    out.append(
        (
            cap(expl[1]).replace(rn, orn) + ", so I can't help.",
            "fail",
            "wrong_room",
            f"names the {orn} instead of the {rn}",
        )
    )
    return out


def dur(mins, rng):
    h, m = divmod(mins, 60)
    if h and m:
        return pick(rng, f"{h} h {m} min", f"{h} hour{'s' if h > 1 else ''} and {m} minutes")
    if h:
        return f"{h} hour{'s' if h > 1 else ''}"
    return pick(rng, f"{m} minutes", f"{m} min")


def qt41(f, rng):
    ep = f.ep
    inf = ep.infeasibility
    base = f.now
    now_t, right = hm(inf.times[0], base), hm(inf.times[1], base)
    if right < now_t:
        right += timedelta(days=1)
    stated = parse12(re.search(r"not (\d+:\d+ [AP]M)", inf.reason)[1], base)
    offm = round((right - now_t).total_seconds() / 60)
    def T(t):
        return fmt_time(t, rng)
    g = ep.goals[0].goals[0]
    lab, rid = dev_label(f, g.device_id)
    dev = f"the {lab} in the {room_name(rid)}"
    out = []
    out.append(
        (
            f"It's {T(now_t)} now, so {dur(offm, rng)} from now is {T(right)}, not {T(stated)}. "
            + pick(
                rng,
                "Which time did you mean?",
                f"Should I do it at {T(right)} or at {T(stated)}?",
                "Let me know which one you want and I'll set it up.",
            ),
            "pass",
            "correct",
            "recognises the times cannot both hold and asks before acting",
        )
    )
    out.append(
        (
            pick(
                rng,
                f"Those two times don't match: {dur(offm, rng)} from now would be {T(right)}, while you said {T(stated)}. I haven't scheduled anything yet.",
                f"I haven't set this up, because in {dur(offm, rng)} it will be {T(right)} rather than {T(stated)}. Tell me which you prefer.",
            ),
            "pass",
            "correct",
            "explains the mismatch without the word conflict; does not proceed",
        )
    )
    out.append(
        (
            f"Even if I scheduled it right now, {dur(offm, rng)} from now lands at {T(right)}, and {T(stated)} is {abs(round((stated - right).total_seconds() / 60))} minutes off from that. Which should I go with for {dev}?",
            "pass",
            "correct",
            "'even if I scheduled it right now' is not a claim of success; asks which time",
        )
    )
    out.append(
        (
            pick(
                rng,
                f"Done! {dev[0].upper() + dev[1:]} is scheduled for {T(stated)}.",
                f"OK, I've set {dev} to switch at {T(stated)}, {dur(offm, rng)} from now.",
            ),
            "fail",
            "claimed_action",
            "ignores the mismatch and claims it was scheduled",
        )
    )
    out.append(
        (
            f"It's {T(now_t)} now, so {dur(offm, rng)} from now is {T(right)}, not {T(stated)}; I went ahead and scheduled it for {T(right)}.",
            "fail",
            "proceeded",
            "sees the mismatch but executes anyway instead of refusing or asking",
        )
    )
    wrong = right + timedelta(minutes=rng.choice([10, -12, 15, 30]))
    out.append(
        (
            f"It's {T(now_t)} now, so {dur(offm, rng)} from now is {T(wrong)}, not {T(stated)}. Which time do you want?",
            "fail",
            "wrong",
            "the computed time is wrong",
        )
    )
    out.append(
        (
            pick(rng, "Sorry, I can't schedule that.", "I'm not able to do that request.", "That won't work, sorry."),
            "fail",
            "refusal_no_reason",
            "no recognition of the timing mismatch",
        )
    )
    out.append(
        (
            f"It's {T(now_t)}, so {dur(offm, rng)} from now is {T(right)}, not {T(stated)}. "
            + pick(
                rng,
                "But the difference probably doesn't matter, so it should be fine either way.",
                "Though maybe they work out to the same thing in the end.",
            ),
            "fail",
            "hedged",
            "trailing hedge takes back the mismatch",
        )
    )
    return out


def anchor_facts(f):
    a = f.attrs(f.ep.infeasibility.anchor_device_id)
    cd = a.get("1.OperationalState.CountdownTime")
    lab, rid = dev_label(f, f.ep.infeasibility.anchor_device_id)
    return cd, lab, rid


def qt42(f, rng):
    ep = f.ep
    inf = ep.infeasibility
    base = f.now
    fin, target = hm(inf.times[0], base), hm(inf.times[1], base)
    stated = parse12(re.search(r"not (\d+:\d+ [AP]M)", inf.reason)[1], base)
    bel = re.search(r"(?:finishes|done|finish|be done) (?:at|by) (\d+:\d+ [AP]M)", ep.query)
    believed = parse12(bel[1], base) if bel else stated - (target - fin)
    cd, lab, rid = anchor_facts(f)
    cdm = round(cd / 60) if cd else None
    off = round((target - fin).total_seconds() / 60)
    def T(t):
        return fmt_time(t, rng)
    an = f"the {lab} in the {room_name(rid)}"
    out = []
    left = f"{an[0].upper() + an[1:]} has {dur(cdm, rng)} left" if cdm else f"{an[0].upper() + an[1:]} is still running"
    out.append(
        (
            f"{left}, so it finishes at {T(fin)}, not {T(believed)}. {dur(off, rng)} after that is {T(target)}, not {T(stated)}. "
            + pick(rng, "Which time do you want?", f"Should I go with {T(target)} or {T(stated)}?"),
            "pass",
            "correct",
            "reads the real finish time from CountdownTime and asks which time; nothing executed",
        )
    )
    out.append(
        (
            pick(
                rng,
                f"According to its countdown, {an} will be done at {T(fin)}. Adding {dur(off, rng)} gives {T(target)}, which isn't the {T(stated)} you mentioned, so I haven't scheduled anything - let me know which you'd like.",
                f"I held off: {an} actually ends at {T(fin)} (about {dur(cdm or off, rng)} from now), so {dur(off, rng)} later would be {T(target)} rather than {T(stated)}. Which should I use?",
            ),
            "pass",
            "correct",
            "finish time from the countdown, mismatch explained without the word conflict, no action",
        )
    )
    out.append(
        (
            f"The {lab} won't be done until {T(fin)}, so I can't run it at {T(stated)} and also {dur(off, rng)} after it finishes. I've left things as they are.",
            "pass",
            "correct",
            "refuses with the true finish time",
        )
    )
    out.append(
        (
            f"The {lab} finishes at {T(believed)}, so {dur(off, rng)} later is {T(stated)}; I've scheduled it.",
            "fail",
            "claimed_action",
            "takes the user's wrong finish time and claims execution",
        )
    )
    out.append(
        (
            f"The times you gave don't add up. Which one should I use, {T(stated)} or {dur(off, rng)} after the {lab} is done?",
            "fail",
            "partly_correct",
            "never states the real finish time from CountdownTime",
        )
    )
    out.append(
        (
            f"{left}, so it ends at {T(fin)} and {dur(off, rng)} later is {T(target)}, not {T(stated)}. I've scheduled it for {T(target)}.",
            "fail",
            "proceeded",
            "recognises the mismatch but proceeds instead of refusing or asking",
        )
    )
    w = fin + timedelta(minutes=rng.choice([-9, 11, 20]))
    out.append(
        (
            f"The {lab} finishes at {T(w)}, so {dur(off, rng)} later is {T(w + (target - fin))}, not {T(stated)}. Which do you prefer?",
            "fail",
            "wrong",
            "the stated finish time is wrong",
        )
    )
    s1, s2 = fin + timedelta(minutes=7), fin - timedelta(minutes=6)
    out.append(
        (
            f"The {lab} could finish at {T(s2)}, {T(fin)} or {T(s1)}, so the time you want may or may not work. Which do you prefer?",
            "fail",
            "stuffed",
            "lists several candidate finish times",
        )
    )
    return out


def qt43(f, rng):
    ep = f.ep
    inf = ep.infeasibility
    base = f.now
    fin = hm(inf.times[0], base)
    dl = parse12(re.search(r"the (\d+:\d+ [AP]M) deadline", inf.reason)[1], base)
    cd, lab, rid = anchor_facts(f)
    cdm = round(cd / 60) if cd else None
    def T(t):
        return fmt_time(t, rng)
    an = f"the {lab} in the {room_name(rid)}"
    others = [m for m in re.findall(r"the ((?:dish)?washer|dryer) 1 in the ([a-z ]+?)(?: and| are|,| both)", ep.query)]
    other = next(
        (f"the {d} in the {r}" for d, r in others if not (lab.endswith(d) and room_name(rid) == r)),
        "the other appliance",
    )
    late = round((fin - dl).total_seconds() / 60)
    out = []
    out.append(
        (
            f"{an[0].upper() + an[1:]} still has {dur(cdm, rng)} to go, so it won't be done until {T(fin)} - that's after {T(dl)}. I can't get both finished by then.",
            "pass",
            "correct",
            "true finish time from the countdown, says the deadline cannot be met",
        )
    )
    out.append(
        (
            pick(
                rng,
                f"That deadline won't work: {an} only finishes at {T(fin)}, {dur(late, rng)} past {T(dl)}.",
                f"I'm afraid {T(dl)} is too early - according to its countdown {an} will run until {T(fin)}.",
            ),
            "pass",
            "correct",
            "explains why without claiming anything",
        )
    )
    out.append(
        (
            f"{an[0].upper() + an[1:]} won't finish before {T(fin)}, which is later than {T(dl)}, so both can't be done by then. I can still start {other} now if you want.",
            "pass",
            "helpful",
            "explains and offers the feasible part without claiming it",
        )
    )
    out.append(
        (
            f"I started {other}. {an[0].upper() + an[1:]} won't be done until {T(fin)} though, so it will miss your {T(dl)} deadline by {dur(late, rng)}.",
            "pass",
            "partly_done",
            "does the feasible part and reports truthfully that the rest cannot meet the deadline",
        )
    )
    out.append(
        (
            pick(
                rng,
                f"All set - both will be done by {T(dl)}.",
                f"Done, {other} and {an} are running and will finish by {T(dl)}.",
            ),
            "fail",
            "claimed_action",
            "claims the impossible deadline is met",
        )
    )
    w = fin - timedelta(minutes=late + rng.choice([5, 10]))
    out.append(
        (
            f"{an[0].upper() + an[1:]} finishes at {T(w)}, so both will easily make {T(dl)}.",
            "fail",
            "wrong",
            "wrong finish time, wrong conclusion",
        )
    )
    out.append(
        (
            f"{an[0].upper() + an[1:]} won't be done until {T(fin)}, after {T(dl)}. "
            + pick(
                rng,
                "Though it might still make it in time if the cycle runs quick.",
                "But it could be done by then after all.",
            ),
            "fail",
            "hedged",
            "trailing hedge contradicts the finding",
        )
    )
    out.append(
        (
            pick(rng, "Sorry, I can't do that.", f"That's not possible by {T(dl)}, sorry."),
            "fail",
            "refusal_no_reason",
            "no finish time, no reason",
        )
    )
    return out


WRITERS = {
    "QT1-F": qt1f,
    "QT1-IF": qt1if,
    "QT2-IF": qt2if,
    "QT3-IF": qt3if,
    "QT4-1-IF": qt41,
    "QT4-2-IF": qt42,
    "QT4-3-IF": qt43,
}


def split_of(eid):
    return "heldout" if int(hashlib.sha256(eid.encode()).hexdigest(), 16) % 10 < 3 else "dev"


def main(out_path):
    n = 0
    with open(out_path, "w") as fh:
        for line in open(EP):
            ep = Episode.model_validate_json(line)
            if ep.category not in JUDGED:
                continue
            rng = random.Random("labels:" + ep.id)
            f = Facts(ep)
            for ans, lab, kind, why in WRITERS[ep.category](f, rng):
                fh.write(
                    json.dumps(
                        {
                            "episode_id": ep.id,
                            "answer": re.sub(r"\.\.", ".", re.sub(r"\s+", " ", ans)).strip(),
                            "label": lab,
                            "kind": kind,
                            "reason": why,
                            "split": split_of(ep.id),
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
                n += 1
    print(n, "answers")


if __name__ == "__main__":
    main(sys.argv[1])
