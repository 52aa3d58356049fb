"""The simulated user: scripted from a hidden intent, or an LLM through an OpenAI-compatible endpoint."""
from __future__ import annotations

import openai
import pytest

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from tests.openai_stub import OpenAIStub
from twin.home import Home
from twin.user import Intent, LLMUser, ScriptedUser, Slot

pytestmark = pytest.mark.unit

INTENT = Intent(request="Make it cosy in here", goal="dim the living room light to about 30 %",
                slots={"room": Slot("The living room", ["where"]), "level": Slot("About 30 %", ["bright", "dim"])},
                follow_ups=["Actually, make it 20 %."])


def test_scripted_answers_come_from_the_slots_and_repeat():
    runs = []
    for _ in range(2):
        user = ScriptedUser(INTENT)
        runs.append([user.answer("Which room are you in?"), user.answer("How bright should it be?"),
                     user.answer("Should I dim the ceiling light?"), user.answer("Anything else?")])
    assert runs[0] == runs[1] == ["The living room.", "About 30 %.", "Yes, please go ahead.",
                                  "I've told you what I want; please go ahead with what you have."]
    user = ScriptedUser(INTENT, patience=5)
    assert user.answer("Where and how dim?") == "The living room; About 30 %."
    assert user.answer("What do you mean?") == "I'd like you to dim the living room light to about 30 %."
    assert user.next_turn() == "Actually, make it 20 %." and user.next_turn() is None
    assert [t["role"] for t in user.transcript] == ["user", "agent", "user", "agent", "user", "user"]


def test_ask_user_is_answered_by_it():
    user = ScriptedUser(Intent.from_json({"request": "Lights on", "goal": "turn on the bedroom light",
                                          "slots": {"room": "The bedroom"}}))
    session = Session(ask_user=user.answer)
    result = call_tool(TwinBackend(Home.default()), "ask_user", {"question": "Which room?"}, session)
    assert result == {"ok": True, "question": "Which room?", "answer": "The bedroom."}


def test_llm_user_plays_the_intent_through_the_chat_api():
    with OpenAIStub(["The living room, please."]) as stub:
        user = LLMUser(INTENT, "user-model", client=openai.OpenAI(base_url=stub.base_url, api_key="t"), seed=3)
        assert user.answer("Which room?") == "The living room, please."
    request = stub.requests[0]
    system = request["messages"][0]["content"]
    assert "Make it cosy in here" in system and "about 30 %" in system and "The living room" in system
    assert request["messages"][-1] == {"role": "user", "content": "Which room?"}
    assert request["temperature"] == 0 and request["seed"] == 3


def test_a_later_turn_names_only_what_is_unmet_and_a_fork_hears_its_own():
    user = ScriptedUser(INTENT)
    user.answer("Which room?")
    branch = user.fork()
    assert branch.remind(["set the lamp to 30% brightness.", "turn off the fan"]) == \
        "That isn't all done yet.\n\nSet the lamp to 30% brightness; turn off the fan."
    assert len(branch.transcript) == 4 and len(user.transcript) == 3   # the fork's turn is its own
    with pytest.raises(ValueError, match="at least one unmet clause"):
        user.remind([])


def test_llm_user_says_what_is_unmet_in_its_own_words():
    with OpenAIStub(["You still need to turn off the fan."]) as stub:
        user = LLMUser(INTENT, "user-model", client=openai.OpenAI(base_url=stub.base_url, api_key="t"))
        assert user.remind(["turn off the fan"]) == "You still need to turn off the fan."
    cue = stub.requests[0]["messages"][-1]["content"]
    assert "still not done: turn off the fan" in cue and "only what is still to do" in cue
    assert user.transcript[-1] == {"role": "user", "content": "You still need to turn off the fan."}
