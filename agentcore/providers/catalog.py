"""A catalog of well-known models, as data, and helpers for OpenAI-compatible servers.

Prices are USD per million tokens, as published on the providers' pricing pages (OpenAI
platform pricing, Anthropic "Pricing", Google AI "Gemini Developer API pricing"), taken in
October 2025 and cross-checked with public price tables found by search. They change: pass your
own :class:`ModelCost` through :func:`agentcore.replace` when they do. Gemini 2.5 Pro's
prices are the tier for prompts up to 200k tokens.

>>> m = get_model("anthropic", "claude-sonnet-4-5")
>>> m.api, m.cost.input, m.reasoning
('anthropic-messages', 3.0, True)
>>> get_model("openai", "gpt-4o-mnii")
Traceback (most recent call last):
...
KeyError: "Unknown model 'gpt-4o-mnii' for provider 'openai'; did you mean: gpt-4o-mini, gpt-4.1-mini, gpt-5-mini?"
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from types import MappingProxyType

from ..frozen import freeze
from ..messages import Model, ModelCost

__all__ = [
    "ENV_KEYS",
    "MODELS",
    "PROVIDER_BASE_URLS",
    "custom_openai_model",
    "get_model",
    "list_models",
]

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
GOOGLE_URL = "https://generativelanguage.googleapis.com/v1beta"

#: Base URLs of OpenAI-compatible servers, by provider name.
PROVIDER_BASE_URLS: Mapping[str, str] = MappingProxyType({
    "openai": OPENAI_URL,
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "mistral": "https://api.mistral.ai/v1",
    "xai": "https://api.x.ai/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "together": "https://api.together.xyz/v1",
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "llama.cpp": "http://localhost:8080/v1",
    "lmstudio": "http://localhost:1234/v1",
})

#: The environment variable that usually holds each provider's API key. The core never reads
#: the environment; interpreters use this table.
ENV_KEYS: Mapping[str, str] = MappingProxyType({
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GEMINI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "xai": "XAI_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "azure-openai": "AZURE_OPENAI_API_KEY",
})

_TEXT_IMAGE = ("text", "image")


def _openai(id: str, name: str, *, cost: ModelCost, context: int, max_tokens: int,
            reasoning: bool, api: str = "openai-responses") -> Model:
    return Model(id=id, name=name, api=api, provider="openai", base_url=OPENAI_URL,
                 reasoning=reasoning, input=_TEXT_IMAGE, cost=cost, context_window=context,
                 max_tokens=max_tokens)


def _anthropic(id: str, name: str, *, cost: ModelCost, max_tokens: int,
               reasoning: bool = True) -> Model:
    return Model(id=id, name=name, api="anthropic-messages", provider="anthropic",
                 base_url=ANTHROPIC_URL, reasoning=reasoning, input=_TEXT_IMAGE, cost=cost,
                 context_window=200_000, max_tokens=max_tokens)


def _google(id: str, name: str, *, cost: ModelCost) -> Model:
    return Model(id=id, name=name, api="google-generative-ai", provider="google",
                 base_url=GOOGLE_URL, reasoning=True, input=_TEXT_IMAGE, cost=cost,
                 context_window=1_048_576, max_tokens=65_536)


_ALL: tuple[Model, ...] = (
    # OpenAI (Responses API; every one of them also works with api="openai-completions").
    _openai("gpt-4o", "GPT-4o", cost=ModelCost(2.5, 10.0, 1.25), context=128_000,
            max_tokens=16_384, reasoning=False),
    _openai("gpt-4o-mini", "GPT-4o mini", cost=ModelCost(0.15, 0.6, 0.075), context=128_000,
            max_tokens=16_384, reasoning=False),
    _openai("gpt-4.1", "GPT-4.1", cost=ModelCost(2.0, 8.0, 0.5), context=1_047_576,
            max_tokens=32_768, reasoning=False),
    _openai("gpt-4.1-mini", "GPT-4.1 mini", cost=ModelCost(0.4, 1.6, 0.1), context=1_047_576,
            max_tokens=32_768, reasoning=False),
    _openai("o3", "o3", cost=ModelCost(2.0, 8.0, 0.5), context=200_000, max_tokens=100_000,
            reasoning=True),
    _openai("o4-mini", "o4-mini", cost=ModelCost(1.1, 4.4, 0.275), context=200_000,
            max_tokens=100_000, reasoning=True),
    _openai("gpt-5", "GPT-5", cost=ModelCost(1.25, 10.0, 0.125), context=400_000,
            max_tokens=128_000, reasoning=True),
    _openai("gpt-5-mini", "GPT-5 mini", cost=ModelCost(0.25, 2.0, 0.025), context=400_000,
            max_tokens=128_000, reasoning=True),
    # Anthropic (cache_write is the 5-minute cache write price).
    _anthropic("claude-sonnet-4-5", "Claude Sonnet 4.5", cost=ModelCost(3.0, 15.0, 0.3, 3.75),
               max_tokens=64_000),
    _anthropic("claude-opus-4-1", "Claude Opus 4.1", cost=ModelCost(15.0, 75.0, 1.5, 18.75),
               max_tokens=32_000),
    _anthropic("claude-haiku-4-5", "Claude Haiku 4.5", cost=ModelCost(1.0, 5.0, 0.1, 1.25),
               max_tokens=64_000),
    _anthropic("claude-3-7-sonnet-latest", "Claude Sonnet 3.7",
               cost=ModelCost(3.0, 15.0, 0.3, 3.75), max_tokens=64_000),
    # Google Gemini.
    _google("gemini-2.5-pro", "Gemini 2.5 Pro", cost=ModelCost(1.25, 10.0, 0.31)),
    _google("gemini-2.5-flash", "Gemini 2.5 Flash", cost=ModelCost(0.3, 2.5, 0.075)),
    _google("gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", cost=ModelCost(0.1, 0.4, 0.025)),
)

#: Every catalog model by ``(provider, id)``.
MODELS: Mapping[tuple[str, str], Model] = MappingProxyType({(m.provider, m.id): m for m in _ALL})

_ALIASES: Mapping[tuple[str, str], str] = MappingProxyType({
    ("anthropic", "claude-3-7-sonnet"): "claude-3-7-sonnet-latest",
    ("anthropic", "claude-3-7-sonnet-20250219"): "claude-3-7-sonnet-latest",
    ("anthropic", "claude-sonnet-4-5-20250929"): "claude-sonnet-4-5",
    ("anthropic", "claude-haiku-4-5-20251001"): "claude-haiku-4-5",
    ("anthropic", "claude-opus-4-1-20250805"): "claude-opus-4-1",
})


def list_models(provider: str | None = None) -> tuple[Model, ...]:
    """The catalog models (of one provider when given), in catalog order."""
    return tuple(m for m in _ALL if provider is None or m.provider == provider)


def get_model(provider: str, id: str) -> Model:
    """The catalog model ``id`` of ``provider``. Raises ``KeyError`` naming close matches."""
    key = (provider, _ALIASES.get((provider, id), id))
    model = MODELS.get(key)
    if model is not None:
        return model
    candidates = [m.id for m in _ALL if m.provider == provider]
    if not candidates:
        providers = sorted({m.provider for m in _ALL})
        raise KeyError(f"Unknown provider {provider!r}; catalog providers: {', '.join(providers)}")
    close = difflib.get_close_matches(id, candidates, n=3, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else f"known: {', '.join(candidates)}"
    raise KeyError(f"Unknown model {id!r} for provider {provider!r}; {hint}")


def custom_openai_model(
    id: str,
    base_url: str | None = None,
    *,
    provider: str = "openai-compatible",
    name: str = "",
    reasoning: bool = False,
    images: bool = False,
    context_window: int = 128_000,
    max_tokens: int = 16_384,
    cost: ModelCost | None = None,
    headers: Mapping[str, str] | None = None,
) -> Model:
    """A model served by an OpenAI Chat Completions compatible server (Ollama, vLLM,
    llama.cpp, LM Studio, OpenRouter, Groq...). ``base_url`` defaults to the provider's entry in
    :data:`PROVIDER_BASE_URLS`.

    >>> m = custom_openai_model("llama3.2", provider="ollama")
    >>> m.api, m.base_url
    ('openai-completions', 'http://localhost:11434/v1')
    """
    url = base_url or PROVIDER_BASE_URLS.get(provider)
    if not url:
        raise ValueError(f"custom_openai_model: no base_url given and none known for {provider!r}")
    return Model(
        id=id,
        name=name or id,
        api="openai-completions",
        provider=provider,
        base_url=url,
        reasoning=reasoning,
        input=_TEXT_IMAGE if images else ("text",),
        cost=cost or ModelCost(),
        context_window=context_window,
        max_tokens=max_tokens,
        headers=freeze(dict(headers)) if headers else None,
    )
