"""Reading a PersonalHomeBench answer as a person does (scenarios/personal/evaluate.py scores with it).

One answer, one claim: an IG/CF answer passes when the claim it makes is the truth, written any
way a person writes it (a first name, "no one", "5:37 PM", "twenty-two", "72.5 °F"), and fails
when it names more than one candidate, takes the claim back ("or maybe", "I may be wrong"),
vouches for it with someone who does not live there, or only repeats the question. Extra
sentences (a true fact about a member, the value without the change named as the contrast)
are read as such, not as second answers. Numbers, times and units are read by scenarios/answers.py.
"""
from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable
from typing import Any

from scenarios.answers import Quantity, clock_readings, normalize, quantities

#: Doubt that takes an answer (or a ranking, a plan) back, by class: the writer's own doubt;
#: another answer offered beside it; indifference to the order or the choice.
DOUBT = re.compile(
    r"\b(?:maybe|perhaps)\b(?! (?:you|we|i can|i could|i'll)\b)|\bpossibly\b|\bprobably\b|"
    r"\bnot (?:sure|certain)\b|\bunsure\b|"
    r"\bmay not be right\b|\bon second thought\b|\bthen again\b|\bi think\b|\bi guess\b|\bi'?m guessing\b|"
    r"\bafter all\b|\bcould come first\b|\bunclear\b|"
    r"\bdon'?t run\b|\bleave everything as it is\b|\beither\b(?! way\b)|\b(?:it'?s|it is|was) one of\b|\bone of:|"
    r"\bcan'?t be sure\b|\b(?:can'?t|cannot|can not) (?:rule out|exclude)\b|"
    r"\b(?:couldn'?t|could not|can'?t|cannot|wasn'?t able to|unable to) (?:\w+ )?(?:verify|confirm|check)\b|"
    r"\bif (?:i'?m|i am|i'?ve|i have|i) (?:\w+ ){0,4}(?:right|correctly)\b"
    r"(?!\s+(?:now|away|after|before|at|then|there|here|when|as|on|in)\b)|"
    # The common ways of hedging in English, beyond the ones above.
    r"\bnot (?:entirely|completely|totally|quite|100 ?%|a hundred percent) (?:sure|certain)\b|\bi believe\b|"
    r"\b(?:could|might|may) be (?:wrong|mistaken|off)\b|\bif i (?:recall|remember)\b|\bdon'?t quote me\b|"
    r"\bgrain of salt\b|\bdouble[- ]check\b|\bbest guess\b|\bi suspect\b|\blikely\b|\bseems?\b|"
    r"\bas far as i (?:know|can tell)\b|\b(?:unless|if) (?:i'?m|i am) (?:wrong|mistaken|off)\b|"
    r"\bhard to (?:say|tell|pick|choose|rank)\b|"
    r"\bno guarantee\b|\bi'?m not positive\b|\bor (?:so|thereabouts)\b|\bgive or take\b|\bor was it\b|"
    r"\bon reflection\b|\bscratch that\b|\bsecond[- ]guess|"
    # Epistemic modals: "it might/may/could be" (not the month: "5 May", "May 5"; not an offer or
    # advice: "I could set it", "you might want to", "may I").
    # (nor a reasoning that rules others out: "nobody else could have", "the only one who could").
    r"(?<!\byou )(?<!\bwe )(?<!\bi )(?<!\bbody )(?<!\bone )(?<!\belse )(?<!\bwho )(?<!\bthat )"
    r"\b(?:might|could(?!n'?t| not)|(?<!\d )(?-i:may)(?! \d| i\b))\b|"
    r"(?:^|[.!?]\s+)May (?:be|have|not)\b|"
    r"\bmix(?:ed|ing)? (?:\w+ )?up\b|\bmis-?(?:remember|read|recall)|"
    r"\b(?:i|we) (?:might|may|could) (?:say|guess|go with|pick|have|be)\b|"
    # Doubting oneself, sure only in part, torn between answers.
    r"\b(?:have|got|get|gotten) (?:it|this|that|them|these|the \w+) (?:\w+ )?(?:wrong|backwards|mixed up|reversed|"
    r"swapped|switched|flipped)\b|"
    r"\bback and forth\b|\bchang(?:e|ed|ing) my mind\b|\btorn between\b|\bon the fence\b|\bcan'?t decide\b|"
    r"\bnot (?:very |fully |totally )?confident\b|\blow confidence\b|\bdon'?t (?:hold|trust) me\b|\bcorrect me if\b|"
    r"\bif i'?m not (?:mistaken|wrong)\b|\bpresumably\b|\bsupposedly\b|\bi reckon\b|\bguess(?:ing|ed)?\b|"
    r"\bshot in the dark\b|\bif (?:my )?memory serves\b|\bto (?:the best of )?my knowledge\b|"
    r"\bi(?: would|'d)? assume\b|\bassuming\b(?! you)|"
    r"\bi(?: would|'d)? imagine\b|\bhard to (?:call|decide)\b|\bany order\b|"
    r"\bnot 100 ?%|\b\d{1,2} ?% (?:sure|certain|confident)\b|\bconfidence\W{0,3}(?:\d|low|medium|moderate)|"
    r"\b\d+-?ish\b|\b[A-Za-z]+-ish\b|"
    r"\bun(?:verified|confirmed|tested|checked)\b|\bhunch(?:es)?\b|\btentative(?:ly)?\b|"
    r"\boff the top of my head\b|\bi want to say\b|"
    r"\b(?:pinch|grain) of salt\b|\bclose second\b|\bif i had to (?:bet|guess)\b|\bi'?d bet\b|"
    r"\b(?:fairly|pretty|reasonably|mostly|almost|somewhat) (?:sure|certain|confident)\b|"
    # Another answer offered: "unless it was X", "or not", "or rather", a sentence that starts with "Or"
    # that starts with "Or".
    r"\bunless\b|\bor not\b|\bor rather\b|\bor else\b|"
    r"(?:^|[.!?;]\s+)or\b|"
    # Indifference to the answer: "the order hardly matters", "doesn't matter which" (not "the change
    # doesn't matter", a claim that the answer stays), "any of them", "a toss-up".
    r"\b(?:order|ranking|choice|which|any)\b[^.;!?\n]{0,30}\b(?:hardly|barely|doesn'?t|does not|won'?t)"
    r"(?: really)? matters?\b|\bmatters? (?:much |really )?which\b|"
    r"\bany (?:of (?:them|these|those|the \w+)|one) (?:could|would|might|is|are|works?|fits?|will do|is fine)\b|"
    r"\btoss[- ]up\b|\bcoin (?:flip|toss)\b|\b(?:all )?equally (?:good|likely|plausible)\b",
    re.IGNORECASE)
#: A later sentence that takes the answer back: "Actually, ...", "Wait, ...", "Correction: ...".
REVISION = re.compile(r"^\W*(?:actually(?!\W*[:=])|wait|correction|no wait)\b", re.IGNORECASE)
#: A social sentence (an offer, a closing) is about the conversation, not the answer, unless it doubts
#: the answer outright ("let me know if I'm wrong").
SOCIAL = re.compile(r"\blet me know\b|\bfeel free\b|\bhope (?:this|that|it) helps\b|\bhappy to help\b|"
                    r"\banything else\b|\bdon'?t hesitate\b|\bwould you like\b|\b(?:want|like) me to\b|\bshall i\b|"
                    r"\bi can also\b|\bif you(?:'d| would)? (?:like|prefer|want)\b", re.IGNORECASE)
OUTRIGHT = re.compile(r"\bwrong\b|\bmistaken\b|\bnot (?:sure|certain)\b|\bcorrect me\b|\bunsure\b", re.IGNORECASE)
#: Words that take a plan back: the plan is not to be run as given.
WITHDRAWN = re.compile(r"\bon second thought\b|\bthen again\b|\bnot (?:sure|certain|confident)\b|\bmay not be right\b|"
                       r"\bmaybe (?:better|not|don'?t|hold)\b|\b(?:might|may) not\b|\bhold off\b|\bdisregard\b|"
                       r"\bnever ?mind\b|"
                       r"\bdon'?t (?:run|use|apply|execute|go with|do) (?:it|this|that|the plan|anything)\b|"
                       r"\b(?:ignore|scrap|forget|drop|cancel) (?:this|that|it|the plan)\b|"
                       r"\bleave (?:the home|the house|things|everything|it all|it) (?:as (?:it is|they are)|alone)\b|"
                       r"\b(?:until|till) (?:someone|somebody|they|\w+) (?:confirms?|checks?|agrees?)\b|"
                       r"\bnot (?:run|use|apply|execute) (?:it|this|that|the plan)\b|\bwait (?:before|a bit|on)\b|"
                       r"\b(?:let'?s|better|i'?d|rather) not (?:run|use|apply|execute|do)\b|"
                       # advice to change nothing, or the plan called a guess
                       r"\b(?:better|best|safer|wiser) (?:not|to not|to leave)\b|"
                       r"\bnot (?:to )?(?:change|touch|alter) anything\b|"
                       r"\b(?:this|it|that|the plan)(?: is|'s| was) (?:just |only |really |a bit of |more of )?"
                       r"(?:a |my )?(?:best )?guess\b", re.IGNORECASE)
#: People by what they are to someone (general English), to catch "my neighbour Tobias".
ROLES = (r"(?:brother|sister|friend|neighbou?r|housekeeper|cleaner|nanny|lodger|tenant|landlord|landlady|guest|"
         r"visitor|cousin|aunt|uncle|nephew|niece|colleague|coworker|roommate|flatmate|housemate|partner|husband|"
         r"wife|son|daughter|mother|father|mum|mom|dad|grand(?:ma|pa|mother|father|son|daughter)|babysitter|"
         r"caretaker|gardener|student|au pair|assistant|technician|concierge|doorman|janitor|relative)")
#: Someone vouching for the answer: "Tobias, the lodger, told me so", "as Ana saw", "(Source: Tobias)",
#: "my neighbour Tobias", "Tobias, the exchange student," (a person introduced by an apposition).
VOUCHER = re.compile(r"\b([A-Z][a-z]+)(?:,? (?:the|our|my|their|a) [a-z ]+?,?| \([^)]*\))? (?:told|saw|confirmed|"
                     r"said|says|mentioned|reported|noticed|heard|remembers|checked|noted|recalls|recalled|agrees|"
                     r"agreed|let me know|can confirm|will confirm|vouches|witnessed|swears|keeps track|tracks|"
                     r"logged|wrote)\b|"
                     r"\b(?i:according to|per|ask|as told by|confirmed by|seen by|reported by|witnessed by|"
                     r"source|sources|via|courtesy of|credit to|thanks to|h/t)\s*[:\-–—]?\s*([A-Z][a-z]+)\b|"
                     r"\b([A-Z][a-z]+), (?:the|our|my|their|his|her|a|an) [a-z][a-z' -]{2,40}?(?:,|\))|"
                     r"\b(?:says|said|reports|reported|claims|claimed|confirms|confirmed|notes|noted|swears|recalls|"
                     r"thinks|tells me|told me)\s+([A-Z][a-z]+)\b|"
                     rf"\b(?i:{ROLES})(?:,\s*|\s+)([A-Z][a-z]+)\b|"
                     r"(?:^|[.!?;:(]\s*|\b(?:and|with|by|from) )([A-Z][a-z]{2,}) (?:also |too )?[a-z]{2,}ed\b")
#: Capitalised words that start a sentence or a clause and name no one.
NOT_NAMES = {"i", "it", "that", "this", "she", "he", "they", "who", "the", "yes", "no", "well", "sure", "ok", "okay",
             "so", "also", "answer", "note", "and", "but", "then", "there", "here", "we", "you", "nobody", "none",
             "everyone", "everybody", "someone", "somebody", "anyone", "anybody", "both", "neither", "each", "all",
             # pronouns, determiners and linking words that open a sentence
             "her", "his", "their", "its", "our", "my", "your", "these", "those", "what", "when", "where", "which",
             "while", "after", "before", "since", "because", "if", "once", "as", "at", "on", "in", "by", "for", "from",
             "with", "during", "until", "nothing", "everything", "that's", "it's",
             # the household's own records, and the calendar
             "memory", "records", "record", "log", "logs", "history", "data", "sensor", "sensors", "tools",
             # numbers in words ("Eighteen hundred hours")
             "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
             "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty",
             "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
             *(name.lower() for name in [*calendar.day_name, *calendar.month_name] if name)}
#: "Nobody" as people say it ("nobody else" beside a name is no second answer).
NOBODY_WORDS = re.compile(r"\b(?:nobody|no one|no-one|none|not anyone|not anybody|no member|not a (?:single )?"
                          r"(?:one|person|soul)|not one)\b(?! else| of (?!them\b|us\b|the members\b))",
                          re.IGNORECASE)
#: An aside: words in parentheses that offer no other answer.
ASIDE = re.compile(r"\((?!\s*(?:or|and|maybe|possibly|perhaps|probably|either|if)\b)[^()]*\)", re.IGNORECASE)
NOT_HOME = re.compile(r"\b(?:did not|didn'?t|never|not)\s+(?:\w+\s+)?(?:come|came|get|got|arrive|arrived|return|"
                      r"returned|make it|made it|show up|showed up)\b|\bstayed (?:out|away|elsewhere|over)\b|"
                      r"\bwasn'?t (?:at )?home\b|\bno (?:arrival|homecoming)\b|"
                      r"\baway (?:all|the whole) (?:day|night|evening)\b", re.IGNORECASE)
#: The value without the change, named as the contrast ("(instead of 17 °C)", "from 22 °C to",
#: "vs. 12 °C as it went", "what really happened: 17:24").
CONTRAST = re.compile(r"\(\s*(?:instead of|not|rather than|was|originally|vs\.?|versus|compared (?:to|with)|"
                      r"as opposed to|up from|down from|actual(?:ly)?|in reality|really)\b[^)]*\)|"
                      r"\bfrom (?:(?!\bto\b)[^;]){1,40}?\bto\b|"
                      r"\bnot (?:even )?(?=(?-i:[A-Z0-9]))[^,.;:!?()\n—–]+|"
                      # another member as the point of comparison: "(just) before Ben", "ahead of Ben at 18:05"
                      r"\b(?:before|after|ahead of|behind|earlier than|later than|followed by)\s+"
                      r"(?=(?-i:[A-Z][a-z]))[^,.;:!?()\n—–]+|"
                      # a comparison in its own clause: ", two years older than Ben", ", 3 °C warmer than outside"
                      r"(?<=[,;—–(])[^,.;:!?()\n—–]*\b(?:older|younger|warmer|cooler|colder|hotter|earlier|later|"
                      r"higher|lower) than\b[^,.;:!?()\n—–]*|"
                      r"\b(?:actual(?:ly)?|real(?:ly)?|in reality|originally|before|without the change|as it was)"
                      r"\s*[:=]\s*[^,;\n]+|"
                      r"\b(?:instead of|rather than|as opposed to|versus|vs\.|compared (?:to|with)|up from|down from) "
                      r"[^.;,]+", re.IGNORECASE)
CONTRAST_SENTENCE = re.compile(r"^\s*(?:without the change|without that change|otherwise|originally|in reality|"
                               r"in real life|before the change|as it (?:actually |really )?(?:happened|went)|"
                               r"what (?:actually |really )?happened|as things (?:actually |really )?(?:went|stood)|"
                               r"the (?:actual|real) (?:answer|value|one|time))\b", re.IGNORECASE)
#: Raw tool output (a JSON object) is not an answer.
RAW = re.compile(r"[{\[]\s*\"\w+\"\s*:")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:T|\b)")   # the date alone: "2025-03-02 17:37:00" is a time
#: A device feature as FR writes them: device.Cluster.Command (or Attribute), also with other
#: separators people use ("living_room_light: OnOff.On", "living_room_light / OnOff / On").
FEATURE = re.compile(r"\b([a-z0-9_]+)\s*(?:\.|:|/|→|->)\s*([A-Z][A-Za-z0-9]*)\s*(?:\.|/|:)\s*([A-Za-z0-9]+)\b")


#: The fields an agent's structured reply puts its answer in.
ANSWER_KEYS = ("answer", "final_answer", "final answer", "result")


def unwrapped(answer: str | None) -> str | None:
    """An answer sent as a JSON object with one answer field ({"answer": "Ada"}) is that field's
    value, its other fields ("confidence": "low", "source": ...) words beside it; any other JSON
    (raw tool output) stays as it is, and is no answer."""
    import json
    if not answer or not answer.strip().startswith("{"):
        return answer
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        return answer
    keys = [k for k in value if str(k).lower() in ANSWER_KEYS] if isinstance(value, dict) else []
    said = value[keys[0]] if len(keys) == 1 else None
    if not isinstance(said, (str, int, float)) or isinstance(said, bool) \
            or any(isinstance(v, (dict, list)) for v in value.values()):
        return answer
    return "\n".join([str(said), *(f"{k}: {v}" for k, v in value.items() if k != keys[0])])


def doubts(text: str) -> bool:
    """Is the answer put in doubt: a hedge anywhere, or a later sentence that revises it?"""
    said = [s for s in sentences(text) if not SOCIAL.search(s) or OUTRIGHT.search(s)]
    return any(DOUBT.search(s) for s in said) or any(REVISION.search(s) for s in said[1:])


def plain(text: str) -> str:
    """The text without Markdown emphasis or code marks ("**B**", "`B`", "__B__")."""
    text = re.sub(r"(\*{1,3}|`+)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    return re.sub(r"(?<!\w)(_{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)", r"\2", text)


def sentences(text: str) -> list[str]:
    """Sentences, and the clauses a narrative chains on ("..., then Ben at 18:05", "..., while ...")."""
    return [s for s in re.split(r"(?<=[.!?;])\s+|\n+|,\s+(?=(?:and )?(?:then|while|whereas|after which|followed by)\b)",
                                text) if s.strip()]


def without_question(answer: str, question: str) -> str:
    """The answer with any copy of the question (or of its sentences) taken out."""
    out = answer
    for part in [question, *sentences(question)]:
        if len(part) > 20:
            out = re.sub(re.escape(part.strip()), " ", out, flags=re.IGNORECASE)
    return out


def invented_people(text: str, members: list[dict[str, Any]], rooms: dict[str, str] | None = None,
                    question: str = "") -> bool:
    """Does the answer vouch for itself with a person who is not a member of the household
    (a source, a witness, someone introduced by what they are)? Rooms, and the question's own
    words, are not people."""
    known = {w.lower() for m in members for w in str(m.get("name", "")).split()}
    known |= {w.lower() for w in re.findall(r"[A-Za-z]+", question)}
    known |= {w.lower() for rid, name in (rooms or {}).items() for w in f"{rid.replace('_', ' ')} {name}".split()}
    return any(next(g for g in m.groups() if g).lower() not in known | NOT_NAMES for m in VOUCHER.finditer(text))


#: A member's age as people state it: "47 years old", "aged 47", "she is 47.", "Ada (47)".
AGE = re.compile(r"\b(\d{1,3})[- ](?:years?|yrs?)(?:[- ]old)?\b|\b(\d{1,3}) ?(?:y/o|yo)\b|\baged? (?:of )?(\d{1,3})\b|"
                 r"\b(?:(?-i:[A-Z][a-z]+)|she|he|they)(?: is|'s| turned| turns) (?:only |just |barely |nearly |almost |"
                 r"about |around |roughly |now |already |still |a mere )?(\d{1,3})(?=\s*(?:[.,;)!—–]|$|and\b|but\b))|"
                 r"(?<=[A-Za-z] )\((\d{1,3})\)",
                 re.IGNORECASE)
PRONOUN = re.compile(r"\b(?:she|he|her|hers|him|his|they|them|their)\b", re.IGNORECASE)
PREFERS = re.compile(r"\b(?:likes?|prefers?|preferred|preference|comfortable|wants?)\b", re.IGNORECASE)


#: A member's hobby as people state it: "a big fan of chess", "enjoys pottery", "is into climbing".
HOBBY = re.compile(r"\b(?:(?:a |an )?(?:big |huge |keen |real )?(?:fan|lover) of|enjoys|loves|adores|"
                   r"is (?:really )?into|(?:is )?(?:passionate|crazy|mad) about|(?:is )?keen on|"
                   r"hobb(?:y|ies) (?:is|are|include)|"
                   r"spends? (?:\w+ )?(?:free |spare )?time)\s+"
                   r"(?!\d|(?:it|the|a|an|her|his|their|them|being|when|to|that|this|having|coming|getting)\b)"
                   r"([a-z][a-z -]*[a-z])", re.IGNORECASE)
#: A member's wake or bed time: "usually wakes at 08:15", "tends to turn in at 22:30"; habits only, so
#: verbs in the present (what a member did on the day, "got up at 07:52", is no habit).
HABIT = re.compile(r"\b(?:(?P<wake>wakes?(?: up)?|waking up|gets? up|(?:is|'s) (?:\w+ly )?up (?:by|at|around)|"
                   r"(?:usual|normal|regular|typical) wake(?:-up)? time)|"
                   r"(?P<bed>go(?:es)? to (?:bed|sleep)|bed ?time|turns? in|falls? asleep|hits? the (?:hay|sack)|"
                   r"retires? for the night))\b", re.IGNORECASE)


def _false_role(part: str, member: dict[str, Any]) -> bool:
    """A role in the home stated for the member ("Carmen is the household's roommate") that is not
    theirs (their role, or a word their persona uses)."""
    role, persona = str(member.get("role", "")).lower(), str(member.get("persona", "")).lower()
    for m in ROLE_CLAIM.finditer(part):
        word = m[1].lower()
        said = next(r for r, pattern in HOUSE_ROLES.items() if re.fullmatch(pattern, word, re.IGNORECASE))
        if said != role and not re.search(rf"\b{re.escape(word.rstrip('s'))}", persona):
            return True
    return False


def _false_habit(part: str, member: dict[str, Any]) -> bool:
    """A hobby the member does not have, or a wake or bed time that is not theirs."""
    prefs = member.get("preferences") or {}
    def stems(text: str) -> set[str]:   # words, plurals read as singulars
        return {re.sub(r"(?<=[a-z]{3})s$", "", w) for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}
    known = stems(" ".join([*map(str, prefs.get("hobbies") or []), str(member.get("persona", ""))]))
    for m in HOBBY.finditer(part):
        for item in re.split(r"\band\b|\bor\b|&", m[1].lower()):   # each hobby named must be theirs
            if stems(item) and not stems(item) & known:
                return True
    habit = HABIT.search(part)
    if habit:
        said = clock_readings(part[habit.start():])
        want = prefs.get("wake" if habit["wake"] else "bed")
        if said and isinstance(want, str) and re.fullmatch(r"\d{1,2}:\d{2}", want):
            minutes = int(want.split(":")[0]) * 60 + int(want.split(":")[1])
            return minutes not in said[0]
    return False


def _false_preference(part: str, prefs: dict[str, Any], supposed: Iterable[float] = ()) -> bool:
    """A preferred temperature or light level stated beside the member that is neither theirs nor supposed."""
    if not PREFERS.search(part):
        return False
    liked = prefs.get("temperature")
    if isinstance(liked, (int, float)) and any(all(abs(q.value - v) > 0.06 for v in {liked, *supposed})
                                               for q in quantities(part) if q.unit in ("degC", "degree")):
        return True
    level = prefs.get("light_level")
    said = [int(v) for v in re.findall(r"\b(?:light )?(?:level|brightness)(?: of)?\s*(\d{1,3})\b(?!\s*%)", part,
                                       re.IGNORECASE)]
    return isinstance(level, int) and any(v != level and v not in supposed for v in said)


#: Devices people name, by the words of a device id the home must hold for the claim to be true: a
#: camera's footage needs a camera, "the dishwasher" a dishwasher (device ids end in their kind).
DEVICE_KINDS = {
    "camera": r"\bcam(?:era)?s?\b|\bfootage\b|\bcctv\b|\bwebcam\b|\bvideo (?:feed|recording|clip)s?\b|"
              r"\bsecurity (?:video|recording)s?\b",
    "doorbell": r"\bdoorbells?\b",
    "lock": r"\b(?:door|smart) locks?\b|\block (?:log|history)\b",
    "occupancy sensor": r"\b(?:motion|occupancy|presence|pir) (?:sensor|detector)s?\b",
    "contact sensor": r"\b(?:door|window|contact) sensors?\b",
    "tracker": r"\b(?:gps|location) (?:tracker|tracking|data|history)\b|\bgeofenc|\bsmart ?watch|\bwearables?\b|"
               r"\bfitness (?:band|tracker)s?\b|\bphone'?s location\b",
    "dishwasher": r"\bdishwashers?\b", "washer": r"\bwashing machines?\b|\bwashers?\b",
    "dryer": r"\b(?:tumble )?dryers?\b", "vacuum": r"\b(?:robot )?vacuums?\b|\brobovac",
    "purifier": r"\b(?:air )?purifiers?\b", "dehumidifier": r"\bdehumidifiers?\b", "humidifier": r"\bhumidifiers?\b",
    "heat pump": r"\bheat pumps?\b", "water heater": r"\bwater heaters?\b|\bboilers?\b",
    "evse": r"\b(?:ev|car) chargers?\b|\bwall ?box\b", "fan": r"\b(?:ceiling |desk |standing )?fan\b(?! of\b)",
    "freezer": r"\bfreezers?\b", "tv": r"\btvs?\b|\btelevisions?\b", "oven": r"\bovens?\b",
    "leak detector": r"\bleak (?:detector|sensor)s?\b", "solar": r"\bsolar (?:panels?|power|inverter)\b",
}
DEVICE_WORDS = {kind: re.compile(pattern, re.IGNORECASE) for kind, pattern in DEVICE_KINDS.items()}
#: Pets people name, by species.
ANIMALS = r"dog|puppy|cat|kitten|rabbit|bunny|tortoise|turtle|parrot|budgie|bird|fish|goldfish|hamster|guinea pig"
PETS = re.compile(rf"\b({ANIMALS})s?\b", re.IGNORECASE)
#: A pet named: "a pet called Clover", "our dog named Rex", "Mango the parrot".
PET_NAMED = re.compile(rf"\b(?:pets?|{ANIMALS}) (?:called|named) ((?-i:[A-Z][a-z]+))\b|"
                       rf"\b((?-i:[A-Z][a-z]+)) the (?:\w+ )?(?:{ANIMALS})\b(?! \w)", re.IGNORECASE)
SPECIES = {"puppy": "dog", "kitten": "cat", "bunny": "rabbit", "goldfish": "fish", "budgie": "bird", "parrot": "bird"}


def unheld_devices(text: str, devices: Iterable[str], pets: Iterable[dict[str, Any]] = ()) -> bool:
    """Does the answer name a device the home does not have (a camera's footage, a doorbell, a
    dishwasher), or a pet the household does not keep? Rooms and the household memory are the home's."""
    ids = {" ".join(device.split("_")) for device in devices}
    kept = {SPECIES.get(str(p.get("species", "")).lower(), str(p.get("species", "")).lower()) for p in pets}
    if any(pattern.search(text) and not any(re.search(rf"(?:^|\s){kind}(?:\s|$)", i) for i in ids)
           for kind, pattern in DEVICE_WORDS.items()):
        return True
    if any(SPECIES.get(m[1].lower(), m[1].lower()) not in kept for m in PETS.finditer(text)):
        return True
    names = {str(p.get("name", "")).lower() for p in pets}
    return any(next(g for g in m.groups() if g).lower() not in names for m in PET_NAMED.finditer(text))


#: Rooms people place things in ("in the garage", "the attic light"); "office", "study" and "gym" are
#: left out: "in the office" is as often the workplace.
ROOM_WORDS = ("garage", "basement", "cellar", "attic", "loft", "conservatory", "sunroom", "utility room",
              "laundry room", "laundry", "nursery", "playroom", "den", "porch", "patio", "garden", "guest room",
              "spare room", "mudroom", "games room", "dining room", "pantry", "closet", "studio", "balcony", "ensuite",
              "sauna", "wine cellar", "shed", "greenhouse", "music room", "media room", "home cinema", "boot room",
              "terrace", "veranda", "hallway", "bathroom", "kitchen")
PLACED = re.compile(rf"\b(?:in|into|inside) the ({'|'.join(ROOM_WORDS)})\b|"
                    rf"\b(?:the |a )?({'|'.join(ROOM_WORDS)}) (?:light|lamp|thermostat|speaker|tv|sensor|blinds|window|"
                    rf"door|ac|air conditioner|heater|fan)s?\b", re.IGNORECASE)


def unheld_rooms(text: str, rooms: dict[str, str]) -> bool:
    """Does the answer place something in a room the home does not have?"""
    held = " | ".join(f"{rid.replace('_', ' ')} | {name}" for rid, name in rooms.items()).lower()
    return bool(rooms) and any((m[1] or m[2]).lower() not in held for m in PLACED.finditer(text))


#: People named by what they are in a home ("our lodger", "the kids"), by the member role that makes
#: them real; the ones no member role covers (a lodger, a nanny, a neighbour) are real only when a
#: member's persona says so.
HOUSE_ROLES = {"roommate": r"roommates?|flatmates?|housemates?",
               "grandparent": r"grand(?:ma|pa|mother|father|parent)s?|granny|grannie|nan|gran",
               "child": r"kids?|sons?|daughters?|child|children", "parent": r"mum|mom|dad|mother|father|parents?",
               "partner": r"husband|wife|spouse|partner|boyfriend|girlfriend",
               "(none)": r"lodgers?|tenants?|au pairs?|nanny|housekeeper|cleaner|babysitter|caretaker|gardener|butler|"
                         r"maid|carer|neighbou?rs?"}
#: A role claimed for someone: "is the household's roommate", "'s one of the kids", "as the family's lodger".
ROLE_CLAIM = re.compile(r"\b(?:is|'s|as) (?:the|a|an|one of the) (?:household'?s |family'?s |home'?s )?("
                        + "|".join(HOUSE_ROLES.values()) + r")\b", re.IGNORECASE)
HOUSE_PERSON = re.compile(r"\b(?:the|our|my|their|his|her|your)\s+(" + "|".join(HOUSE_ROLES.values()) + r")\b",
                          re.IGNORECASE)


def unheld_people(text: str, members: list[dict[str, Any]]) -> bool:
    """Does the answer bring in someone by what they are in the home (our lodger, the kids) that no
    member is?"""
    roles = {str(m.get("role", "")).lower() for m in members}
    personas = " ".join(str(m.get("persona", "")) for m in members).lower()
    for m in HOUSE_PERSON.finditer(text):
        word = m[1].lower()
        role = next(r for r, pattern in HOUSE_ROLES.items() if re.fullmatch(pattern, word, re.IGNORECASE))
        if role not in roles and not re.search(rf"\b{re.escape(word.rstrip('s'))}", personas):
            return True
    return False


def made_up(answer: str, members: list[dict[str, Any]], rooms: dict[str, str] | None = None,
            devices: Iterable[str] | None = None, question: str = "",
            pets: Iterable[dict[str, Any]] = ()) -> bool:
    """Does the answer claim anything the household does not support: a person who is not a member
    vouching for it, a false fact about a member, a device or a pet the home does not have?"""
    text = plain(without_question(answer, question))
    supposed = supposed_values(question)
    pets = list(pets)
    return invented_people(text, members + pets, rooms, question) or unheld_people(text, members) \
        or false_member_facts(text, members, supposed) \
        or (devices is not None and unheld_devices(text, devices, pets)) or unheld_rooms(text, rooms or {})


def supposed_values(question: str) -> set[float]:
    """The values a question supposes as a preference ("Suppose Ada preferred 20 °C. ..."): a
    preference stated in the answer may be one of them, or the member's own; any other supposition
    changes no preference."""
    supposition = sentences(question.strip())[0] if question.strip() else ""
    if not (re.match(r"\s*(?:suppose|imagine|if|what if)\b", supposition, re.IGNORECASE)
            and PREFERS.search(supposition)):
        return set()
    return {q.value for q in quantities(DATE.sub(" ", supposition))}


def false_member_facts(text: str, members: list[dict[str, Any]], supposed: Iterable[float] = ()) -> bool:
    """Does a sentence about one member state an age, or a preferred temperature, that is not
    theirs (nor one the question supposes)? A true extra passes; an invented value fails. A sentence that
    names no one but says "she", "his", "they" is about the one member the sentence before named."""
    by_name = {name: m for m in members for name in (str(m["name"]), str(m["name"]).split()[0])}
    people = [(name, str(m["name"])) for name, m in by_name.items()]
    last: set[str] = set()
    for sentence in sentences(text):
        said = _mentions(sentence, people)
        for part in [sentence, *re.findall(r"\(([^()]*)\)", sentence)]:
            named = _mentions(part, people) or (set(last) if not said and PRONOUN.search(part) else set())
            if len(named) != 1:
                continue
            member = by_name[named.pop()]
            ages = {int(next(g for g in m.groups() if g)) for m in AGE.finditer(part)}
            if isinstance(member.get("age"), int) and ages - {member["age"]}:
                return True
            prefs = member.get("preferences") or {}
            if _false_role(part, member) or _false_habit(part, member) \
                    or _false_preference(part, prefs, set(supposed)):
                return True
        last = said if len(said) == 1 else set()
    return False


def _mentions(text: str, names: Iterable[tuple[str, str]]) -> set[str]:
    """Which keys of (phrase, key) the text names, longest phrases first (each span read once).
    A one-word name must be capitalised as written ("Dev", "Will" are also words), unless the
    writer capitalises nothing (or everything)."""
    found: set[str] = set()
    anycase = not re.search(r"[A-Z]", text) or not re.search(r"[a-z]", text)
    for phrase, key in sorted(names, key=lambda p: -len(p[0])):
        pattern = rf"(?<![\w.]){re.escape(phrase)}(?![\w]|\.\d)"
        flags = 0 if phrase[:1].isupper() and " " not in phrase and not anycase else re.IGNORECASE
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
    steps = re.compile(r"(?m)^[ \t]*\d{1,2}[.)][ \t]+(?=\S)")
    if len(steps.findall(text)) > 1:   # a numbered list: its numbers ("1. Look up ...") are no claim
        text = steps.sub("", text)
    kept = [CONTRAST.sub(" ", s) for s in sentences(text) if not CONTRAST_SENTENCE.search(s)]
    return "\n".join(kept)


def answer_matches(truth: str, answer: str | None, question: str, members: list[dict[str, Any]],
                   rooms: dict[str, str] | None = None, devices: Iterable[str] | None = None,
                   pets: Iterable[dict[str, Any]] = ()) -> bool:
    """Does an IG/CF answer give the truth (one of the set's answer kinds: a member's name,
    "nobody", a clock time, "did not come home", a temperature, an age, a room id) and only it?"""
    if not answer or not answer.strip():
        return False
    answer = plain(answer)
    pets = list(pets)
    if doubts(without_question(answer, question)) or RAW.search(answer) \
            or invented_people(answer, members + pets, rooms, question):
        return False
    text = _claim_text(answer, question)
    if not text.strip():
        return False
    rooms = rooms or {}
    people = _people(members)
    names = {name for name, _ in people}
    if false_member_facts(text, members, supposed_values(question)):
        return False
    if devices is not None and unheld_devices(without_question(answer, question), devices, pets) \
            or unheld_rooms(without_question(answer, question), rooms or {}) \
            or (devices is not None and unheld_people(without_question(answer, question), members)):
        return False

    def claim(has: Callable[[str], bool]) -> str:
        """The first sentence that makes a claim of the truth's kind, without its asides when
        they are not where the claim is ("Ada (Ben left earlier)", "47 (born 1978)"); "" when
        that sentence asks rather than states ("22 °C?")."""
        first = next((s for s in sentences(text) if has(s)), "")
        if first.rstrip().endswith("?"):
            return ""
        bare = ASIDE.sub(" ", first)
        return bare if has(bare) else first

    if _listed(text, people + _rooms(rooms, rooms)):
        return False
    if truth in names or truth == "nobody":
        def names_in(s: str) -> set[str]:
            # "Ben's sister Ada": a possessive describes the one named beside it
            found = _mentions(s, people)
            return found if len(found) < 2 else _mentions(re.sub(r"\b\w+'s\b", " ", s), people) or found
        # Only the sentence that first names someone (or no one) answers; later ones may be about others.
        first = claim(lambda s: bool(_mentions(s, people) or NOBODY_WORDS.search(s)))
        if truth == "nobody":
            return NOBODY_WORDS.search(first) is not None and not _mentions(first, people)
        return names_in(first) == {truth} and not NOBODY_WORDS.search(first)
    if truth == "did not come home":
        return NOT_HOME.search(text) is not None and not clock_readings(text)
    if re.fullmatch(r"\d{1,2}:\d{2}", truth):
        want = int(truth[:2]) * 60 + int(truth[3:])
        times = _times(claim(lambda s: bool(_times(s))))   # one time, maybe written twice ("7:24 PM (19:24)")
        return bool(times) and all(want in t for t in times) and not NOT_HOME.search(text)
    number = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?: °C)?", truth)
    if number:
        want_value = float(number[1])
        def values(s: str) -> list[Quantity]:
            # a share or a duration ("30 minutes earlier") is never the temperature or age asked
            return [q for q in quantities(s) if q.unit not in ("percent", "minute", "second", "hour")]
        first = claim(lambda s: bool(values(s)))
        if re.search(r"\b\d*0'?s\b|\d-?something\b|\b(?:early|mid|late)[- ]\d", first):
            return False   # a decade ("in their 40s", "late 40s"), not the age
        said = values(first)
        if not said:
            return False
        nearest = "nearest degree" in question
        return all(round(q.value) == want_value if nearest else abs(q.value - want_value) < 0.06 for q in said)
    if truth in rooms:
        first = claim(lambda s: bool(_mentions(s, _rooms(rooms, rooms))))
        return _mentions(first, _rooms(rooms, rooms)) == {truth}
    # Anything else ("unknown"): the words themselves, alone.
    return re.sub(r"\W+", " ", text).strip().lower() == re.sub(r"\W+", " ", truth).strip().lower()


#: What a bare candidate line may hold beside the candidate ("- Ada", "2. 17:37", "22 °C").
_FILLER = {"or", "and", "the", "a", "an", "maybe", "answer", "option", "am", "pm", "c", "f",
           "degrees", "degree", "celsius", "years", "year", "old", "yrs", "y", "o", "hrs", "h", "hours", "aged", "age",
           "candidate", "candidates"}


def _listed(text: str, names: list[tuple[str, str]]) -> bool:
    """Does the answer list several candidates, one a line or sentence ("- Ada\n- Ben",
    "17:37. 18:05.")? A line is a bare candidate when nothing but it (a name or room, a
    number, a time) and filler words is on it; two that say different things are a list."""
    said = set()
    for line in sentences(text):
        rest = normalize(line)
        for phrase, _ in sorted(names, key=lambda n: -len(n[0])):
            rest = re.sub(rf"(?<!\w){re.escape(phrase)}(?!\w)", " ", rest, flags=re.IGNORECASE)
        rest = NOBODY_WORDS.sub(" ", re.sub(r"-?\d+(?:[.,:h]\d+)?", " ", rest))
        words = set(re.findall(r"[A-Za-z]+", rest.lower()))
        if re.search(r"\w", line) and words <= _FILLER:
            claim = (frozenset(_mentions(line, names)), bool(NOBODY_WORDS.search(line)),
                     frozenset(r[0] for r in clock_readings(line)),
                     frozenset(round(q.value, 1) for q in quantities(line)))
            if any(claim):   # a heading ("| Candidate |", "Answer:") names no candidate
                said.add(claim)
    return len(said) > 1


def _times(text: str) -> tuple[tuple[int, ...], ...]:
    """The clock times in a sentence that answers with a time; where none is written as a clock,
    the 24-hour times people write without a colon ("17.37", "1737", "seventeen thirty-seven")."""
    said = clock_readings(text)
    if said:
        return said
    return tuple((int(m[1]) * 60 + int(m[2]),) for m in re.finditer(
        r"(?<![\d.,:-])([01]?\d|2[0-3])[. ]?([0-5]\d)(?![\d.,:]|\s*°| ?%)", normalize(text)))


#: A letter picked in words ("option d", "going with b", "answer: c"), in any case.
_LETTER_WORD = re.compile(r"\b(?:option|answer|choice|letter|pick|choose|select|go(?:ing)? with)"
                          r"(?:\s+(?:is|would be|will be|=))?\s*[:\-–—→>]*\s*[(\[]?([a-eA-E])\b", re.IGNORECASE)


def choice(answer: str | None, options: list[str]) -> str | None:
    """The one option an MC answer picks: its letter ("B", "(B)", "Option B", "The answer is b"),
    its text, or both when they agree; None when it names several, they disagree, or it doubts."""
    if not answer or doubts(plain(answer)):
        return None
    # Options ruled out ("not A", "rather than C") are not picked; a letter asked ("B?") is not chosen.
    one = r"[(\[]?[A-Ea-e]\b[)\]]?"
    text = re.sub(rf"\b(?:not|rather than|instead of|except|over)\s+(?:option\s+)?{one}"
                  rf"(?:,?\s*(?:or|nor|and)?\s*(?:not\s+)?{one})*", " ", plain(answer), flags=re.IGNORECASE).strip()
    if re.search(r"(?<![\w'])[A-Ea-e]\W{0,2}\?", text):
        return None
    # A capital letter alone ("°C" is a unit, "A day" an article).
    letters = set(re.findall(r"(?<![\w'°])([B-E]|A(?! (?!or\b|and\b|is\b)[a-z]{2,}))(?![\w'])", text))
    letters |= {m.upper() for m in _LETTER_WORD.findall(text)}
    # "option 2", "the second option"
    ordinals = ["first", "second", "third", "fourth", "fifth"]
    letters |= {"ABCDE"[int(m) - 1] for m in re.findall(r"\b(?:option|choice|answer|number|no\.|#)\s*([1-5])\b", text,
                                                       re.IGNORECASE)}
    letters |= {"ABCDE"[ordinals.index(m.lower())] for m in re.findall(
        rf"\b({'|'.join(ordinals)}) (?:option|choice|one)\b", text, re.IGNORECASE)}
    alone = re.fullmatch(r"\W*([a-eA-E])\W*", text)
    if alone:
        letters.add(alone[1].upper())
    # The options named in the first sentence that picks any, by letter or by words (later
    # sentences may add true facts about other options' values).
    named: set[str] = set()
    for part in sentences(text):
        bare = re.sub(r"(?<![\w'])\(?[A-Ea-e][).:](?=\s|$)", " ", part)
        named = _options_in(bare, options)
        if named or re.search(r"(?<![\w'°])[A-E](?![\w'])", part) or _LETTER_WORD.search(part):
            break
    picked = letters | named
    return picked.pop() if len(picked) == 1 else None


def _options_in(text: str, options: list[str]) -> set[str]:
    """The letters of the options a text names: by their words, or by their value written
    another way ("5:45 PM" for 17:45, "22°C" or "22 degrees" for 22 °C, "fifty-four" for 54)."""
    text = DATE.sub(" ", text)
    named = {"ABCDE"[int(k)] for k in _mentions(text, [(o, str(i)) for i, o in enumerate(options)])}
    times = {m for r in clock_readings(text) for m in r}
    values = {q.value for q in quantities(text)}
    for i, option in enumerate(options):
        if re.fullmatch(r"\d{1,2}:\d{2}", option):
            if int(option[:2]) * 60 + int(option[3:]) in times and len(clock_readings(text)) == 1:
                named.add("ABCDE"[i])
        elif re.fullmatch(r"-?\d+(?:\.\d+)?(?: °C)?", option) and float(option.split()[0]) in values:
            named.add("ABCDE"[i])
    return named


def ranking(answer: str | None, candidates: list[str]) -> list[str]:
    """The candidates in the order an FR answer ranks them; empty when it ranks none: it doubts
    its order, puts a made-up feature or several features first, or repeats the given order."""
    if not answer:
        return []
    answer = plain(answer)
    # "most likely" ranks (likelier than the rest); it is not doubt here
    if doubts(re.sub(r"\b(?:most|more|less|least) likely\b|\blikeliest\b", " ", answer, flags=re.IGNORECASE)):
        return []
    if re.search(r"\b(?:tie[sd]?|joint|equal|shared?)\b[^.\n]{0,25}\b(?:first|top|1st|#1)\b|"
                 r"\b(?:first|top|1st|#1)\b[^.\n]{0,25}\b(?:tie[sd]?|joint|shared)\b|\bequally\b",
                 answer, re.IGNORECASE):
        return []   # several first
    # features ruled out ("not x", "except x") rank nowhere
    found = [m for m in FEATURE.finditer(answer)
             if not re.search(r"\b(?:not|except|never)\W{0,3}$", answer[max(0, m.start() - 12):m.start()],
                              re.IGNORECASE)]
    named = [".".join(m.groups()) for m in found]
    if not found or named[0] not in candidates:
        return []
    ranks = list(re.finditer(r"(?m)^\s*(\d+)[.)]\s", answer))
    if len(ranks) >= 2 and ranks[0].group(1) == "1":
        top = [f for f in found if ranks[0].end() <= f.start() < ranks[1].start()]
        if len(top) > 1:
            return []   # a tie at the top: no single first choice
    between = answer[found[0].end():found[1].start()] if len(found) > 1 else ""
    if re.fullmatch(r"\W*(?:or|/|=|and/or)\W*", between, re.IGNORECASE):
        return []   # "x or y" first: a tie
    order: list[str] = []
    for feature in named:
        if feature in candidates and feature not in order:
            order.append(feature)
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


def json_plans(answer: str) -> list[tuple[int, int, list[Any]]]:
    """The plans an answer holds, in order: its top-level JSON lists; or, where it holds none,
    its steps written one JSON object each ("1. {...}  2. {...}"), as one plan."""
    import json
    lists = json_lists(answer)
    steps: list[tuple[int, int, Any]] = []
    i = answer.find("{")
    while i != -1:
        if any(a <= i < b for a, b, _ in lists):
            i = answer.find("{", i + 1)
            continue
        try:
            value, end = json.JSONDecoder().raw_decode(answer[i:])
        except json.JSONDecodeError:
            i = answer.find("{", i + 1)
            continue
        if isinstance(value, dict) and "tool" in value:
            steps.append((i, i + end, value))
            i = answer.find("{", i + end)
        else:
            i = answer.find("{", i + 1)
    top = [item for item in lists if not any(a <= item[0] < b for a, b, _ in steps)]
    if top or not steps:
        return top
    return [(steps[0][0], steps[-1][1], [value for _, _, value in steps])]


def plans_in(answer: str) -> int:
    """How many plans the answer holds (json_plans)."""
    return len(json_plans(answer))


def prose_of(answer: str) -> str:
    """The answer's words outside its JSON (where a plan is withdrawn or doubted)."""
    out, i = [], 0
    for start, end, _ in json_plans(answer):
        out.append(answer[i:start])
        i = end
    out.append(answer[i:])
    return " ".join(out)
