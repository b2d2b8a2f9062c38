"""The API key never reaches an error message, whatever shape it arrives in."""

from __future__ import annotations

from agentcore.llm import StreamOptions
from tests.support.flavours import Flavour
from tests.support.http_script_server import Reply, ScriptServer, chat_model

from .harness import one_call

KEY = "sk-proj-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij"


def test_a_key_with_a_line_break_is_cleaned_and_never_quoted(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(status=401, body=b'{"error": {"message": "bad key", "type": "auth"}}',
                     content_type="application/json"))
    out = one_call(flavour, chat_model(server.url), StreamOptions(api_key=KEY + "\n"), max_retries=0)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in (out.error or "")


def test_a_key_that_cannot_be_a_header_is_an_error_naming_no_key(flavour: Flavour, server: ScriptServer) -> None:
    out = one_call(flavour, chat_model(server.url), StreamOptions(api_key=KEY + "\u2019"), max_retries=0)
    assert out.error == ("The API key for provider openai contains characters an HTTP header cannot carry "
                         "(a line break, a control or non-ASCII character): check where it is read from")
    assert server.attempts == 0


def test_a_key_echoed_in_a_long_non_json_error_body_is_redacted(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(status=401, body=b"x" * 280 + b" your key " + KEY.encode(), content_type="text/plain"))
    out = one_call(flavour, chat_model(server.url), StreamOptions(api_key=KEY), max_retries=0)
    assert out.error is not None and "[REDACTED]" in out.error
    assert KEY[:8] not in out.error.replace("[REDACTED]", "")


def test_an_unencodable_payload_is_an_error_not_an_exception(flavour: Flavour, server: ScriptServer) -> None:
    options = StreamOptions(api_key="k", on_payload=lambda body, model: {"x": object()})
    out = one_call(flavour, chat_model(server.url), options, max_retries=0)
    assert out.reason == "error"
    assert out.error is not None and out.error.startswith("Could not build the HTTP request: TypeError:")
    assert server.attempts == 0
