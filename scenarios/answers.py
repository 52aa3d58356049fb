"""Reading an answer as a person writes it: number words, clock times, values with units.

The judges (scenarios/simuhome/judges.py) compare what an answer claims with the episode and the tool
history; this module only reads. Number words become digits with `text2num` ("two thirty
three PM" -> "2 33 PM"), clock times are found by `dateparser` (against a fixed base, never
the wall clock), and °F or kelvin are converted with `pint`. What those libraries leave to
the writer's habit is normalised first: "6 14 PM" (a dropped colon), "quarter past six".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

#: Minutes in a day; clock times compare on the circle.
DAY = 24 * 60
_BASE = datetime(2000, 1, 1)  # dateparser's relative base: fixed, so reading is deterministic
_SETTINGS = {"RELATIVE_BASE": _BASE, "RETURN_TIME_AS_PERIOD": True, "PREFER_DATES_FROM": "current_period"}
_MERIDIEM = r"(?:[ap]\.?\s?m\b\.?)"
_LATER = r"(?P<later>\s+in the (?:afternoon|evening)|\s+at night)"  # "6:15 in the evening"
_DROPPED_COLON = re.compile(rf"\b(\d{{1,2}})[ .h](\d{{2}})\s*({_MERIDIEM}|in the (?:morning|afternoon|evening)\b|"
                            r"at night\b)", re.IGNORECASE)
_H_CLOCK = re.compile(r"\b([01]\d|2[0-3])h([0-5]\d)\b")   # "20h19", as much of Europe writes it ("1h30" is a duration)
#: The 24-hour clock as the military and timetables say it: "2008 hrs", "1737h", "0915 hours".
_HOURS_CLOCK = re.compile(r"\b([01]\d|2[0-3])([0-5]\d) ?(?:hrs|hours|h)\b", re.IGNORECASE)
#: Halves and quarters after a number: "twenty-one and a half", "21½".
_FRACTION = re.compile(r"\b(\d+)(?: and (?:a |one )?(half|quarter|three quarters)\b|\s?([½¼¾]))", re.IGNORECASE)
_FRACTIONS = {"half": ".5", "½": ".5", "quarter": ".25", "¼": ".25", "three quarters": ".75", "¾": ".75"}
_DIGIT_WORDS = {w: str(n) for n, w in enumerate("zero one two three four five six seven eight nine".split())}
_OH = re.compile(r"\b(\d{1,2}|one) oh (\d|one)\b", re.IGNORECASE)   # text2num leaves a lone "one"
_OCLOCK = re.compile(r"\b(\d{1,2}) o'?clock\b(?=\s*[ap]\.?\s?m\b)", re.IGNORECASE)
_QUARTERS = re.compile(r"\b(quarter|half) (past|after|to) (\d{1,2})\b", re.IGNORECASE)
#: "23 minutes to 6 pm", "20 past 5", "5 minutes before 6" (an hour, not a clock time, after it).
_MINUTES_TO = re.compile(r"\b([1-5]?\d) (?:(minutes?) )?(past|after|to|before) (\d{1,2})\b(?![:.]\d)", re.IGNORECASE)
#: Clock times said rather than written.
_SPOKEN = re.compile(r"\bnoon\b|\bmidnight\b|o'?clock|\d+ in the (?:morning|afternoon|evening)|\d+ at night",
                     re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?(?![\w]*:\d)")
_CLOCK_TEXT = re.compile(rf"\b\d{{1,2}}:\d\d(?::\d\d)?(?:\s*{_MERIDIEM}|{_LATER})?|\b\d{{1,2}}\s*{_MERIDIEM}",
                         re.IGNORECASE)
#: Unit words after a number -> a canonical unit.
_UNITS = [
    # "º" (the ordinal sign) is often typed for "°"
    (re.compile(r"^\s*(?:[°º]\s*c\b|[°º]c|℃|deg(?:rees?|s)?\.? ?c(?:elsius|entigrade)?\b|celsius|centigrade|"
                r"c\b(?=\s|[.,;)]|$))",
                re.I), "degC"),
    (re.compile(r"^\s*(?:[°º]\s*f\b|℉|deg(?:rees?|s)?\.? ?f(?:ahrenheit)?\b|fahrenheit|f\b(?=\s|[.,;)]|$))", re.I),
     "degF"),
    (re.compile(r"^\s*(?:kelvins?\b|k\b(?=\s|[.,;)]|$))", re.I), "kelvin"),
    (re.compile(r"^\s*(?:degrees?|deg\b|[°º])", re.I), "degree"),
    (re.compile(r"^\s*(?:%\s*rh|percent rh|% relative humidity|%|percent|per cent|pct\b)", re.I), "percent"),
    (re.compile(r"^\s*(?:lux|lx)\b", re.I), "lux"),
    (re.compile(r"^\s*(?:µg/m³|µg/m3|ug/m3|ug/m³|micrograms?(?: per cubic met(?:er|re))?|μg/m³|μg/m3)", re.I), "ugm3"),
    (re.compile(r"^\s*(?:min(?:ute)?s?)\b", re.I), "minute"),
    (re.compile(r"^\s*(?:s(?:ec(?:ond)?s?)?)\b", re.I), "second"),
    (re.compile(r"^\s*(?:h(?:ours?|rs?)?)\b", re.I), "hour"),
]


@dataclass(frozen=True)
class Quantity:
    value: float
    #: Decimals as written ("14" 0, "14.41" 2): a person rounds to what they write.
    decimals: int
    unit: str | None
    start: int
    end: int


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """Number words as digits and the habits the parsers miss written out."""
    from text_to_num import alpha2digit
    out = alpha2digit(text, "en")
    out = _OH.sub(lambda m: f"{_DIGIT_WORDS.get(m[1].lower(), m[1])}:0{_DIGIT_WORDS.get(m[2].lower(), m[2])}",
                  out)                                          # "8 oh 4 PM" (eight oh four)
    out = _OCLOCK.sub(lambda m: f"{m[1]}:00", out)              # "10 o'clock am"
    out = _H_CLOCK.sub(lambda m: f"{m[1]}:{m[2]}", out)
    out = _HOURS_CLOCK.sub(lambda m: f"{m[1]}:{m[2]}", out)
    out = _FRACTION.sub(lambda m: m[1] + _FRACTIONS[(m[2] or m[3]).lower()], out)
    out = re.sub(r"\bminus (?=\d)", "-", out, flags=re.IGNORECASE)
    out = _DROPPED_COLON.sub(lambda m: f"{m[1]}:{m[2]} {m[3]}", out)

    def quarter(m: re.Match[str]) -> str:
        hour, minutes = int(m[3]), 15 if m[1].lower() == "quarter" else 30
        if m[2].lower() == "to":
            hour, minutes = (hour - 1) % 12 or 12, 60 - minutes
        return f"{hour}:{minutes:02d}"
    out = _QUARTERS.sub(quarter, out)

    def minutes(m: re.Match[str]) -> str:
        if not m[2] and m[3].lower() not in ("past",):   # "10 to 6" may be a range
            return m.group()
        hour, later = int(m[4]), m[3].lower() in ("past", "after")
        if not later:
            hour = (hour - 1) % 12 or 12 if hour <= 12 else hour - 1
        return f"{hour}:{int(m[1]) if later else 60 - int(m[1]):02d}"
    return _MINUTES_TO.sub(minutes, out)


@lru_cache(maxsize=4096)
def clock_minutes(text: str) -> tuple[int, ...]:
    """Minutes since midnight of every clock time the text names (12- or 24-hour, in digits
    or words, with or without the colon, "noon", "six in the evening"), in order."""
    return tuple(readings[0] for readings in clock_readings(text))


@lru_cache(maxsize=4096)
def clock_readings(text: str) -> tuple[tuple[int, ...], ...]:
    """Each clock time of `clock_minutes` with every time of day it can mean: a time with no
    am/pm and an hour of 1-12 ("half past four", "11:15") is read both ways, as a listener would."""
    from dateparser import parse
    from dateparser.search import search_dates
    normal = normalize(text)
    found: list[tuple[int, tuple[int, ...]]] = []
    for m in _CLOCK_TEXT.finditer(normal):   # each written time on its own: the parser reads it whole
        d = parse(m.group().replace(m.group("later") or "\0", ""), languages=["en"], settings=_SETTINGS)
        if d is not None:
            later = 12 * 60 if m.group("later") and d.hour < 12 else 0
            minutes = d.hour * 60 + d.minute + later
            bare = not re.search(_MERIDIEM, m.group(), re.IGNORECASE) and not later and 1 <= d.hour <= 12
            found.append((m.start(), (minutes, (minutes + 12 * 60) % DAY) if bare else (minutes,)))
    if _SPOKEN.search(normal):                # times in words: let the parser find them
        for phrase, d in search_dates(normal, languages=["en"], settings=_SETTINGS) or []:
            if _SPOKEN.search(phrase) and not _CLOCK_TEXT.search(phrase):
                found.append((normal.find(phrase), (d.hour * 60 + d.minute,)))
    return tuple(readings for _, readings in sorted(found))


@lru_cache(maxsize=4096)
def quantities(text: str) -> tuple[Quantity, ...]:
    """Every number in the text (not part of a clock time or a name such as "PM10" or
    "light 2"), with its decimals and the unit written after it; °F and kelvin become °C."""
    normal = normalize(text)
    clocks = [m.span() for m in _CLOCK_TEXT.finditer(normal)]
    out = []
    for m in _NUMBER.finditer(normal):
        if any(a <= m.start() < b for a, b in clocks):
            continue
        raw = m.group().replace(",", ".")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        value = float(raw)
        rest = normal[m.end():m.end() + 40]
        unit = next((name for pattern, name in _UNITS if pattern.match(rest)), None)
        if unit in ("degF", "kelvin"):
            value, unit, decimals = _to_celsius(value, unit), "degC", max(decimals, 1)
        out.append(Quantity(value, decimals, unit, m.start(), m.end()))
    return tuple(out)


def _to_celsius(value: float, unit: str) -> float:
    registry = _registry()
    return float(registry.Quantity(value, getattr(registry, unit)).to(registry.degC).magnitude)


@lru_cache(maxsize=1)
def _registry():  # type: ignore[no-untyped-def]
    import pint
    return pint.UnitRegistry()


def same_as_written(said: Quantity, true: float, tolerance: float) -> bool:
    """Does `said` give `true`: within the tolerance, or `true` rounded to the decimals the
    writer used ("14 µg/m³" for 14.41, "22.3 °C" for 22.26)?"""
    # rounding to nothing ("0" for 0.01) is not a reading
    return abs(said.value - true) <= tolerance or (abs(true) >= 1 and round(true, said.decimals) == said.value)


def near(a: int, b: int, slack: int = 1) -> bool:
    d = abs(a - b) % DAY
    return min(d, DAY - d) <= slack
