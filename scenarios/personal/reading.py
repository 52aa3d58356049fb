"""Reading a PersonalHomeBench answer as a person does (scenarios/personal/evaluate.py scores with it).

One answer, one claim: an IG/CF answer passes when the claim it makes is the truth, written any
way a person writes it (a first name, "no one", "5:37 PM", "twenty-two", "72.5 °F"), and fails
when it names more than one candidate, takes the claim back ("or maybe", "I may be wrong"),
vouches for it with someone who does not live there, or only repeats the question. Extra
sentences (a true fact about a member, the value without the change named as the contrast)
are read as such, not as second answers. Numbers, times and units are read by scenarios/answers.py.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from scenarios.answers import clock_readings, quantities

#: Doubt that takes an answer (or a ranking, a plan) back.
DOUBT = re.compile(
    r"\bmaybe\b|\bperhaps\b|\bpossibly\b|\bprobably\b|"
    r"\bnot (?:sure|certain)\b|\bunsure\b|\b(?:may|might|could) (?:well )?(?:be|have been)\b|"
    r"\bmay not be right\b|\bon second thought\b|\bthen again\b|\bi think\b|\bi guess\b|\bi'?m guessing\b|"
    r"\bafter all\b|\bhardly matters\b|\bdoesn'?t (?:really )?matter\b|\bcould come first\b|\bunclear\b|"
    r"\bdon'?t run\b|\bleave everything as it is\b|\beither\b|\b(?:it'?s|it is|was) one of\b|\bone of:|"
    r"\bcan'?t be sure\b|"
    # The common ways of hedging in English, beyond the ones above.
    r"\bnot (?:entirely|completely|totally|quite|100 ?%|a hundred percent) (?:sure|certain)\b|\bi believe\b|"
    r"\b(?:could|might|may) be (?:wrong|mistaken|off)\b|\bif i (?:recall|remember)\b|\bdon'?t quote me\b|"
    r"\bgrain of salt\b|\bdouble[- ]check\b|\bbest guess\b|\bi suspect\b|\blikely\b|\bseems?\b|"
    r"\bas far as i (?:know|can tell)\b|\bunless i'?m (?:wrong|mistaken)\b|\bhard to (?:say|tell)\b|"
    r"\bno guarantee\b|\bi'?m not positive\b|\bor (?:so|thereabouts)\b|\bgive or take\b|\bor was it\b|"
    r"\bon reflection\b|\bscratch that\b|\bsecond[- ]guess",
    re.IGNORECASE)
#: Words that take a plan back: the plan is not to be run as given.
WITHDRAWN = re.compile(r"\bon second thought\b|\bdon'?t (?:run|use|apply) (?:it|this|the plan)\b|\bnot sure\b|"
                       r"\bleave everything as it is\b|\bmaybe (?:better|not|don'?t)\b|\bignore (?:this|the) plan\b|"
                       r"\bmay not be right\b|\bthen again\b", re.IGNORECASE)
#: Someone vouching for the answer: "Tobias, the lodger, told me so", "as Ana saw".
VOUCHER = re.compile(r"\b([A-Z][a-z]+)(?:,? (?:the|our|my|their|a) [a-z ]+?,?)? (?:told|saw|confirmed|said|says|"
                     r"mentioned|reported|noticed|heard|remembers|checked|noted|recalls|recalled|agrees|agreed|"
                     r"let me know|can confirm|will confirm|vouches|witnessed|swears)\b|"
                     r"\b(?i:according to|per|ask|as told by|confirmed by|seen by|reported by|witnessed by) "
                     r"([A-Z][a-z]+)\b")
NOBODY_WORDS = re.compile(r"\bnobody\b|\bno one\b|\bno-one\b|\bnone of (?:them|us)\b|\bnot anyone\b|\bno member\b",
                          re.IGNORECASE)
NOT_HOME = re.compile(r"\b(?:did not|didn'?t|never|did not actually) (?:come|get|arrive|return)|\bnot come home\b|"
                      r"\bstayed (?:out|away)\b|\bwasn'?t (?:at )?home\b|\bno (?:arrival|homecoming)\b", re.IGNORECASE)
#: The value without the change, named as the contrast ("(instead of 17 °C)", "from 22 °C to").
CONTRAST = re.compile(r"\(\s*(?:instead of|not|rather than|was|originally)[^)]*\)|"
                      r"\bfrom (?:(?!\bto\b)[^;]){1,40}?\bto\b|\binstead of [^.;,]+", re.IGNORECASE)
CONTRAST_SENTENCE = re.compile(r"^\s*(?:without the change|without that change|otherwise|originally|in reality|"
                               r"before the change|as it (?:actually )?happened)\b", re.IGNORECASE)
#: Raw tool output (a JSON object) is not an answer.
RAW = re.compile(r"[{\[]\s*\"\w+\"\s*:")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?\b")
#: A device feature as FR writes them: device.Cluster.Command (or Attribute).
FEATURE = re.compile(r"\b[a-z0-9_]+\.[A-Z][A-Za-z0-9]*\.[A-Za-z0-9]+\b")


def doubts(text: str) -> bool:
    return DOUBT.search(text) is not None


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;])\s+|\n+", text) if s.strip()]


def without_question(answer: str, question: str) -> str:
    """The answer with any copy of the question (or of its sentences) taken out."""
    out = answer
    for part in [question, *sentences(question)]:
        if len(part) > 20:
            out = re.sub(re.escape(part.strip()), " ", out, flags=re.IGNORECASE)
    return out


def invented_people(text: str, members: list[dict[str, Any]]) -> bool:
    """Does the answer vouch for itself with a person who is not a member of the household?"""
    known = {w.lower() for m in members for w in str(m.get("name", "")).split()}
    return any((m[1] or m[2]).lower() not in known | {"i", "it", "that", "this", "she", "he", "they", "who", "the"}
               for m in VOUCHER.finditer(text))


def _mentions(text: str, names: Iterable[tuple[str, str]]) -> set[str]:
    """Which keys of (phrase, key) the text names, longest phrases first (each span read once).
    A one-word name must be capitalised as written ("Dev", "Will" are also words)."""
    found: set[str] = set()
    for phrase, key in sorted(names, key=lambda p: -len(p[0])):
        pattern = rf"(?<![\w.]){re.escape(phrase)}(?![\w]|\.\d)"
        flags = 0 if phrase[:1].isupper() and " " not in phrase else re.IGNORECASE
        if re.search(pattern, text, flags):
            found.add(key)
            text = re.sub(pattern, " ", text, flags=flags)
    return found


def _people(members: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for m in members:
        name = str(m["name"])
        out += [(name, name), (name.split()[0], name)]
    return out


def _rooms(room_ids: Iterable[str], room_names: dict[str, str]) -> list[tuple[str, str]]:
    out = []
    for rid in room_ids:
        out += [(rid, rid), (rid.replace("_", " "), rid)]
        if room_names.get(rid):
            out.append((room_names[rid], rid))
    return out


def _claim_text(answer: str, question: str) -> str:
    """The sentences that answer: the question's copies, contrasts and dates taken out."""
    text = DATE.sub(" ", without_question(answer, question))
    kept = [CONTRAST.sub(" ", s) for s in sentences(text) if not CONTRAST_SENTENCE.search(s)]
    return " ".join(kept)


def answer_matches(truth: str, answer: str | None, question: str, members: list[dict[str, Any]],
                   rooms: dict[str, str] | None = None) -> bool:
    """Does an IG/CF answer give the truth (one of the set's answer kinds: a member's name,
    "nobody", a clock time, "did not come home", a temperature, an age, a room id) and only it?"""
    if not answer or not answer.strip() or doubts(answer) or RAW.search(answer) or invented_people(answer, members):
        return False
    text = _claim_text(answer, question)
    if not text.strip():
        return False
    rooms = rooms or {}
    people = _people(members)
    names = {name for name, _ in people}
    if truth in names or truth == "nobody":
        said = _mentions(text, people)
        nobody = NOBODY_WORDS.search(text) is not None
        if truth == "nobody":
            return nobody and not said
        # Only the sentence that first names someone answers; later ones may be about others.
        first = next((s for s in sentences(text) if _mentions(s, people) or NOBODY_WORDS.search(s)), "")
        return _mentions(first, people) == {truth} and not NOBODY_WORDS.search(first)
    if truth == "did not come home":
        return NOT_HOME.search(text) is not None and not clock_readings(text)
    if re.fullmatch(r"\d{1,2}:\d{2}", truth):
        want = int(truth[:2]) * 60 + int(truth[3:])
        first = next((s for s in sentences(text) if clock_readings(s)), "")
        said = clock_readings(first)
        return len(said) == 1 and want in said[0] and not NOT_HOME.search(text)
    number = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?: °C)?", truth)
    if number:
        want_value = float(number[1])
        first = next((s for s in sentences(text) if quantities(s)), "")
        said = [q for q in quantities(first) if q.unit != "percent"]
        if not said:
            return False
        nearest = "nearest degree" in question
        return all(round(q.value) == want_value if nearest else abs(q.value - want_value) < 0.06 for q in said)
    if truth in rooms:
        first = next((s for s in sentences(text) if _mentions(s, _rooms(rooms, rooms))), "")
        return _mentions(first, _rooms(rooms, rooms)) == {truth}
    # Anything else ("unknown"): the words themselves, alone.
    return re.sub(r"\W+", " ", text).strip().lower() == re.sub(r"\W+", " ", truth).strip().lower()


def choice(answer: str | None, options: list[str]) -> str | None:
    """The one option an MC answer picks: its letter ("B", "(B)", "Option B", "The answer is b"),
    its text, or both when they agree; None when it names several, they disagree, or it doubts."""
    if not answer or doubts(answer):
        return None
    text = answer.strip()
    # A capital letter alone ("°C" is a unit, "A day" an article).
    letters = set(re.findall(r"(?<![\w'°])([B-E]|A(?! (?!or\b|and\b|is\b)[a-z]{2,}))(?![\w'])", text))
    letters |= {m.upper() for m in re.findall(r"\b(?:option|answer(?: is)?|choice|letter)\s*:?\s*\(?([a-eA-E])\b",
                                              text, re.IGNORECASE)}
    if re.fullmatch(r"\W*([a-eA-E])\W*", text):
        letters.add(text.strip(" .()[]:").upper())
    rest = re.sub(r"(?<![\w'])\(?[A-Ea-e][).:](?=\s|$)", " ", text)
    named = {"ABCDE"[i] for i in [int(k) for k in _mentions(rest, [(o, str(i)) for i, o in enumerate(options)])]}
    picked = letters | named
    return picked.pop() if len(picked) == 1 else None


def ranking(answer: str | None, candidates: list[str]) -> list[str]:
    """The candidates in the order an FR answer ranks them; empty when it ranks none: it doubts
    its order, puts a made-up feature or several features first, or repeats the given order."""
    if not answer or doubts(answer):
        return []
    found = [m for m in FEATURE.finditer(answer)]
    if not found or found[0].group() not in candidates:
        return []
    ranks = list(re.finditer(r"(?m)^\s*(\d+)[.)]\s", answer))
    if len(ranks) >= 2 and ranks[0].group(1) == "1":
        top = [f for f in found if ranks[0].end() <= f.start() < ranks[1].start()]
        if len(top) > 1:
            return []   # a tie at the top: no single first choice
    order: list[str] = []
    for m in found:
        if m.group() in candidates and m.group() not in order:
            order.append(m.group())
    if len(candidates) > 2 and order == candidates:
        return []   # the candidates as given: no ranking made
    return order


def json_lists(answer: str) -> list[tuple[int, int, list[Any]]]:
    """The answer's top-level JSON lists (plans), in order: (start, end, value)."""
    import json
    found: list[tuple[int, int, list[Any]]] = []
    i = answer.find("[")
    while i != -1:
        try:
            value, end = json.JSONDecoder().raw_decode(answer[i:])
        except json.JSONDecodeError:
            i = answer.find("[", i + 1)
            continue
        found.append((i, i + end, value))
        i = answer.find("[", i + end)
    return found


def plans_in(answer: str) -> int:
    """How many top-level JSON lists (plans) the answer holds."""
    return len(json_lists(answer))


def prose_of(answer: str) -> str:
    """The answer's words outside its JSON (where a plan is withdrawn or doubted)."""
    out, i = [], 0
    for start, end, _ in json_lists(answer):
        out.append(answer[i:start])
        i = end
    out.append(answer[i:])
    return " ".join(out)
