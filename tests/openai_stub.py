"""A real local HTTP server speaking the OpenAI chat completions API, replaying scripted turns.

    with OpenAIStub(["A", {"tool_calls": [("get_rooms", {})]}, lambda request: "..."]) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="test")

Each POST /v1/chat/completions takes the next scripted turn. A turn is a string (assistant
text), a dict {"content": ..., "tool_calls": [(name, arguments), ...]}, or a callable that
gets the request body and returns one of those (to answer from what the agent observed).
Requests are kept in `stub.requests`. It binds 127.0.0.1 only.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = Any


class OpenAIStub:
    def __init__(self, turns: list[Turn], usage: tuple[int, int] = (11, 7)):
        self.turns = list(turns)
        self.usage = usage
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            if not self.turns:
                raise IndexError("the script has no turn left")
            turn = self.turns.pop(0)
        if callable(turn):
            turn = turn(body)
        if isinstance(turn, str):
            turn = {"content": turn}
        message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
        if turn.get("tool_calls"):
            message["tool_calls"] = [
                {"id": f"call_{len(self.requests)}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(turn["tool_calls"])]
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if turn.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1],
                      "total_tokens": sum(self.usage)},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    payload = stub._next(body)
                except Exception as exc:  # a broken script shows up as a server error in the test
                    return self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                self._send(200, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


def last_observation(body: dict[str, Any]) -> Any:
    """The JSON of the newest observation the agent sent (JSON protocol or tool message)."""
    message = body["messages"][-1]
    text = message["content"]
    if text.startswith("Observation: "):
        text = text[len("Observation: "):]
    return json.loads(text)


Script = list[Turn | Callable[[dict[str, Any]], Turn]]
