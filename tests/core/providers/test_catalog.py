from __future__ import annotations

import pytest

from agentcore.messages import Usage
from agentcore.providers import (
    CODECS,
    ENV_KEYS,
    MODELS,
    codec_for,
    custom_openai_model,
    get_model,
    list_models,
    usage_with_cost,
)


def test_catalog_contents() -> None:
    for provider, ids in {
        "openai": ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5",
                   "gpt-5-mini"],
        "anthropic": ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5",
                      "claude-3-7-sonnet"],
        "google": ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"],
    }.items():
        for id in ids:
            m = get_model(provider, id)
            assert m.api in CODECS and m.base_url.startswith("https://")
            assert m.cost.input > 0 and m.cost.output > m.cost.input
            assert m.context_window > 0 and 0 < m.max_tokens <= m.context_window
            assert "image" in m.input
    assert get_model("openai", "o3").reasoning and not get_model("openai", "gpt-4o").reasoning
    assert len(list_models("google")) == 3 and len(list_models()) == len(MODELS)


def test_unknown_model_lists_close_matches() -> None:
    with pytest.raises(KeyError, match="did you mean: claude-sonnet-4-5"):
        get_model("anthropic", "claude-sonet-4-5")
    with pytest.raises(KeyError, match="catalog providers"):
        get_model("nope", "x")


def test_custom_openai_model_and_env_keys() -> None:
    m = custom_openai_model("qwen3", "http://gpu:8000/v1", provider="vllm", reasoning=True)
    assert (m.api, m.base_url, m.reasoning) == ("openai-completions", "http://gpu:8000/v1", True)
    assert custom_openai_model("x", provider="openrouter").base_url == "https://openrouter.ai/api/v1"
    with pytest.raises(ValueError):
        custom_openai_model("x", provider="unknown")
    assert ENV_KEYS["openai"] == "OPENAI_API_KEY" and ENV_KEYS["google"] == "GEMINI_API_KEY"
    assert ENV_KEYS["anthropic"] == "ANTHROPIC_API_KEY" and ENV_KEYS["groq"] == "GROQ_API_KEY"
    assert ENV_KEYS["openrouter"] == "OPENROUTER_API_KEY"
    with pytest.raises(KeyError, match="known"):
        codec_for("nope")


def test_usage_with_cost() -> None:
    m = get_model("anthropic", "claude-sonnet-4-5")
    u = usage_with_cost(m, Usage(input=1_000_000, output=100_000, cache_read=1_000_000,
                                 cache_write=1_000_000))
    assert u.cost.input == pytest.approx(3.0) and u.cost.output == pytest.approx(1.5)
    assert u.cost.cache_read == pytest.approx(0.3) and u.cost.cache_write == pytest.approx(3.75)
    assert u.cost.total == pytest.approx(8.55) and u.total_tokens == 3_100_000


def test_providers_package_is_pure() -> None:
    import subprocess
    import sys

    code = ("import sys, agentcore.providers; bad = {'httpx', 'asyncio', 'socket', 'threading',"
            " 'interpreters'} & set(sys.modules); print(sorted(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[3]))
    assert out.stdout.strip() == "[]", out.stderr
