"""SMH-Bench's judges: the replies no state check decides, TC7 answers (is the answer right?)
and TC3 clarifications (was the question the right one to ask?). As for SimuHome, two judges
with one interface (`answer`, `clarification`: (passed, error label)):

- `RuleJudge`, the default: TC7 by `judge_answer`'s rules below, TC3 by `judge_clarification`'s
  (that the question came before any change is the verifier's rule, for every judge).
- `LLMJudge`: any OpenAI-compatible model, SimuHome's LLM judge (scenarios.simuhome.judges:
  the same client, temperature 0, the majority of three A/B votes) asked with our own criteria.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Protocol

from chip.clusters.Objects import DoorLock

from scenarios.answers import Quantity, normalize, quantities, same_as_written
from scenarios.simuhome.judges import LLMJudge as _Voter
from scenarios.smh.tasks import HOME_TYPES, SmhTask
from twin.home import Home

_LockState = DoorLock.Enums.DlLockState
_RAW = re.compile(r"[{\[]\s*\"\w+\"\s*:")
_JSON = re.compile(r"[{\[][^{}\[\]]*[}\]]")   # an innermost object or list
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
#: A date or timestamp as machines write it ("2026-11-28T14:05:00Z"): when, never a reading.
_ISO_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?\b", re.I)
#: Doubt that takes a stated finding back ("but I can't be sure", "it could be something else").
_DOUBT = re.compile(r"\bnot (?:\S+ ){0,2}(?:sure|certain|confident|positive)\b|\bcan'?t be (?:sure|certain)\b|"
                    r"\bun(?:verified|confirmed|certain|sure)\b|\b(?:stale|outdated|out of date)\b|"
                    r"\bi (?:believe|suppose|reckon|assume|imagine|expect)\b|\bif i'?m not mistaken\b|"
                    r"\bas far as i (?:know|can tell)\b|\b(?:presumably|supposedly|likely)\b|\bshould be\b|"
                    r"\b(?:may|might|could) (?:\w+ )?(?:be|differ|vary)\b|"
                    r"\bprobably\b|\bi think\b|\bactually\b|\bit depends\b|"
                    r"\b(?:can'?t|cannot|couldn'?t|could not|unable to|wasn'?t able to) "
                    r"(?:guarantee|promise|confirm|verify)\b|"
                    r"\bgive or take\b|\bor so\b|"
                    # a second candidate offered beside the first: "X, or possibly Y", "either X or Y"
                    r"\b(?:possibly|perhaps|maybe)\b|\beither\b[^.!?]*\bor\b|"
                    # ... or a sentence that opens with "or", "one of those"
                    r"(?:^\s*|[.!?;]\s+)or\b|\bone of the (?:two|three|these|those)\b|"
                    # the writer disowns the finding: "don't count on it", "take it with a grain of salt"
                    r"\b(?:don'?t|do not) (?:hold me to|quote me|rely on|count on|take my word)|\bgrain of salt\b|"
                    # no reading behind it: "my best guess", "I don't have live access"
                    r"\bguess\b|\b(?:don'?t|do not) have (?:\w+ )?access\b|\b(?:can'?t|cannot) (?:reach|access)\b|"
                    # said without looking: "without checking, I'd say", "typically", "from memory"
                    r"\bwithout (?:checking|looking)\b|\b(?:didn'?t|did not|haven'?t|have not) (?:\w+ )?(?:look|check)|"
                    r"\bi'?d say\b|\bi would say\b|\b(?:typically|usually|normally)\b|\bfrom memory\b|"
                    r"\bif i (?:remember|recall)\b|\blast (?:time )?i (?:checked|looked)\b|\bestimate\b|\bassuming\b")
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
#: The words that say yes or no, as people write them.
_YES_NO = {"yes": "yes|yeah|yep|yup|affirmative", "no": "no|nope|nah|negative"}
#: Yes/no questions by how they end -> (the state that means yes, the states that mean no).
_STATES = ((r" on$", "on|lit", "off|dark|unlit"), (r" locked$", "locked", "unlocked|not locked"),
           (r"^is charging enabled on ", "enabled", "disabled|not enabled|switched off|off"),
           (r" charging right now$", "charging", "not charging|discharging|idle"))


class Judge(Protocol):
    name: str

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        ...

    def clarification(self, task: SmhTask, questions: list[str], home: Home | None = None) -> tuple[bool, str]:
        ...


def _names(home: Home) -> list[str]:
    names = [(spec.name or r).lower() for r, spec in home.rooms.items()]
    names += [home.device_info(d)["name"].lower() for d in home.devices.objects]
    return sorted(set(names), key=len, reverse=True)


#: The end of a sentence (not the dot of "e.g." or "i.e.").
_END = r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)\s+"


def _statements(answer: str) -> str:
    """The reply without its questions (an offer such as "could it be anything else?" claims nothing)."""
    return " ".join(p for p in re.split(_END, answer) if not p.rstrip().endswith("?"))


#: Nouns people name devices by, beside the last words of the home's own device names: those of
#: every SMH device type ("the kitchen dishwasher" in a home without one) and everyday ones.
_DEVICE_NOUNS = frozenset({t.split("_")[-1] for t in HOME_TYPES} - {"power", "evse", "storage"}) | frozenset(
    "lamp bulb light fan heater thermostat camera plug socket switch tv television speaker fridge ac vacuum "
    "charger blind blinds curtain curtains radiator kettle".split())
#: A bare noun a person uses for the home's: "the bedroom lamp" is its light.
_SAME_NOUN = {"lamp": "light", "bulb": "light", "television": "tv", "blind": "covering", "curtain": "covering",
              "fridge": "refrigerator", "ac": "conditioner", "vacuum": "cleaner"}
#: Words after a noun that make it a setting's name, not a device's ("fan speed", "light level").
_ATTRIBUTES = frozenset("speed speeds level levels mode modes setting settings".split())
#: Words that end a device phrase after a room's name ("the kitchen is ...", "the bedroom at 21 °C").
_STOP = frozenset("is are was has have had at in on of to and or with for the a an it its my your this that".split())
_DEVICE, _ROOM = "⟨d{}⟩", "⟨r{}⟩"   # a name in a marked clause
_MARK = re.compile(r"⟨([dr])(\d+)⟩")
#: "<device> is (currently) on", "<device>: it's off", "<device> reads off", "<device> state = locked".
_STATE = re.compile(r"⟨d(\d+)⟩(?:'s|(?:\s+(?:state|status))?(?:\s+(?:is|are|reads|shows|reports|looks)|\s*[:=→]))"
                    r"\s*(?:it(?:'s| is)\s+)?(?:(?:currently|now|still|already|switched|turned|right now)\s+)*"
                    r"(not\s+)?(on|off|lit|unlit|running(?!\s+(?:at|with)\b)|locked|unlocked)\b")
#: The state words a claim can be held against: word -> (cluster, attribute, the value that makes it true).
_ON, _OFF = ("OnOff", "OnOff", True), ("OnOff", "OnOff", False)
_LOCKED = ("DoorLock", "LockState", _LockState.kLocked)
_STATE_READS = {"on": _ON, "lit": _ON, "running": _ON, "off": _OFF, "unlit": _OFF,
                "locked": _LOCKED, "unlocked": ("DoorLock", "LockState", _LockState.kUnlocked)}
#: "not on" is off, "not locked" unlocked: the reading that makes the negated word false.
_NOT = {"on": _OFF, "lit": _OFF, "running": _OFF, "off": _ON, "unlit": _ON, "locked": _STATE_READS["unlocked"],
        "unlocked": _LOCKED}
#: A list under a state: "the ones on: <device>, <device>", "Lit right now:", "on = [...]" (what is listed must be so).
_LISTED = re.compile(r"\b(on|off|lit|unlit)\b[^:=⟨]{0,20}[:=]")
#: How a list opens: "Those are:", "They are the ...", "That's the ...", "namely".
_LIST_WORDS = r"(?:they are|those are|these are|that's|that is|namely)"
_LIST_OPENING = re.compile(rf":|^\W*{_LIST_WORDS}\b")
#: "... lights are on." before "Those are:" and a list: the state the list is of.
_PLURAL_STATE = re.compile(r"\b(?:are|were)\s+(?:currently\s+|now\s+|still\s+)?(on|off|lit|unlit)\b")
_SET_TO = re.compile(r"⟨d(\d+)⟩(?:'s|\s+is|\s*[:→])?\s*(?:it(?:'s| is)\s+)?(?:currently\s+|now\s+)?set to\s")
#: "there" as a place ("humidity there is 45 %", "it's 45 % there"), the room named just before.
_THERE = re.compile(r"\bthere\b(?!\s+(?:is|are|was|were|'s)\b)|\b(?:humidity|temperature)\s+there\b|\bin that room\b")


#: After a number: a comparison with a room ("°C warmer than the kitchen", "points more humid than ...").
_COMPARED = re.compile(r"\s*(?:°\s*c\b|℃|degrees?(?: celsius)?|c\b|%|percent|points?)?\s*"
                       r"(?P<more>warmer|hotter|higher|more humid|cooler|colder|lower|drier)\s+than\s+(?:the\s+)?"
                       r"⟨r(?P<room>\d+)⟩")


#: A room, then what ties a number to it: "⟨room⟩ is at ", "⟨room⟩: ", "⟨room⟩ reads ".
_OF_ROOM = re.compile(r"⟨r\d+⟩(?:'s)?\s*(?:(?:is|reads|sits|currently|now|at|temperature|humidity)\s+|[:=→]\s*)*$")
#: "°F" after a number: a conversion, given to the precision written in °F.
_FAHRENHEIT = re.compile(r"\s*(?:°\s*f\b|℉|deg(?:rees?)?\.? ?f(?:ahrenheit)?\b|fahrenheit)", re.I)


def _same(q: Quantity, true: float, tolerance: float, text: str) -> bool:
    """`same_as_written`, with a reading in °F held to the precision it is written in ("70 °F" for 21.3 °C)."""
    if _FAHRENHEIT.match(text, q.end):
        written = text[q.start:q.end]
        decimals = len(written.split(".")[1]) if "." in written else 0
        tolerance = max(tolerance, 0.5 * 10 ** -decimals * 5 / 9 + 0.01)
    # a person rounds halves up ("about 23" for 22.5), where Python's round goes to the even digit
    half_up = math.floor(true * 10 ** q.decimals + 0.5 + 1e-9) / 10 ** q.decimals
    return same_as_written(q, true, tolerance) or (abs(true) >= 1 and abs(half_up - q.value) < 1e-9)


@dataclass
class _Claims:
    #: True: something claimed is false; False: all checked claims hold; None: nothing to check.
    false: bool | None
    #: The clause read (numbers in digits) with each name as a token, and the rooms behind the tokens.
    text: str
    rooms: list[str]
    #: Where the readings checked against the home start in `text`, and the rooms they were of.
    spent: set[int]
    carried: set[str]

    def _false(self) -> _Claims:
        self.false = True
        return self


class _Home:
    """What a reply can claim about the start home, read only when claimed."""

    def __init__(self, home: Home):
        from bridge.twin_backend import TwinBackend
        self.home, self.backend = home, TwinBackend(home)
        self.rooms = {(spec.name or r).lower(): r for r, spec in home.rooms.items()}
        self.devices = {home.device_info(d)["name"].lower(): d for d in home.devices.objects}
        self.nouns = _DEVICE_NOUNS | {re.sub(r" \d+$", "", n).split()[-1] for n in self.devices}
        #: room -> the names its devices go by after the room's name ("dimmable light")
        self.kinds: dict[str, set[str]] = {}
        for name, d in self.devices.items():
            room = home.device_info(d)["room"]
            room_name = (home.rooms[room].name or room).lower()
            rest = re.sub(r" \d+$", "", name[len(room_name):].strip() if name.startswith(room_name) else name)
            self.kinds.setdefault(room, set()).update({rest, rest.split()[-1]})

    def read(self, device: str, cluster: str, attribute: str) -> Any:
        try:
            return self.backend.read_attribute(device, None, cluster, attribute)["value"]
        except Exception:   # the device has no such attribute: nothing to hold the claim against
            return None

    def mark(self, clause: str) -> tuple[str, list[str], list[str]]:
        """The clause with each device and room name as a token, and the ids the tokens stand for."""
        devices: list[str] = []
        rooms: list[str] = []
        text = f" {clause} "
        for names, ids, mark in ((self.devices, devices, _DEVICE), (self.rooms, rooms, _ROOM)):
            for name in sorted(names, key=len, reverse=True):
                pattern = re.compile(rf"(?<![\w/-]){re.escape(name)}(?![\w/-])")
                while found := pattern.search(text):
                    ids.append(names[name])
                    text = text[:found.start()] + mark.format(len(ids) - 1) + text[found.end():]
        return text, devices, rooms

    def false_claim(self, clause: str, asked: frozenset[float] = frozenset()) -> bool | None:
        """Does the clause claim something the home does not show (a device it lacks, a device
        on that is off, a room 3 °C warmer than it is)? None when it claims nothing we can check.
        Numbers of the question (`asked`) and after "than"/"above" are not readings."""
        return self.claims(clause, asked).false

    def claims(self, clause: str, asked: frozenset[float] = frozenset(), before: _Claims | None = None) -> _Claims:
        """The clause's claims checked against the home (see `false_claim`); `before`, the previous
        clause's, gives "there" its room and "Those are:" its state."""
        text, devices, rooms = self.mark(normalize(clause))
        out = _Claims(None, text, rooms, set(), set())
        claimed = False
        for m in _MARK.finditer(text):   # "the bedroom ceiling fan": a device the room does not have
            after = re.match(r"(?:'s)?((?:[ \t]+[a-z][\w/-]*){1,4})", text[m.end():])
            if m[1] != "r" or after is None:
                continue
            phrase: list[str] = []
            words = after[1].split()
            for n, word in enumerate(words[:3]):
                if word in _STOP:
                    break
                phrase.append(word)
                if words[n + 1:n + 2] and words[n + 1] in _ATTRIBUTES:   # "the bedroom fan speed": a setting
                    break
                if word in self.nouns or word.rstrip("s") in self.nouns:
                    kinds, said = self.kinds.get(rooms[int(m[2])], set()), " ".join(phrase).rstrip("s")
                    if said not in kinds and _SAME_NOUN.get(said) not in kinds:
                        return out._false()
                    claimed = True
                    break
        for m in _STATE.finditer(text):
            cluster, attribute, true = (_NOT if m[2] else _STATE_READS)[m[3]]
            read = self.read(devices[int(m[1])], cluster, attribute)
            if read is not None:
                claimed = True
                if (bool(read) if isinstance(true, bool) else read) != true:
                    return out._false()
        listed = _LISTED.search(text)
        heading: tuple[str, int] | None = (listed[1], listed.end()) if listed else None
        if heading is None and before is not None and (plural := _PLURAL_STATE.search(before.text)) \
                and (opening := _LIST_OPENING.search(text)):   # "13 lights are on. Those are: ..."
            heading = (plural[1], opening.end())
        items = re.split(r"[,;()]|\band\b", text)
        named = sum(bool(re.fullmatch(rf"\s*(?:{_LIST_WORDS}\s+)?(?:the\s+)?⟨d\d+⟩\s*[.!]?\s*", i)) for i in items)
        if named >= 2 or (named and re.match(rf"\W*{_LIST_WORDS}\b", text)):
            # an enumeration of the home's devices names only devices of the home ("..., the floor lamp")
            for item in items:
                if not _MARK.search(item) and any(w.rstrip("s") in self.nouns for w in re.findall(r"[a-z]+", item)):
                    return out._false()
        if heading is not None:   # each item must be a device of the home ("the porch light" where there is no porch)
            state, items = heading[0], text[heading[1]:]
            for item in re.split(r",|\band\b", items):
                if not _MARK.search(item) and any(w.rstrip("s") in self.nouns for w in re.findall(r"[a-z]+", item)):
                    return out._false()
            for token in _MARK.finditer(items):
                on = self.read(devices[int(token[2])], "OnOff", "OnOff") if token[1] == "d" else None
                if on is not None:
                    claimed = True
                    if bool(on) != (state in ("on", "lit")):
                        return out._false()
        # the question's numbers are no readings, unless said of a room ("the kitchen is at 23.0 degrees")
        said = [q for q in quantities(text) if (q.value not in asked or _OF_ROOM.search(text[:q.start]))
                and not re.search(r"\b(?:than|above|over|below|under)\s*$", text[:q.start])]
        for m in _SET_TO.finditer(text):   # a temperature setting: either setpoint of the device's thermostat
            value = next((q for q in said if q.start >= m.end()), None)
            setpoints = [v / 100 for v in (self.read(devices[int(m[1])], "Thermostat", f"Occupied{kind}Setpoint")
                                           for kind in ("Heating", "Cooling")) if v is not None]
            if setpoints and value is not None and value.unit in ("degC", "degree"):
                claimed = True
                out.spent.add(value.start)
                if not any(_same(value, v, 0.0, text) for v in setpoints):
                    return out._false()
        tokens = list(_MARK.finditer(text))
        for q in said:   # "1 °C warmer than the kitchen": the difference of two rooms' readings
            compared = _COMPARED.match(text, q.end)
            first = [t for t in tokens if t.end() <= q.start and t[1] == "r"][-1:]
            if compared is None:
                continue
            out.spent.add(q.start)
            if first:
                claimed = True
                a, b = (self.home.rooms[rooms[int(t)]] for t in (first[0][2], compared["room"]))
                humid = compared["more"] in ("more humid", "drier") or q.unit == "percent"
                gap = (a.humidity - b.humidity) if humid else (a.temperature - b.temperature)
                if compared["more"] in ("cooler", "colder", "lower", "drier"):
                    gap = -gap
                if not _same(q, round(gap, 1), 0.25, text):
                    return out._false()
        there = before.rooms[-1:] if before is not None and not tokens and _THERE.search(text) else []
        offered = text.rstrip().endswith("?")   # "cool the bedroom to 20 or 22 °C?" offers values, claims none
        for q in said:   # a room's reading: the room named nearest before it (or the first after, or "there")
            if q.unit not in ("degC", "degree", "percent") or not (tokens or there) or q.start in out.spent or offered:
                continue
            near = [t for t in tokens if t.end() <= q.start][-1:] or tokens[:1]
            if near and near[0][1] != "r":
                continue
            room = self.home.rooms[rooms[int(near[0][2])] if near else there[0]]
            claimed = True
            out.spent.add(q.start)
            out.carried.add(room.id)
            if not _same(q, round(room.humidity if q.unit == "percent" else room.temperature, 1), 0.15, text):
                return out._false()
        out.false = False if claimed else None
        return out


#: A Markdown table: its header row (possibly after a sentence on the same line), the rule, the rows.
_TABLE = re.compile(r"(?P<head>\|[^\n]*\|)[ \t]*\n[ \t]*\|?[ \t]*:?-{3,}[-|: \t]*\n"
                    r"(?P<rows>(?:[ \t]*\|[^\n]*(?:\n|$))+)")
#: A unit a table's column header gives its cells ("°C", "humidity (%)").
_HEAD_UNIT = re.compile(r"°\s*[cf]\b|℃|℉|%|\b(?:percent|celsius|fahrenheit)\b", re.I)
#: "70/100": a value out of a hundred, a percentage.
_OUT_OF_100 = re.compile(r"\b(\d+(?:\.\d+)?)\s*/\s*100\b")


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _untable(text: str) -> str:
    """Each Markdown table row as a sentence, its cells followed by the unit their column's header
    names ("| bedroom | 21.3 |" under "| room | °C |" reads "bedroom 21.3 °C.")."""
    def sentences(m: re.Match[str]) -> str:
        units = [u[0] if (u := _HEAD_UNIT.search(h)) else "" for h in _cells(m["head"])]
        rows = [" ".join(f"{c} {units[n] if n < len(units) else ''}".strip() for n, c in enumerate(_cells(r)))
                for r in m["rows"].splitlines() if r.strip()]
        return "\n" + "\n".join(f"{r}." for r in rows) + "\n"
    return _TABLE.sub(sentences, text)


def _clauses(text: str) -> list[str]:
    # a bulleted list stays with the line that introduces it ("Lit right now:" and its items)
    text = re.sub(r"\s*\n\s*[*•-]\s+", ", ", text)
    return [c for c in re.split(rf"{_END}|\n+|;\s*", text) if c.strip()]


def judge_answer(task: SmhTask, answer: str | None, home: Home) -> tuple[bool, str]:
    """The rule judge for TC7 replies: (passed, why not). A reply must state the expected value
    and nothing that contradicts it, and no doubt that takes it back ("not sure", "could be",
    "probably", "I think", "actually", "can't guarantee"), no second candidate ("or possibly",
    "either ... or") and no guess ("my best guess", "I don't have access"); raw tool output (JSON)
    is not an answer. Each clause's claims about the home (a room's temperature or humidity, a
    device on or off, a setpoint, a device of a room) must hold; a true one beside the answer is
    a helpful extra and not read as a second answer.
    - yes/no: exactly one of the two words, or without either, "it is <state>" for the state the
      question asks about ("Is the lamp on?": "it is on" / "it is off");
    - a number: at least one number (names of rooms and devices and the numbers of the question
      left out; number words count, "none" is 0; °F is read as °C) and every number equal to it,
      or to it rounded to the decimals written ("about 23 degrees" for 23.4; ±0.15 for decimals);
    - a room: its name and no other room's."""
    assert task.answer is not None
    if not answer or not answer.strip():
        return False, "missing_response"
    if _RAW.search(answer):   # tool output quoted beside an answer is read past; instead of one, it fails
        rest = answer
        while (shorter := _JSON.sub(" ", rest)) != rest:
            rest = shorter
        if _RAW.search(rest) or not re.search(r"[A-Za-z]{2}", rest):
            return False, "raw_output"
        answer = rest
    answer = _OUT_OF_100.sub(r"\1 %", _untable(answer))
    answer = re.sub(r"\(([^()]*)\)", lambda m: "(" + m[1].replace(";", ",") + ")", answer)   # "(a; b)" is one list
    if _NUMBERED_FIRST.search(answer) and _NUMBERED_SECOND.search(answer):   # a numbered list: "1." is no reading
        answer = _NUMBERED.sub("- ", answer)
    statements = _ISO_TIME.sub(" ", _statements(answer).lower())
    if _DOUBT.search(f" {statements} "):
        return False, "wrong_answer"
    kind, value = task.answer["kind"], task.answer["value"]
    tolerance = 0.15 if isinstance(value, float) else 0.0
    facts = _Home(home)
    asked = frozenset(float(n) for n in _NUMBER.findall(task.query))
    claims: list[_Claims] = []
    for clause in _clauses(statements):
        claims.append(facts.claims(clause, asked, claims[-1] if claims else None))
    if any(c.false for c in claims):   # a false fact beside the answer misleads as much as a wrong answer
        return False, "wrong_answer"
    if kind == "yesno":
        text = f" {statements} "
        said = {w for w, words in _YES_NO.items() if re.search(rf"\b(?:{words})\b", text)}
        if not said:
            said = _state_said(task.query, text, home)
        return (said == {"yes" if value else "no"}), "wrong_answer"
    # a true reading beside the answer (another room's temperature) is not a second answer
    if kind == "room":
        named = {r for c in claims for r in c.rooms if r == value or r not in c.carried}
        return named == {value}, "wrong_answer"
    count = task.query.lower().startswith("how many")
    said = [(q, c.text) for c in claims for q in quantities(c.text)
            if ((q.value not in asked and q.start not in c.spent) or _same(q, float(value), tolerance, c.text))
            # a count has no unit (a temperature beside it is a reading), and "light 2" is a name
            and not (count and q.unit not in (None, "")) and not (q.unit is None and _named(c.text[:q.start], facts))]
    if not said:   # "none", "three", "no lights ... none of them"
        # "no" is a count only of what was asked about ("no lights", not "no problem")
        nouns = {w.rstrip("s") for w in re.findall(r"[a-z]+", task.query.lower())
                 if w not in _STOP} - {"no", "none", "how", "many"}
        words = {_WORDS.index(w) if w in _WORDS else 0
                 for c in claims for m in _COUNT_WORD.finditer(c.text) for w in [m[1] or m[2]]
                 if w in _WORDS or w == "none"
                 or {x.rstrip("s") for x in re.findall(r"[a-z]+", c.text[m.end():m.end() + 20])[:2]} & nouns}
        if words:
            return words == {value}, "wrong_answer"
    ok = bool(said) and all(_same(q, float(value), tolerance, text) for q, text in said)
    return ok, "wrong_answer"


#: A count in words; not the pronoun "one" ("that one", "no one", "one of them").
_COUNT_WORD = re.compile(r"\b(none|no|not a single|not one|" + "|".join(w for w in _WORDS if w != "one") + r")\b(?!-)|"
                         r"(?<!that )(?<!this )(?<!which )(?<!any )(?<!no )(?<!the )(?<!every )\b(one)\b(?! of\b)(?!-)")


#: A numbered list's markers: "1. the oven", "2) the fridge" (a list from 1 on, at least two lines).
_NUMBERED_FIRST, _NUMBERED_SECOND = re.compile(r"(?m)^\s*1[.)]\s+\S"), re.compile(r"(?m)^\s*2[.)]\s+\S")
_NUMBERED = re.compile(r"(?m)^[ \t]*\d{1,2}[.)][ \t]+")


def _named(before: str, facts: _Home) -> bool:
    """Does a number that follows `before` index a device's name ("the fridge 2", "light 2")?"""
    last = re.search(r"([a-z]+)\s*$", before)
    return last is not None and last[1].rstrip("s") in facts.nouns


def _state_said(question: str, text: str, home: Home) -> set[str]:
    """{"yes"} / {"no"} when the reply says "it is <state>" of the state a yes/no question asks about."""
    q = question.lower().rstrip("?").strip()
    for ending, yes, no in _STATES:
        if re.search(ending, q):
            # "it is off", "the lamp's off", "<device> state = OFF", "Status: OFF" (not "everything is on")
            device = re.escape(re.sub(rf"^(?:is (?:charging enabled on )?the )|{ending}", "", q))
            subject = rf"(?:\bit|\bthe [\w /-]+?|\b{device}|(?:\b[\w /-]+? )?\b(?:state|status)|\bcharging)"
            now = r"(?: currently| now| still| right now| switched| turned)?"
            be = r"(?:'s| is| reads| reports| shows|\s*[=:→])"
            if re.search(rf"{subject}{be}{now} (?:{no})\b|{subject}(?:'s not| is not| isn't){now} (?:{yes})\b|"
                         rf"^\W*(?:{no})\W*$", text):
                return {"no"}
            if re.search(rf"{subject}{be}{now} (?:{yes})\b|^\W*(?:{yes})\W*$", text):
                return {"yes"}
    return set()


def _request_places(task: SmhTask, home: Home) -> tuple[set[str], dict[str, str], list[tuple[str, str]]]:
    """(the rooms the request names, device name -> room, room names longest first)."""
    rooms = sorted((((spec.name or r).lower(), r) for r, spec in home.rooms.items()), key=lambda x: -len(x[0]))
    devices = {home.device_info(d)["name"].lower(): home.device_info(d)["room"] for d in home.devices.objects}
    query, named = f" {task.query.lower()} ", set()
    for name, room in rooms:
        if re.search(rf"\b{re.escape(name)}\b", query):
            named.add(room)
            query = re.sub(rf"\b{re.escape(name)}\b", " ", query)
    return named, devices, rooms


#: A label before a sentence: "Final question:", "Next step:".
_LABEL = r"(?:[a-z][a-z ]{0,24}:\s*)?"
_OPEN = re.compile(rf"^\W*{_LABEL}(?:sure\W+)?(?:what|which|how)\b.*"
                   r"\b(?:should|would you like|do you want|change|adjust)\b")
#: An ask without a question mark: "Just let me know the brightness you'd like.", "Pick a fan speed:",
#: or a question in lower-case chat that drops its mark ("what brightness do you want").
_ASK = re.compile(r"\b(?:let me know|tell me)\s+(?:what|which|how|the|your|a)\b|"
                  r"\b(?:pick|choose|select|specify)\s+(?:a|an|the|your|one)\b|^\W*(?:what|which|how)\b")
#: A question that leaves the value to the user (not "shall I change the fan speed?"): a wh-word,
#: choices, "brightness = ?", or a question with no verb or subject, only the setting ("Target brightness?").
_OPEN_VALUE = re.compile(r"\b(?:what|which|how)\b|\bor\b|\blet me know\b|\btell me\b|=\s*\?|"
                         r"\b(?:specify|pick|choose|select|desired|preferred)\b")
#: What makes a question one for yes or no: an auxiliary or a pronoun anywhere ("Just to confirm,
#: you want ...?"), or the verb of the change at its start ("Change the brightness?").
_YES_NO_FORM = re.compile(r"\b(?:shall|should|do|does|did|can|could|would|will|is|are|may|might|want|you|i|we|me|"
                          rf"confirm|ok|okay)\b|^\W*{_LABEL}(?:so\W+)?(?:change|adjust|set|turn|switch|increase|"
                          r"decrease|raise|lower|dim|go|proceed)\b")


#: A change said to be made already: acting instead of asking.
_DONE = re.compile(r"\bi(?:'ve| have)\s+(?!not\b|never\b)(?:\w+\s+){0,3}?(?:turned|switched|set|changed|adjusted|"
                   r"updated|dimmed|brightened|raised|lowered|started|stopped|opened|closed|locked|unlocked)\b|"
                   r"\bi (?:just |already )?(?:turned|switched|changed|adjusted|dimmed|brightened|started)\b")


def _sentences(message: str) -> list[str]:
    return [p.strip() for p in re.split(rf"{_END}|\n+", message) if p.strip()]


def judge_clarification(task: SmhTask, questions: list[str], home: Home | None) -> tuple[bool, str]:
    """The rule judge for TC3: (passed, why not). Some message must ask (a sentence ending in "?",
    or "let me know ..."/"tell me ...") about what the request leaves open: a missing setting
    (slot_missing) by a question that leaves its value to the user and names one of its words
    ("which brightness?", not "shall I change the brightness?"); a complaint or a scene by naming
    the request's room, one of its devices or a device the user means, or by asking openly what
    to change ("which devices should change, and how?"), and nothing elsewhere in the same
    message (a list of the home's devices asks nothing). Nothing said may be false of the home:
    a device it does not have, a device "on" that is off. Without the home (no names to read)
    any question counts."""
    asked = [q.strip().lower() for q in questions
             if any(p.endswith("?") or _ASK.search(p.lower()) for p in _sentences(q))]
    if not asked:
        return False, "clarification_missing"
    if any(_DONE.search(p.lower()) for q in questions for p in _sentences(q) if not p.endswith("?")):
        return False, "clarification_inappropriate"
    if home is not None:
        facts = _Home(home)
        asked_for = frozenset(float(n) for n in _NUMBER.findall(task.query))
        if any(facts.false_claim(c, asked_for) for q in questions for c in _clauses(q.lower())):
            return False, "clarification_inappropriate"
    slots = ((task.user or {}).get("slots") or {}).get("value")
    if slots:   # device names out first: "colour" in "the colour light" asks for nothing
        names = _names(home) if home is not None else []
        # each ask with the sentence before it ("I need one detail: the brightness. What should it be?")
        bare = [(ps[n], " ".join(ps[max(n - 1, 0):n + 1]))
                for q in asked for ps in [[functools.reduce(lambda q, n: q.replace(n, " "), names, p)
                                           for p in _sentences(q)]]
                for n, p in enumerate(ps) if p.endswith("?") or _ASK.search(p)]
        ok = any((_OPEN_VALUE.search(q) and re.search(rf"\b{re.escape(word)}", said))
                 or (q.endswith("?") and not _YES_NO_FORM.search(q) and re.search(rf"\b{re.escape(word)}", q))
                 for q, said in bare for word in slots["keywords"])
        return ok, "" if ok else "clarification_inappropriate"
    if home is None:
        return True, ""
    here, devices, rooms = _request_places(task, home)
    targets = {home.device_info(d)["name"].lower() for d in task.targets}
    for question in asked:
        text, elsewhere, related = f" {question} ", False, False
        for name in sorted(devices, key=len, reverse=True):
            if re.search(rf"\b{re.escape(name)}\b", text):
                related |= devices[name] in here or name in targets
                elsewhere |= devices[name] not in here and name not in targets
                text = re.sub(rf"\b{re.escape(name)}\b", " ", text)
        for name, room in rooms:
            if re.search(rf"\b{re.escape(name)}\b", text):
                related |= room in here
                elsewhere |= room not in here
                text = re.sub(rf"\b{re.escape(name)}\b", " ", text)
        if not elsewhere and (related or any(_OPEN.search(s) for s in _sentences(question))):
            return True, ""
    return False, "clarification_inappropriate"


class RuleJudge:
    name = "rule"

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        return judge_answer(task, reply, home)

    def clarification(self, task: SmhTask, questions: list[str], home: Home | None = None) -> tuple[bool, str]:
        return judge_clarification(task, questions, home)


_HEAD = ("You grade a smart-home assistant's reply to one user request. Reply with exactly one "
         "character: A if it passes, B if it fails. Nothing else.")
ANSWER_CRITERIA = ("The user asked about the current state of their home. You are given the question, the "
                   "correct answer (computed from the home's state) and the assistant's reply. Pass only if "
                   "the reply states the correct answer (numbers may be rounded to the question's precision "
                   "or converted to other units) and says nothing that contradicts it. Fail an empty reply, "
                   "raw tool output instead of an answer, or a reply that hedges between answers.")
CLARIFY_CRITERIA = ("The user's request leaves open what exactly they want (a complaint, a scene, or a missing "
                    "setting). You are given the request, what the user actually wants (hidden from the "
                    "assistant) and the questions the assistant asked the user before acting. Pass only if the "
                    "questions ask about what the request leaves open, so that the user's answer would tell "
                    "the assistant what to do. Fail if nothing was asked, or the questions are unrelated, or "
                    "only ask for confirmation of a guess the request gives no ground for.")


class LLMJudge:
    """An OpenAI-compatible model judging TC7 answers and TC3 clarifications."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 votes: int = 3, client: Any = None):
        self.voter = _Voter(model, base_url=base_url, api_key=api_key, votes=votes, client=client)
        self.name = f"llm:{model}"

    def _ask(self, criteria: str, user: str) -> tuple[bool, str]:
        passed, letters = self.voter.vote([{"role": "system", "content": f"{_HEAD}\n\n{criteria}"},
                                           {"role": "user", "content": user + "\n\nYour decision: A or B"}])
        return passed, "" if passed else f"judge_{''.join(letters)}"

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        assert task.answer is not None
        ok, why = self._ask(ANSWER_CRITERIA, f"Question:\n{task.query}\n\nCorrect answer:\n"
                            f"{json.dumps(task.answer['value'], ensure_ascii=False)}\n\nAssistant's reply:\n{reply}")
        return ok, "" if ok else "wrong_answer"

    def clarification(self, task: SmhTask, questions: list[str], home: Home | None = None) -> tuple[bool, str]:
        wanted = (task.user or {}).get("goal", "")
        asked = "\n".join(f"- {q}" for q in questions) or "(none)"
        ok, _ = self._ask(CLARIFY_CRITERIA, f"Request:\n{task.query}\n\nWhat the user actually wants:\n{wanted}\n\n"
                          f"Questions the assistant asked:\n{asked}")
        return ok, "" if ok else "clarification_inappropriate"


RULE_JUDGE = RuleJudge()


def make_judge(spec: str, base_url: str | None = None, api_key: str | None = None) -> Judge:
    """`rule` or `openai:MODEL` (base URL and key as for agents)."""
    if spec == "rule":
        return RULE_JUDGE
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        import os
        return LLMJudge(spec[len("openai:"):], base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                        api_key=api_key or os.environ.get("OPENAI_API_KEY"))
    raise ValueError(f"unknown judge {spec!r}; accepted: rule, openai:MODEL")
