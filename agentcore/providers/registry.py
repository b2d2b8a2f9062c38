"""The codec of each wire API, by the ``Model.api`` name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..llm import LlmContext, StreamOptions
from ..messages import Model
from . import anthropic, google, openai_chat, openai_responses
from .base import HttpRequest, StreamDecoder

__all__ = ["CODECS", "Codec", "codec_for"]


@dataclass(frozen=True, slots=True)
class Codec:
    """The three pure functions of one wire API."""

    api: str
    build_request: Callable[[Model, LlmContext, StreamOptions], HttpRequest]
    decoder: Callable[..., StreamDecoder]
    decode_error_response: Callable[[int, Any, bytes], str]

    def new_decoder(self, model: Model, *, timestamp: int = 0) -> StreamDecoder:
        return self.decoder(model, timestamp=timestamp)


CODECS: Mapping[str, Codec] = MappingProxyType({
    "openai-completions": Codec("openai-completions", openai_chat.build_request,
                                openai_chat.OpenAIChatDecoder, openai_chat.decode_error_response),
    "openai-responses": Codec("openai-responses", openai_responses.build_request,
                              openai_responses.OpenAIResponsesDecoder,
                              openai_responses.decode_error_response),
    "anthropic-messages": Codec("anthropic-messages", anthropic.build_request,
                                anthropic.AnthropicDecoder, anthropic.decode_error_response),
    "google-generative-ai": Codec("google-generative-ai", google.build_request,
                                  google.GoogleDecoder, google.decode_error_response),
})


def codec_for(api: str) -> Codec:
    """The codec for ``api``; ``KeyError`` listing the known APIs otherwise."""
    try:
        return CODECS[api]
    except KeyError:
        raise KeyError(f"No codec for api {api!r}; known: {', '.join(CODECS)}") from None
