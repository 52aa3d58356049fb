"""Calls to an OpenAI-compatible model API, for agents, judges and policies alike.

A failure of the API itself (nothing listening, a refused key, an unknown model, a server
error) is the harness's, not the model's answer: it is raised as `ModelAPIError`, one line
saying where, and a run stops on it rather than scoring the episode as the agent's failure.
"""
from __future__ import annotations

from typing import Any


class ModelAPIError(RuntimeError):
    """The model's API failed (unreachable, refused the key, unknown model, ...): the
    harness's failure, not the agent's. It stops a run; the episode is not recorded."""



def create_completion(client: Any, kwargs: dict[str, Any]) -> Any:
    """One chat completion; a failure of the API itself (connection, key, model, server) is
    the harness's, raised as ModelAPIError with one line that says where."""
    try:
        return client.chat.completions.create(**kwargs)
    except Exception as exc:
        if type(exc).__module__.split(".")[0] != "openai":
            raise
        where = getattr(client, "base_url", None) or "the default OpenAI endpoint"
        detail = " ".join(str(exc).split())[:300]
        raise ModelAPIError(f"the model API at {where} failed ({type(exc).__name__}: {detail})") from None
