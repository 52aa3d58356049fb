"""A rule agent (no LLM) for SimuHome's own free-text wording: the released episodes say
"power on the utility room dryer 1", "set blinds 1 in the living room to 80.0% closed 11
minutes from now", "20 minutes after the dishwasher 1 in the kitchen finishes", "At 5:58 PM,
that is 11 minutes from now". The reference solver hands a query it cannot parse as one of
our templates to `read_and_act`.

It reads the query into clauses (sentence, then comma/"and"), each with the devices it names
(a device word and its number, the room just before or after), the setting it asks for and
its time (now, minutes from now, after the previous action, before/after an appliance
finishes, a clock time). It works only through the tools; it never sees the goals.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from scenarios import answers as Ans
from scenarios.simuhome import actions as A

#: Device words, longest first, and the device types each can mean ("light 1" is either kind).
DEVICE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"dimmer lights?|dimmable lights?", ("dimmable_light",)),
    (r"lights?|lamps?", ("on_off_light",)),   # SimuHome's "light 1" is its on/off light
    (r"air conditioners?|air conditioning|a/c|ac", ("air_conditioner",)),
    (r"air purifiers?|purifiers?", ("air_purifier",)),
    (r"dehumidifiers?", ("dehumidifier",)),
    (r"humidifiers?", ("humidifier",)),
    (r"heat pumps?", ("heat_pump",)),
    (r"blinds?|window coverings?|shades?|curtains?", ("window_covering",)),
    (r"dishwashers?", ("dishwasher",)),
    (r"washing machines?|washers?", ("laundry_washer",)),
    (r"dryers?", ("laundry_dryer",)),
    (r"refrigerators?|fridges?", ("refrigerator",)),
    (r"freezers?", ("freezer",)),
    (r"tvs?|televisions?", ("tv",)),
    (r"robot vacuums?|vacuums?|rvcs?", ("robot_vacuum_cleaner",)),
    (r"fans?", ("fan",)),
)
_DEVICE = "|".join(w for w, _ in DEVICE_WORDS)
#: A numbered device: "dryer 1" but not "fan 30%" or "fan to 70 percent".
_MENTION = re.compile(rf"\b({_DEVICE})\s+(\d+)\b(?!\s*(?:%|percent|°|degrees?|minutes?|\.\d))", re.IGNORECASE)
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)
_FROM_NOW = re.compile(r"\b(?:in\s+)?(\d+)\s+minutes?\s+from\s+now\b|\bin\s+(\d+)\s+minutes?\b", re.IGNORECASE)
_AFTER_PREV = re.compile(r"\b(\d+)\s+minutes?\s+(?:after|later than)\s+(?:the\s+|that\s+)?(?:previous|last|prior|"
                         r"that|this|first)\b(?:\s+(?:action|step|one|change))?", re.IGNORECASE)
_ANCHOR = re.compile(rf"\b(?:(\d+)\s+minutes?\s+(before|after)\s+|(?:when|once|as soon as|right when|the moment|"
                     rf"wait for|waiting for|after)\s+)"
                     rf"(?:the\s+)?(?:[a-z' ]*?\s)?({_DEVICE})\s+(\d+)\b[^,.;]*?\b(?:finish|finishes|is done|"
                     rf"completes|ends|stops)\b", re.IGNORECASE)
_TOGETHER = re.compile(r"\b(?:finish|end|done)\w*\s+(?:\w+\s+){0,2}?(?:at the same time|together|at once)\b",
                       re.IGNORECASE)
#: "after 14 minutes start ...", "wait 17 minutes then ...": minutes after the appliance named before.
_AFTER_N = re.compile(r"\b(?:after|wait(?:ing)?)\s+(\d+)\s+minutes?\b(?!\s+(?:from now|after))|"
                      r"\b(\d+)\s+minutes?\s+later\b", re.IGNORECASE)
#: "I expect dishwasher 1 in the kitchen to finish around 11:26 AM": a claimed finish time.
_CLAIMED_END = re.compile(r"\b(?:finish|be done|end)\w*\s+(?:right\s+)?(?:around|at|about|by|near)\b", re.IGNORECASE)
_DEADLINE = re.compile(r"\bby\s+(\d{1,2}):(\d{2})\s*([ap])\.?\s?m\b", re.IGNORECASE)
_ORDER = {"On": 0, "Start": 3, "Pause": 3, "Stop": 3, "Resume": 3}
_PCT = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:%|percent)", re.IGNORECASE)
_DEG = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:°\s*c\b|°|degrees?(?:\s+celsius)?|c\b)", re.IGNORECASE)
_DRYNESS = {"low": 0, "normal": 1, "extra": 2, "max": 3}
STATE_WORDS: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature", "warm", "hot", "cold", "cool", "chilly", "heat", "stuffy and hot", "sweat",
                    "freezing", "degrees"),
    "humidity": ("humid", "dry", "damp", "muggy", "moist", "sticky", "clammy"),
    "illuminance": ("bright", "dim", "dark", "light level", "lighting", "lux", "glare", "illuminance", "lit",
                    "squint", "gloomy"),
    "pm10": ("dust", "air quality", "pm10", "pm 10", "particle", "stuffy", "clean the air", "air feels",
             "crisp", "allergy", "sneez", "smoky", "smell"),
}
UNITS = {"temperature": "°C", "humidity": "%", "illuminance": "lux", "pm10": "µg/m³"}
#: Complaint words per room state, as regexes: (asking for more, asking for less).
_DIRECTION = {
    "temperature": ((r"\bcold", r"\bchilly", r"\bfreezing", r"\bshiver", r"\bfrigid", r"\bicy\b", r"\bnumb"),
                    (r"\bwarm", r"\bhot\b", r"\bsweat", r"\bflushed", r"\bheat\b", r"\bsweltering", r"\bboiling",
                     r"\bstifling")),
    "humidity": ((r"\bdry\b", r"\bhumidity is (?:so |too |really |very |way )?low", r"\bparched", r"\bcracked",
                  r"\bstatic\b", r"\bbrittle"),
                 (r"\bhumid\b", r"\bhumidity is (?:so |too |really |very |way )?high", r"\bdamp", r"\bmuggy",
                  r"\bclammy", r"\bmoist", r"\bfrizz", r"\bsteamy", r"\bsoggy")),
    "illuminance": ((r"\bdim\b", r"\bdark", r"\bgloomy", r"\bso low\b", r"\btoo low\b", r"\bbarely see",
                     r"\bcan't see", r"\bcannot see"),
                    (r"\bbright", r"\bglar", r"\bblasting", r"\bharsh", r"\bblinding", r"\bwashed out", r"\btoo strong",
                     r"\bbrutal", r"\bhurts? my eyes", r"\bintense")),
    "pm10": ((), (r"\bdust", r"\bstuffy", r"\btoo crisp", r"\btoo clean", r"\bstale", r"\bsmok",
                  r"\bsneez", r"\ballerg", r"\bpollen", r"\bhaz[ey]", r"\bparticle", r"\bair quality", r"\bgritty")),
}
#: Which devices SimuHome counts as moving a room state each way: its AC only cools and its heat
#: pump only heats (the other helps only by stopping: `assess`), a (de)humidifier helps the other
#: way by stopping, and blinds do not enter its illuminance.
_PUSHES: dict[tuple[str, str], tuple[str, ...]] = {
    ("temperature", "decrease"): ("air_conditioner",), ("temperature", "increase"): ("heat_pump",),
    ("humidity", "increase"): ("humidifier", "dehumidifier"), ("humidity", "decrease"): ("dehumidifier", "humidifier"),
    ("pm10", "decrease"): ("air_purifier",),
    ("illuminance", "increase"): ("dimmable_light", "on_off_light"),
    ("illuminance", "decrease"): ("dimmable_light", "on_off_light"),
}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass
class Mention:
    start: int
    end: int
    word: str
    number: int
    types: tuple[str, ...]
    room: str | None = None
    room_span: tuple[int, int] = (0, 0)   # where the text names its room


@dataclass
class Clause:
    text: str
    start: int
    targets: list[Mention] = field(default_factory=list)
    anchor: tuple[Mention, str, int] | None = None   # (device, "before"|"after", minutes)
    from_now: int | None = None
    after_prev: int | None = None
    clock: int | None = None                        # minutes since midnight


def sentences(text: str) -> list[tuple[int, str]]:
    out, start = [], 0
    for m in re.finditer(r"(?<=[.!?])\s+(?=\S)", text):
        out.append((start, text[start:m.start()]))
        start = m.end()
    out.append((start, text[start:]))
    return [(s, t) for s, t in out if t.strip()]


class Reader:
    """One query against one home, through the tools (`run.tool`)."""

    def __init__(self, run: Any, query: str):
        self.run = run
        self.text = re.sub(r"\b(?:minus|negative)\s+(?=\d)", "-", Ans.normalize(query), flags=re.IGNORECASE)
        self.low = self.text.lower()
        self.room_ids = sorted(run.rooms.values(), key=len, reverse=True)
        names = {rid: {rid.replace("_", " "), rid.replace("_", ""),
                       rid.replace("kids_", "kid's ").replace("_", " "),
                       rid.replace("kids_", "kids' ").replace("_", " ")} for rid in self.room_ids}
        for rid in self.room_ids:   # "the study", "the utility"
            if rid in ("study_room", "utility_room", "kids_room"):
                names[rid].add(rid.split("_")[0])
        names.update({rid: names[rid] | {n} for n, rid in run.rooms.items()})
        self.room_pattern = re.compile(r"\b(" + "|".join(sorted({re.escape(n) for ns in names.values() for n in ns},
                                                                 key=len, reverse=True)) + r")\b", re.IGNORECASE)
        self.room_of = {n.lower(): rid for rid, ns in names.items() for n in ns}
        self.said: list[str] = []
        self.found: list[Mention] = []

    # ---- reading ---------------------------------------------------------------------------
    def rooms_in(self, text: str) -> list[str]:
        out: list[str] = []
        for m in self.room_pattern.finditer(text):
            rid = self.room_of[m[1].lower()]
            if rid not in out:
                out.append(rid)
        return out

    def mentions(self) -> list[Mention]:
        out = []
        known: dict[tuple[str, int], str | None] = {}
        for m in _MENTION.finditer(self.text):
            word = m[1].lower()
            types = next(t for w, t in DEVICE_WORDS if re.fullmatch(w, word))
            mention = Mention(m.start(), m.end(), word, int(m[2]), types)
            before = self.text[max(0, m.start() - 40):m.start()]
            after = self.text[m.end():m.end() + 40]
            pre = list(self.room_pattern.finditer(before))
            post = re.match(r"\s*(?:in|of|from|inside)\s+(?:the\s+)?" + self.room_pattern.pattern, after, re.IGNORECASE)
            if pre and before[pre[-1].end():].strip().lower() in ("", "'s"):
                mention.room = self.room_of[pre[-1][1].lower()]
                offset = max(0, m.start() - 40)
                mention.room_span = (offset + pre[-1].start(), offset + pre[-1].end())
            elif post:
                mention.room = self.room_of[post[1].lower()]
                mention.room_span = (m.end() + post.start(1), m.end() + post.end(1))
            elif (mention.word, mention.number) in known:   # "pause dryer 1" after "start dryer 1 in the ..."
                mention.room = known[(mention.word, mention.number)]
            else:   # the nearest room named in the same sentence
                sentence = next(t for s, t in reversed(sentences(self.text)) if s <= m.start())
                rooms = self.rooms_in(sentence)
                mention.room = rooms[0] if rooms else None
            known.setdefault((mention.word, mention.number), mention.room)
            out.append(mention)
        return out

    def clauses(self, mentions: list[Mention]) -> list[list[Clause]]:
        """Per sentence, its clauses; "20 minutes after the dishwasher 1 finishes" makes its device an anchor."""
        out = []
        for s_start, sentence in sentences(self.text):
            cut = [0] + [m.end() for m in re.finditer(r",\s*|;\s*|\s+and\s+|\s+then\s+|\s+also\s+", sentence)]
            parts = [(s_start + a, sentence[a:b]) for a, b in zip(cut, cut[1:] + [len(sentence)])]
            row = []
            for start, text in parts:
                c = Clause(text, start)
                inside = [m for m in mentions if start <= m.start < start + len(text)]
                anchor = _ANCHOR.search(text)
                if anchor:
                    a = next((m for m in inside if m.start - start >= anchor.start(3)), None)
                    if a is not None:
                        rel = (anchor[2] or "after").lower()
                        c.anchor = (a, rel, int(anchor[1] or 0))
                        inside = [m for m in inside if m is not a]
                c.targets = inside
                if (m := _FROM_NOW.search(text)):
                    c.from_now = int(m[1] or m[2])
                if (m := _AFTER_PREV.search(text)):
                    c.after_prev = int(m[1])
                if (m := _CLOCK.search(text)):
                    c.clock = (int(m[1]) % 12 + (12 if m[3].lower() == "p" else 0)) * 60 + int(m[2])
                row.append(c)
            for a, b in zip(row, row[1:]):   # "At 5:58 PM, that is 11 minutes from now, ..." is one time
                if a.clock is not None and b.clock is None and (b.from_now is not None or b.anchor is not None) \
                        and a.from_now is None and a.anchor is None:
                    a.from_now, a.anchor, b.from_now, b.anchor = b.from_now, b.anchor, None, None
                elif b.clock is not None and a.clock is None and (a.from_now is not None or a.anchor is not None) \
                        and not b.targets:
                    a.clock, b.clock = b.clock, None
            out.append(row)
        return out

    # ---- devices through the tools ------------------------------------------------------------
    def device(self, mention: Mention) -> dict | None:
        if mention.room is None:
            return None
        for type_key in mention.types:
            found = [d for d in self.run.devices(mention.room) if d["device_type"] == type_key
                     and d["device_id"].rsplit("_", 1)[-1] == str(mention.number)]
            if found:
                return found[0]
        return None

    def say_missing(self, mention: Mention) -> None:
        room = (mention.room or "room you named").replace("_", " ")
        self.said.append(f"There is no {mention.word} {mention.number} in the {room}, so I can't do that for it.")

    def finish_time(self, device: dict) -> datetime | None:
        cluster = "RvcOperationalState" if device["device_type"] == "robot_vacuum_cleaner" else "OperationalState"
        countdown = self.run.read(device["device_id"], cluster, "CountdownTime")
        state = self.run.read(device["device_id"], cluster, "OperationalState")
        if countdown is None or state not in (1, 2):
            return None
        return self.run.now + timedelta(seconds=countdown)

    def clock_at(self, minutes: int, near: datetime) -> datetime:
        base = near.replace(hour=minutes // 60, minute=minutes % 60, second=0, microsecond=0)
        return min((base + timedelta(days=k) for k in (-1, 0, 1)), key=lambda x: abs(x - near))

    # ---- settings a clause asks of a device --------------------------------------------------------
    def calls(self, device: dict, text: str, sentence: str = "") -> list[dict]:
        """The calls `text` asks of `device`; an appliance's mode or dryness may be said anywhere in
        the `sentence` ("get dryer 1 going now on Extra dryness level and run it")."""
        d, t = device["device_id"], device["device_type"]
        low = text.lower()
        whole = (sentence or text).lower()
        out: list[dict] = []
        on = re.search(r"\b(?:turn|power|switch|keep|keeping|put)\w*\b[^,.]*?\bon\b|\bon\b\s*$|^\s*on\b", low) \
            or re.search(r"\bpower(?:ed)? on\b", low)
        off = re.search(r"\b(?:turn|power|switch|shut)\w*\b[^,.]*?\boff\b", low)
        pct = _PCT.search(low)
        deg = _DEG.search(low)
        if off and not on:
            return [A.command(d, "OnOff", "Off")]
        if t in ("on_off_light", "dimmable_light"):
            level = re.search(r"\blevel\s+(?:of\s+|to\s+)?(\d+)", low)
            value = int(level[1]) if level else (round(float(pct[1])) if pct else None)
            if value is not None and t == "dimmable_light":
                return [A.command(d, "OnOff", "On"), A.command(d, "LevelControl", "MoveToLevelWithOnOff", {
                    "level": value, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0})]
            return [A.command(d, "OnOff", "On")] if on or value is not None else []
        if t in ("fan", "air_purifier", "humidifier", "dehumidifier", "air_conditioner"):
            if on or pct or re.search(r"\bcool|\bheat", low):
                out.append(A.command(d, "OnOff", "On"))
            if t == "air_conditioner":
                if re.search(r"\bcool", low):
                    out.append(A.write(d, "Thermostat", "SystemMode", 3))
                elif re.search(r"\bheat", low):
                    out.append(A.write(d, "Thermostat", "SystemMode", 4))
                if deg:
                    out.append(A.write(d, "Thermostat", "OccupiedCoolingSetpoint", round(float(deg[1]) * 100)))
            if pct:
                out.append(A.write(d, "FanControl", "PercentSetting", round(float(pct[1]))))
            return out
        if t == "heat_pump":
            ep = A.THERMOSTAT_ENDPOINT[t]
            if re.search(r"\bheat", low):
                out.append(A.write(d, "Thermostat", "SystemMode", 4, endpoint=ep))
            if deg:
                out.append(A.write(d, "Thermostat", "OccupiedHeatingSetpoint", round(float(deg[1]) * 100), endpoint=ep))
            return out
        if t in ("refrigerator", "freezer"):
            return [A.command(d, "TemperatureControl", "SetTemperature",
                              {"targetTemperature": round(float(deg[1]) * 100)}, endpoint=2)] if deg else []
        if t == "window_covering":
            closed = re.search(r"(-?\d+(?:\.\d+)?)\s*(?:%|percent)\s*(closed|open)", low)
            if closed:
                value = float(closed[1]) if closed[2] == "closed" else 100 - float(closed[1])
            elif re.search(r"\bclose", low):
                value = 100.0
            elif re.search(r"\bopen", low):
                value = 0.0
            else:
                return []
            return [A.command(d, "WindowCovering", "GoToLiftPercentage",
                              {"liftPercent100thsValue": round(value * 100)})]
        if t == "tv":
            if on or re.search(r"\bplay", low):
                out.append(A.command(d, "OnOff", "On"))
            if re.search(r"\bplay", low):
                out.append(A.command(d, "MediaPlayback", "Play"))
            elif re.search(r"\bpause", low):
                out.append(A.command(d, "MediaPlayback", "Pause"))
            elif re.search(r"\bstop", low):
                out.append(A.command(d, "MediaPlayback", "Stop"))
            channel = re.search(r"\bchannel\s+(\d+)(?:\.(\d+))?", low)
            named = self.channel_by_name(d, low)
            if named is not None:
                out.append(A.command(d, "Channel", "ChangeChannelByNumber",
                                     {"majorNumber": named[0], "minorNumber": named[1]}))
            elif channel:
                out.append(A.command(d, "Channel", "ChangeChannelByNumber",
                                     {"majorNumber": int(channel[1]), "minorNumber": int(channel[2] or 0)}))
            volume = re.search(r"\b(?:volume|level)\b[^.,]*?(\d+)", low)
            if volume or pct:
                out.append(A.command(d, "LevelControl", "MoveToLevel", {
                    "level": int(volume[1]) if volume else round(float(pct[1])), "transitionTime": 0,
                    "optionsMask": 0, "optionsOverride": 0}))
            return out
        if t == "robot_vacuum_cleaner":
            modes = self.run.read(d, "RvcRunMode", "SupportedModes") or []
            idle = next((m["mode"] for m in modes if any(tag.get("value") == 16384 for tag in m.get("modeTags", []))
                         or "idle" in m["label"].lower()), 0)
            clean = next((m["mode"] for m in modes if any(tag.get("value") == 16385 for tag in m.get("modeTags", []))
                          or "clean" in m["label"].lower()), 1)
            if re.search(r"\bpause", low):
                return [A.command(d, "RvcOperationalState", "Pause")]
            if re.search(r"\bstop|\bdock|\bhome\b", low):
                return [A.command(d, "RvcRunMode", "ChangeToMode", {"newMode": idle})]
            if re.search(r"\bstart|\brun|\bclean|\bresume", low):
                return [A.command(d, "RvcRunMode", "ChangeToMode", {"newMode": clean})]
            return []
        if t in A.APPLIANCES:
            if re.search(r"\bpause", low):
                return [A.command(d, "OperationalState", "Pause")]
            if re.search(r"\bstop|\bcancel|\bend\b", low):
                return [A.command(d, "OperationalState", "Stop")]
            if re.search(r"\bresume|\bcontinue", low):
                return [A.command(d, "OperationalState", "Resume")]
            if re.search(r"\bstart|\brun|\bbegin|\bkick off|\bgoing\b", low) or on:
                out.append(A.command(d, "OnOff", "On"))
                dry = (re.search(r"\b(low|normal|extra|max)\w*\s+dry", whole)
                       or re.search(r"\bset (?:it )?to (low|normal|extra|max)\b", whole))
                if dry and t == "laundry_dryer":
                    out.append(A.write(d, "LaundryDryerControls", "SelectedDrynessLevel", _DRYNESS[dry[1]]))
                else:
                    modes = self.run.read(d, A.MODE_CLUSTER[t], "SupportedModes") or []
                    by_length = sorted(modes, key=lambda m: -len(m["label"]))
                    named = [m for pattern in (r"\b{}\s+(?:mode|cycle|setting|program)", r"\b{}\b")
                             for where in (low, whole) for m in by_length
                             if re.search(pattern.format(re.escape(m["label"].lower())), where)]
                    if named:
                        out.append(A.command(d, A.MODE_CLUSTER[t], "ChangeToMode", {"newMode": named[0]["mode"]}))
                if re.search(r"\bstart|\brun|\bbegin|\bkick off|\bgoing\b", low):
                    out.append(A.command(d, "OperationalState", "Start"))
            return out
        return out

    def channel_by_name(self, device_id: str, text: str) -> tuple[int, int] | None:
        """The first channel of the TV's ChannelList whose name or call sign the text says ("tune it to MBC")."""
        if not re.search(r"\b(?:tune|channel|switch|set|put|change)\b", text):
            return None
        found = []
        for entry in self.run.read(device_id, "Channel", "ChannelList") or []:
            fields = {k.lower(): v for k, v in entry.items()}
            for name in {fields.get("name"), fields.get("callsign")} - {None, ""}:
                m = re.search(rf"\b{re.escape(str(name).lower())}\b", text)
                if m:
                    found.append((m.start(), int(fields["majornumber"]), int(fields.get("minornumber") or 0)))
        return min(found)[1:] if found else None

    # ---- the episode --------------------------------------------------------------------------------
    def act(self) -> str:
        for room in self.rooms_in(self.text):   # look at every room the user names
            self.run.devices(room)
        mentions = self.found = self.mentions()
        rows = self.clauses(mentions)
        question = re.search(r"\?|\b(?:how|what)\s+(?:is|are|does|do|bright|warm|cold|hot|humid|dry|damp|dusty|fast|"
                             r"much|many|the|it|kind|brand|model)\b|\bwondering\b|\btell me\b|\bdo you know\b|"
                             r"^\s*(?:is|are|does|do|can you tell)\b", self.low)
        if question and not re.search(r"\b(?:turn|power|switch|set|start|stop|pause|resume|close|open)\b"
                                      r"(?!\s+(?:it|the \w+) (?:is|was))", self.low):
            return self.answer_question(mentions)
        if not mentions:
            return self.complaint()
        return self.commands(rows)

    @staticmethod
    def _has_setting(text: str) -> bool:
        return bool(re.search(r"\b(?:turn|power|switch|set|start|stop|pause|resume|play|close|open|drop|raise|"
                              r"lower|increase|decrease|cool|cooling|heating|adjust|move|change|run|pull|bring|dim|brighten|keep|"
                              r"put|make|get|ease|boost|bump|crank|drop|level|tune)\b", text, re.IGNORECASE))

    def answer_question(self, mentions: list[Mention]) -> str:
        for mention in mentions:
            device = self.device(mention)
            if device is None:
                self.say_missing(mention)
            else:   # a device question: what we can read of it
                self.describe(device, mention)
        rest = self.text   # the rooms named for their own sake, not as a device's room
        for m in mentions:
            for a, b in (m.room_span, (m.start, m.end)):
                rest = rest[:a] + " " * (b - a) + rest[b:]
        for room in self.rooms_in(rest):
            self.room_states(room, list(STATE_WORDS))
        return " ".join(self.said) or "I could not tell what you asked about."

    def room_states(self, room: str, wanted: list[str]) -> None:
        states = self.run.tool("get_room_states", {"room.id": room})
        parts = [f"the {_NAME[s]} is {_value(states, s)} {UNITS[s]}" for s in wanted if _value(states, s) is not None]
        if parts:
            self.said.append(f"In the {room.replace('_', ' ')}, " + ", ".join(parts) + ".")

    def describe(self, device: dict, mention: Mention) -> None:
        d = device["device_id"]
        cold = ("refrigerator", "freezer")
        for pattern, cluster, attribute, endpoint in _ASKS:
            if re.search(pattern, self.low) and (cluster != "TemperatureMeasurement" or device["device_type"] in cold):
                value = self.run.read(d, cluster, attribute, endpoint)
                if value is None and attribute != "CurrentPhase":
                    continue
                shown = ("on" if value else "off") if attribute == "OnOff" else "none" if value is None else value
                self.said.append(f"{mention.word.capitalize()} {mention.number} in the "
                                 f"{(mention.room or '').replace('_', ' ')} ({d}): {attribute} is {shown}.")
                return

    def complaint(self) -> str:
        """QT2: a room feels wrong; push what can move it, or say why nothing can. Each stretch of
        text from one room's name to the next is about that room ("the light in there"). If any
        part cannot be done, nothing is changed and the rest is offered (SimuHome's criteria)."""
        starts = [(m.start(), self.room_of[m[1].lower()]) for m in self.room_pattern.finditer(self.text)]
        asks: list[tuple[str, str, str]] = []
        for i, (start, room) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(self.text)
            low = self.text[0 if i == 0 else start:end].lower()
            for state, (up, down) in _DIRECTION.items():
                more = sum(bool(re.search(w, low)) for w in up)
                less = sum(bool(re.search(w, low)) for w in down)
                if (more or less) and (room, state) not in [(r, s) for r, s, _ in asks]:
                    asks.append((room, state, "increase" if more > less else "decrease"))
        plans = [(ask, *self.assess(*ask)) for ask in asks]
        blocked = [p for p in plans if not p[1]]
        for (room, state, direction), steps, actuators in plans:
            verb, where = ("raise" if direction == "increase" else "lower"), room.replace("_", " ")
            if not steps and not actuators:
                self.said.append(f"I can't {verb} the {_NAME[state]} in the {where}: there is no device in the "
                                 f"{where} that can {verb} it.")
            elif not steps:
                self.said.append(f"I can't {verb} the {_NAME[state]} in the {where}: every device in the {where} "
                                 f"that could {verb} it ({', '.join(actuators)}) is already at its limit.")
            elif blocked:
                self.said.append(f"I could {verb} the {_NAME[state]} in the {where} with {', '.join(steps)} if you "
                                 "want; shall I?")
            else:
                for calls in steps.values():
                    for call in calls:
                        self.run.tool(call["tool"], call["args"])
                self.said.append(f"To {verb} the {_NAME[state]} in the {where} I adjusted {', '.join(steps)}.")
        return " ".join(self.said) or "I could not tell what you wanted changed."

    def assess(self, room: str, state: str, direction: str) -> tuple[dict[str, list[dict]], list[str]]:
        """({device: calls still needed}, every device that could move `state` that way)."""
        states = self.run.tool("get_room_states", {"room.id": room})
        actuators = [d for d in self.run.devices(room) if d["device_type"] in _PUSHES[(state, direction)]]
        needed: dict[str, list[dict]] = {}
        for device in actuators:
            d, t = device["device_id"], device["device_type"]
            steps = A.strongest(d, t, state, direction)
            if (t, direction) == ("heat_pump", "increase") and self._heating(d, states):
                continue   # already heating the room: as far as SimuHome's heat pump goes
            if any(self.run.read(d, cl, at, ep) != v for _, (ep, cl, at, v) in steps):
                needed[d] = [call for call, _ in steps]
        if state == "temperature":   # the other kind helps only by stopping, and only while it works
            room_t = float(_value(states, "temperature") or 0) * 100
            for device in self.run.devices(room):
                d, t = device["device_id"], device["device_type"]
                ep = A.THERMOSTAT_ENDPOINT.get(t, 1)
                if (t, direction) == ("heat_pump", "decrease") and \
                        self.run.read(d, "Thermostat", "SystemMode", ep) == 4:
                    actuators.append(device)
                    if (self.run.read(d, "Thermostat", "OccupiedHeatingSetpoint", ep) or 0) > room_t:
                        needed[d] = [A.write(d, "Thermostat", "SystemMode", 0, endpoint=ep)]
                elif (t, direction) == ("air_conditioner", "increase") and self.run.read(d, "OnOff", "OnOff") \
                        and self.run.read(d, "Thermostat", "SystemMode", ep) == 3:
                    actuators.append(device)
                    if (self.run.read(d, "Thermostat", "OccupiedCoolingSetpoint", ep) or 10 ** 4) < room_t \
                            and self.run.read(d, "FanControl", "PercentSetting"):   # no air moving: no cooling
                        needed[d] = [A.command(d, "OnOff", "Off")]
        return needed, [d["device_id"] for d in actuators]

    def _heating(self, device_id: str, states: dict) -> bool:
        ep = A.THERMOSTAT_ENDPOINT["heat_pump"]
        room_t = float(_value(states, "temperature") or 0) * 100
        return bool(self.run.read(device_id, "Thermostat", "SystemMode", ep) == 4
                    and (self.run.read(device_id, "Thermostat", "OccupiedHeatingSetpoint", ep) or 0) > room_t)

    def commands(self, rows: list[list[Clause]]) -> str:
        now = self.run.now
        plan: list[tuple[datetime | None, dict, list[dict]]] = []
        last: datetime | None = None
        problems: list[str] = []
        finishes: dict[str, datetime | None] = {}

        def finish_of(m: Mention) -> datetime | None:
            dev = self.device(m)
            if dev is None:
                return None
            if dev["device_id"] not in finishes:
                finishes[dev["device_id"]] = self.finish_time(dev)
            return finishes[dev["device_id"]]

        anchor_end: datetime | None = None   # the last appliance finish named, for "after 14 minutes"
        for start, sentence in sentences(self.text):
            inside = [m for m in self.found if start <= m.start < start + len(sentence)]
            claim = _CLAIMED_END.search(sentence)
            clocks = Ans.clock_readings(sentence[claim.end():]) if claim and inside else ()
            end = finish_of(inside[0]) if clocks else None
            if end is None:
                continue
            anchor_end = end
            said = [self.clock_at(m, end) for m in clocks[0]]
            if not any(abs((x - end).total_seconds()) <= 60 for x in said):
                later = _AFTER_N.search(self.text[start + claim.end():]) if claim else None
                then = (f", so {later[1] or later[2]} minutes later is "
                        f"{_clock(end + timedelta(minutes=int(later[1] or later[2])))}" if later else "")
                m = inside[0]
                self.said.append(f"That doesn't match: {m.word} {m.number} in the "
                                 f"{(m.room or '').replace('_', ' ')} actually finishes at {_clock(end)}, not "
                                 f"{_clock(said[0])}{then}. I have not changed anything{self.where()}; "
                                 "which time do you want?")
                return " ".join(self.said)
        for row in rows:
            # a time said anywhere in the sentence holds for its clauses until another is said
            when: datetime | None = None
            timed = False
            previous: Clause | None = None
            for i, c in enumerate(row):
                t, has = self._when(c, now, last, finish_of, problems)
                if c.anchor is not None:
                    anchor_end = finish_of(c.anchor[0]) or anchor_end
                after_n = _AFTER_N.search(c.text)
                if not has and after_n and c.after_prev is None and (anchor_end is not None or after_n[2]):
                    base = anchor_end if anchor_end is not None else (last or now)
                    t, has = base + timedelta(minutes=int(after_n[1] or after_n[2])), True
                if not has and not timed:   # "turn on fan 1 and set it to 30% 20 minutes from now"
                    later = next((x for x in row[i + 1:] if self._timed(x)), None)
                    if later is not None and not later.targets:
                        t, has = self._when(later, now, last, finish_of, problems)
                if has:
                    when, timed = t, True
                targets = c.targets or ([] if previous is None else previous.targets)
                if not c.targets and previous is not None and not self._has_setting(c.text) \
                        and not _PCT.search(c.text) and not _DEG.search(c.text):
                    previous = c if c.targets else previous
                    continue
                for m in targets:
                    device = self.device(m)
                    if device is None:
                        if c.targets:
                            self.say_missing(m)
                            problems.append("missing")
                        continue
                    text = c.text if self._has_setting(c.text) or _PCT.search(c.text) or _DEG.search(c.text) \
                        else (previous.text if previous else c.text)
                    sentence = next(t for st, t in reversed(sentences(self.text)) if st <= c.start)
                    calls = self.calls(device, text, sentence)
                    if calls:
                        plan.append((when, device, calls))
                        if when is not None:
                            last = when
                if c.targets:
                    previous = c
        plan = _merged(plan)
        if _TOGETHER.search(self.text) and not problems:
            plan = self.together(plan, finish_of, problems)
        for when, device, calls in plan:   # "start it at 6:14 PM, pause it when washer 1 finishes"
            starts = [w for w, dv, cs in plan if dv is device and w is not None
                      and any(c["args"].get("command.id") == "Start" for c in cs)]
            if when is not None and starts and when < min(starts) and any(
                    c["args"].get("command.id") in ("Pause", "Stop") for c in calls):
                self.said.append(f"That doesn't work: the pause falls at {_clock(when)}, before the "
                                 f"{_clock(min(starts))} start you asked for, so {device['device_id']} can't be "
                                 f"paused then. I have not changed anything{self.where()}; which time do you want?")
                problems.append("conflict")
                break
        if problems:
            return " ".join(self.said)
        for when, device, calls in plan:
            if when is None or when <= now:
                results = [self.run.tool(call["tool"], call["args"]) for call in calls]
                bad = [r["error"]["message"] for r in results if not r.get("ok")]
                self.said.append(f"{device['device_id']}: done." if not bad else f"{device['device_id']}: {bad[0]}")
            else:
                result = self.run.tool("schedule_workflow", {"start_time": when.strftime(TIME_FORMAT), "steps": calls})
                self.said.append(f"Scheduled {device['device_id']} at {when.strftime('%I:%M %p').lstrip('0')}."
                                 if result.get("ok") else f"Could not schedule {device['device_id']}.")
        return " ".join(self.said) or "I could not tell what you wanted done."

    def together(self, plan: list, finish_of: Any, problems: list[str]) -> list:
        """"Start dryer 1 so it finishes together with dishwasher 1": start it its cycle's length
        before the running one ends. The cycle's length is what the appliance shows once started
        (started, read, stopped and put back)."""
        running = {m.room and self.device(m) and self.device(m)["device_id"]: finish_of(m)  # type: ignore[index]
                   for m in self.found if self.device(m) is not None and finish_of(m) is not None}
        starts = [(w, dv, cs) for w, dv, cs in plan if dv["device_id"] not in running
                  and any(c["args"].get("command.id") in ("Start", "ChangeToMode") for c in cs)]
        if not running or not starts:
            return plan
        anchor_id, end = max(running.items(), key=lambda kv: kv[1])
        deadline = _DEADLINE.search(self.text)
        if deadline:
            by = self.clock_at((int(deadline[1]) % 12 + (12 if deadline[3].lower() == "p" else 0)) * 60
                               + int(deadline[2]), end)
            if end > by + timedelta(minutes=1):
                self.said.append(f"I can't get both done by {_clock(by)}: {anchor_id} is already running and "
                                 f"only finishes at {_clock(end)}, so the earliest both can be done is "
                                 f"{_clock(end)}. I have not changed anything{self.where()}.")
                problems.append("deadline")
                return plan
        out = []
        for when, device, calls in plan:
            if device["device_id"] in running:
                continue   # the appliance already running sets the time; it is not restarted
            if (when, device, calls) not in starts:
                out.append((when, device, calls))
                continue
            length = self.cycle_length(device, calls)
            begin = max(self.run.now, end - length) if length is not None else self.run.now
            out.append((None if begin <= self.run.now else begin, device, calls))
            if length is None or begin + length > end + timedelta(minutes=1):   # "ends in Stopped state"
                out.append((end, device, [self.stop_call(device)]))
        return out

    def stop_call(self, device: dict) -> dict:
        d = device["device_id"]
        if device["device_type"] != "robot_vacuum_cleaner":
            return A.command(d, "OperationalState", "Stop")
        modes = self.run.read(d, "RvcRunMode", "SupportedModes") or []
        idle = next((m["mode"] for m in modes if "idle" in m["label"].lower()), 0)
        return A.command(d, "RvcRunMode", "ChangeToMode", {"newMode": idle})

    def cycle_length(self, device: dict, calls: list[dict]) -> timedelta | None:
        d = device["device_id"]
        cluster = "RvcOperationalState" if device["device_type"] == "robot_vacuum_cleaner" else "OperationalState"
        was_on = self.run.read(d, "OnOff", "OnOff")
        for call in calls:
            self.run.tool(call["tool"], call["args"])
        seconds = self.run.read(d, cluster, "CountdownTime")
        stop = self.stop_call(device)
        self.run.tool(stop["tool"], stop["args"])
        if was_on is False:   # put the power back as it was
            self.run.tool("execute_command", {"device.id": d, "endpoint.id": 1, "cluster.id": "OnOff",
                                              "command.id": "Off", "args": {}})
        return timedelta(seconds=seconds) if isinstance(seconds, int) else None

    @staticmethod
    def _timed(c: Clause) -> bool:
        return c.anchor is not None or c.from_now is not None or c.after_prev is not None or c.clock is not None

    def where(self) -> str:
        rooms = list(dict.fromkeys(m.room.replace("_", " ") for m in self.found if m.room))
        return f" in the {' or the '.join(rooms)}" if rooms else ""

    def _when(self, c: Clause, now: datetime, last: datetime | None, finish_of: Any,
              problems: list[str]) -> tuple[datetime | None, bool]:
        if c.anchor is not None:
            mention, rel, minutes = c.anchor
            end = finish_of(mention)
            name = f"{mention.word} {mention.number} in the {(mention.room or '').replace('_', ' ')}"
            if end is None:
                self.said.append(f"There is a conflict: the {name} is not running, so it has no finish time.")
                problems.append("anchor")
                return None, True
            when = end - timedelta(minutes=minutes) if rel == "before" else end + timedelta(minutes=minutes)
            if c.clock is not None:
                said = self.clock_at(c.clock, when)
                if abs((said - when).total_seconds()) > 60:
                    self.said.append(f"That doesn't match: the {name} finishes at {_clock(end)}, so {minutes} minutes "
                                     f"{rel} that is {_clock(when)}, not {_clock(said)}. I have not changed anything"
                                     f"{self.where()}; which time do you want?")
                    problems.append("conflict")
            return when, True
        if c.from_now is not None:
            when = now + timedelta(minutes=c.from_now)
            if c.clock is not None:
                said = self.clock_at(c.clock, when)
                if abs((said - when).total_seconds()) > 60:
                    self.said.append(f"The times you gave conflict: it is {_clock(now)} now, so {c.from_now} minutes "
                                     f"from now is {_clock(when)}, not {_clock(said)}. I have not scheduled anything"
                                     f"{self.where()}; which time do you want?")
                    problems.append("conflict")
            return when, True
        if c.after_prev is not None:
            return (last or now) + timedelta(minutes=c.after_prev), True
        if c.clock is not None:
            return self.clock_at(c.clock, now), True
        if re.search(r"\bnow\b|\bright away\b|\bimmediately\b", c.text, re.IGNORECASE):
            return None, True
        return None, False


#: Device questions: (words, cluster, attribute, endpoint), the first that matches and reads.
_ASKS: tuple[tuple[str, str, str, int | None], ...] = (
    (r"product id", "BasicInformation", "ProductID", 0),
    (r"product name|model name", "BasicInformation", "ProductName", 0),
    (r"vendor id", "BasicInformation", "VendorID", 0),
    (r"vendor|manufacturer|brand|make", "BasicInformation", "VendorName", 0),
    (r"max\w* (?:brightness|level)", "LevelControl", "MaxLevel", None),
    (r"min\w* (?:brightness|level)", "LevelControl", "MinLevel", None),
    (r"dryness levels", "LaundryDryerControls", "SupportedDrynessLevels", None),
    (r"dryness", "LaundryDryerControls", "SelectedDrynessLevel", None),
    (r"spin speeds", "LaundryWasherControls", "SpinSpeeds", None),
    (r"rinses", "LaundryWasherControls", "NumberOfRinses", None),
    (r"safety", "WindowCovering", "SafetyStatus", None), (r"product type|kind of (?:blind|covering)", "WindowCovering",
                                                           "EndProductType", None),
    (r"fan mode sequence|fan modes|speed settings", "FanControl", "FanModeSequence", None),
    (r"remaining time|time left", "LevelControl", "RemainingTime", None),
    (r"frequency", "LevelControl", "CurrentFrequency", None),
    (r"phase", "OperationalState", "CurrentPhase", None),
    (r"lowest|minimum (?:temperature|reading)", "TemperatureMeasurement", "MinMeasuredValue", 2),
    (r"max\w* temperature", "TemperatureControl", "MaxTemperature", None),
    (r"cold|warm|temperature", "TemperatureMeasurement", "MeasuredValue", 2),
    (r"revision", "Identify", "ClusterRevision", None),
    (r"fan|speed|percent", "FanControl", "PercentCurrent", None),
    (r"\blevel|bright|dim", "LevelControl", "CurrentLevel", None),
    (r"\bon\b|\boff\b|powered|running", "OnOff", "OnOff", None),
)
_NAME = {"temperature": "temperature", "humidity": "humidity", "illuminance": "brightness", "pm10": "PM10 level"}


def _merged(plan: list) -> list:
    """One entry per device and time: its calls without repeats, power first and Start last."""
    out: dict[tuple[Any, str], tuple[Any, dict, list[dict]]] = {}
    for when, device, calls in plan:
        key = (when, device["device_id"])
        entry = out.setdefault(key, (when, device, []))
        entry[2].extend(c for c in calls if c not in entry[2])
    return [(w, d, sorted(cs, key=lambda c: _ORDER.get(c["args"].get("command.id"), 1))) for w, d, cs in out.values()]


def _value(states: dict, state: str) -> Any:
    from scenarios.simuhome.generate import natural
    try:
        return f"{natural(states, state):g}"
    except (KeyError, TypeError):
        return None


def _clock(t: datetime) -> str:
    return t.strftime("%I:%M %p").lstrip("0")
