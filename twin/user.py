"""The simulated user: who answers an agent's `ask_user`, and who speaks the next turn.

One user for every suite, built from a task's hidden intent:

    intent = Intent(request="Make it cosy in here",
                    goal="dim the living room lights to about 30 % and close the blinds",
                    slots={"room": Slot("the living room", ["room", "where"]),
                           "level": Slot("about 30 %", ["bright", "level", "dim", "percent"])})
    user = ScriptedUser(intent)          # deterministic: the same questions get the same answers
    session = Session(ask_user=user.answer)

`ScriptedUser` answers from the intent's slots: a question asking for confirmation ("should
I ...?") gets `confirm`; one that names a slot (its name or keywords) gets that slot's value
(every slot it names, in the intent's order); anything else gets `fallback` (default: the
goal in words).
After `patience` questions it asks the agent to go ahead. `LLMUser` plays the same intent
through any OpenAI-compatible chat endpoint (temperature 0 and a fixed seed, for runs that
repeat as far as the endpoint allows). Both keep the dialogue in `transcript` and give
scripted follow-up turns (`follow_ups`: corrections, topic shifts) through `next_turn()`.

A later turn reacts to the home (`remind(unmet)`): the caller checks the goal and says in words
what is still unmet; the user names only that, never the whole request again (ScriptedUser: a
fixed sentence, then the unmet clauses as one request; LLMUser: the model's own words).
`fork()` is a user that has heard the same dialogue, for a branch of a search.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

_CONFIRM = re.compile(r"\b(should i|shall i|do you want|would you like|is (it|that) (ok|okay|alright|fine)|"
                      r"can i go ahead|confirm|are you sure|ok to|okay to)\b", re.I)


@dataclass(frozen=True)
class Slot:
    """A piece of the intent the request leaves out, and the words a question about it uses."""
    value: str
    keywords: tuple[str, ...] = ()

    def __init__(self, value: str, keywords: list[str] | tuple[str, ...] = ()):
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "keywords", tuple(k.lower() for k in keywords))


@dataclass
class Intent:
    """What the user wants: what they said, what they mean (hidden), and its slots."""
    request: str
    goal: str
    slots: dict[str, Slot] = field(default_factory=dict)
    confirm: str = "Yes, please go ahead."
    fallback: str | None = None        # None: "I'd like you to <goal>."
    follow_ups: list[str] = field(default_factory=list)
    persona: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Intent:
        """From a task file's JSON: slots as {name: value} or {name: {"value", "keywords"}}."""
        slots = {}
        for name, slot in (data.get("slots") or {}).items():
            if isinstance(slot, str):
                slots[name] = Slot(slot)
            else:
                slots[name] = Slot(slot["value"], slot.get("keywords", ()))
        return cls(request=data["request"], goal=data["goal"], slots=slots,
                   confirm=data.get("confirm", cls.confirm), fallback=data.get("fallback"),
                   follow_ups=list(data.get("follow_ups", [])), persona=data.get("persona", ""))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9%]+", text.lower()))


class _User:
    def __init__(self, intent: Intent):
        self.intent = intent
        self.transcript: list[dict[str, str]] = [{"role": "user", "content": intent.request}]
        self._next = 0

    def next_turn(self) -> str | None:
        """The user's next scripted message (a follow-up), or None when they have no more."""
        if self._next >= len(self.intent.follow_ups):
            return None
        text = self.intent.follow_ups[self._next]
        self._next += 1
        self.transcript.append({"role": "user", "content": text})
        return text

    def answer(self, question: str) -> str:
        reply = self._reply(str(question))
        self.transcript += [{"role": "agent", "content": str(question)}, {"role": "user", "content": reply}]
        return reply

    def remind(self, unmet: list[str]) -> str:
        """The next turn after the agent stopped short: only `unmet` (each clause in words)."""
        if not unmet:
            raise ValueError("remind() needs at least one unmet clause")
        text = self._remind([u.strip().rstrip(".") for u in unmet])
        self.transcript.append({"role": "user", "content": text})
        return text

    def fork(self) -> _User:
        """The same user, who has heard the same dialogue; what either hears next is its own."""
        twin = copy.copy(self)
        twin.transcript = list(self.transcript)
        return twin

    def _reply(self, question: str) -> str:
        raise NotImplementedError

    def _remind(self, unmet: list[str]) -> str:
        raise NotImplementedError

    @property
    def questions(self) -> int:
        return sum(1 for turn in self.transcript if turn["role"] == "agent")


class ScriptedUser(_User):
    """Deterministic answers from the intent's slots (see the module docstring)."""

    def __init__(self, intent: Intent, patience: int = 3):
        super().__init__(intent)
        self.patience = patience

    def _reply(self, question: str) -> str:
        if self.questions >= self.patience:
            return "I've told you what I want; please go ahead with what you have."
        if _CONFIRM.search(question):
            return self.intent.confirm
        asked = _words(question)
        named = [slot.value for name, slot in self.intent.slots.items()
                 if asked & ({name.lower(), *name.lower().split("_")} | set(slot.keywords))]
        if named:
            return "; ".join(named) + "."
        return self.intent.fallback or f"I'd like you to {self.intent.goal}."

    def _remind(self, unmet: list[str]) -> str:
        # The request on a paragraph of its own, as a first turn's is (a solver reads the last one).
        request = "; ".join(unmet)
        return f"{REMIND}\n\n{request[0].upper()}{request[1:]}."


REMIND = "That isn't all done yet."
REMIND_PROMPT = ("Your assistant has finished its turn, but this is still not done: {unmet}. Tell it, in one or "
                 "two short sentences, only what is still to do; do not repeat what is already done.")

USER_PROMPT = (
    "You are the resident of a smart home talking to its assistant. {persona}You asked: \"{request}\". "
    "What you actually want (do not say it all at once; answer only what you are asked): {goal}. "
    "{slots}Answer the assistant's question in one short sentence, as a person would. If it asks "
    "for confirmation of what you want, confirm; if it proposes something else, say what you want instead.")


class LLMUser(_User):
    """The same intent played by a model behind an OpenAI-compatible chat endpoint."""

    def __init__(self, intent: Intent, model: str, base_url: str | None = None, api_key: str | None = None,
                 client: Any = None, seed: int = 0, timeout: float = 60.0):
        super().__init__(intent)
        if client is None:
            import openai
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout)
        self.client = client
        self.model = model
        self.seed = seed

    def system_prompt(self) -> str:
        i = self.intent
        slots = "".join(f"Your {name.replace('_', ' ')}: {slot.value}. " for name, slot in i.slots.items())
        return USER_PROMPT.format(persona=f"{i.persona} " if i.persona else "", request=i.request,
                                  goal=i.goal, slots=slots)

    def _reply(self, question: str) -> str:
        return self._say(question)

    def _remind(self, unmet: list[str]) -> str:
        return self._say(REMIND_PROMPT.format(unmet="; ".join(unmet)))

    def _say(self, cue: str) -> str:
        # The model plays the user, so the agent's questions (and our cues) are its "user" turns.
        messages = [{"role": "system", "content": self.system_prompt()}]
        for turn in self.transcript[1:]:
            messages.append({"role": "assistant" if turn["role"] == "user" else "user", "content": turn["content"]})
        messages.append({"role": "user", "content": cue})
        reply = self.client.chat.completions.create(model=self.model, messages=messages, temperature=0.0,
                                                    seed=self.seed)
        return (reply.choices[0].message.content or "").strip()


__all__ = ["Intent", "LLMUser", "ScriptedUser", "Slot"]
