"""Every recorded streaming response in the corpus, decoded and checked against the values that
are in the recording (text, thinking, tool calls with arguments, stop reason, usage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from agentcore.frozen import thaw
from agentcore.messages import TextContent, ThinkingContent, ToolCall
from tests.support.corpus import all_files, load, requires_corpus

from .helpers import check_shape, decode

pytestmark = requires_corpus


@dataclass
class Expect:
    stop: str
    text: str | None = None  # exact joined text ("" = no text blocks)
    text_prefix: str | None = None
    thinking_prefix: str | None = None
    thinking_blocks: int | None = None
    tools: list[tuple[str, dict[str, Any]]] | None = None
    tool_ids: list[str] | None = None
    usage: tuple[int, int, int, int] | None = None  # input, output, cache_read, cache_write
    error: str | None = None  # substring of error_message
    response_id: str | None = None
    signature: bool | None = None  # thinking blocks carry a signature
    thought_signature: bool | None = None  # first tool call carries a thought signature
    extra: dict[str, Any] = field(default_factory=dict)


OC = "openai_chat"
OX = "openai_compatible"
OR = "openai_responses"
AN = "anthropic"
GE = "gemini"

CASES: dict[tuple[str, int], Expect] = {
    # ---------------------------------------------------------------- OpenAI Chat Completions
    (f"{OC}/llm__test_tool_use_basic.yaml", 0): Expect(
        "toolUse", text="", tools=[("multiply", {"a": 1231, "b": 2331})],
        tool_ids=["call_1EYWDzueHEp8OsB8jJSEp7WB"], usage=(54, 20, 0, 0),
        response_id="chatcmpl-BWlJBDk2xe66hjff60joVYpXi1hh4"),
    (f"{OC}/llm__test_tool_use_basic.yaml", 1): Expect(
        "stop", text="The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).", tools=[],
        usage=(87, 26, 0, 0)),
    (f"{OC}/fantasy__TestOpenAICommon_openai-gpt-4o_multi_tool_streaming.yaml", 0): Expect(
        "toolUse", text="", tools=[("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})],
        tool_ids=["call_ehIWdjL1abZk1h8FWGLQ0Hie", "call_fBSgA47J5VeONggizTIvl7AH"],
        usage=(106, 50, 0, 0)),
    (f"{OC}/fantasy__TestOpenAICommon_openai-gpt-4o_multi_tool_streaming.yaml", 1): Expect(
        "stop", text="The sum of 2 and 3 is 5, and the product is 6.", usage=(172, 20, 0, 0)),
    (f"{OC}/fantasy__TestOpenAICommon_openai-gpt-5_tool_streaming.yaml", 0): Expect(
        "toolUse", text="", tools=[("weather", {"location": "Florence, Italy"})],
        usage=(145, 89, 0, 0), extra={"reasoning_tokens": 64}),
    (f"{OC}/fantasy__TestOpenAICommon_openai-gpt-5_tool_streaming.yaml", 1): Expect(
        "stop", text="It’s currently about 40°C (104°F) in Florence, Italy. Want a forecast or "
        "more details like wind and humidity?", usage=(176, 228, 0, 0),
        extra={"reasoning_tokens": 192}),
    (f"{OC}/fantasy__TestOpenAICommon_openai-o4-mini_tool_streaming.yaml", 0): Expect(
        "toolUse", tools=[("weather", {"location": "Florence, Italy"})], usage=(64, 89, 0, 0),
        extra={"reasoning_tokens": 64}),
    (f"{OC}/fantasy__TestOpenAICommon_openai-o4-mini_tool_streaming.yaml", 1): Expect(
        "stop", text="The current temperature in Florence, Italy is 40°C.", usage=(95, 24, 0, 0)),
    (f"{OC}/pydantic-ai__test_run_stream_sync_streams_real_model.yaml", 0): Expect(
        "toolUse", tools=[("get_capital", {"country": "UK"})], usage=(53, 15, 0, 0)),
    (f"{OC}/pydantic-ai__test_run_stream_sync_streams_real_model.yaml", 1): Expect(
        "stop", text="The capital of the UK is London.", usage=(78, 9, 0, 0)),
    (f"{OC}/pydantic-ai__test_complex_agent_run.yaml", 0): Expect(
        "toolUse", text="", tools=[("get_country", {}), ("get_product_name", {})],
        tool_ids=["call_q2UyBRP7eXNTzAoR8lEhjc9Z", "call_b51ijcpFkDiTQG1bQzsrmtW5"],
        usage=(364, 40, 0, 0)),
    (f"{OC}/pydantic-ai__test_complex_agent_run.yaml", 1): Expect(
        "toolUse", tools=[("get_weather", {"city": "Mexico City"})], usage=(423, 15, 0, 0)),
    (f"{OC}/pydantic-ai__test_complex_agent_run.yaml", 2): Expect(
        "toolUse", usage=(448, 62, 0, 0),
        extra={"tool_name": "final_result",
               "first_answer": {"label": "Capital",
                                "answer": "The capital of Mexico is Mexico City."}}),
    (f"{OC}/dd-trace-py__completion_stream_multiple_choices_with_tools.yaml", 0): Expect(
        "toolUse", text="",
        tools=[("get_current_weather", {"location": "San Francisco, CA"})],
        tool_ids=["call_ZLW6rwgBZAlsBPJv2F9O3zhz"], usage=(85, 43, 0, 0)),
    (f"{OC}/dd-trace-py__chat_completion_stream_prompt_caching_cache_read.yaml", 0): Expect(
        "length", text_prefix="Structuring a database schema effectively is crucial",
        usage=(140, 100, 1280, 0)),
    (f"{OC}/dd-trace-py__azure_chat_completion_streamed.yaml", 0): Expect(
        "stop", text="I'm unable to provide real-time weather updates. To find the current weather "
        "in New York City, I recommend checking a reliable weather website or app for the most "
        "accurate and up-to-date information.", usage=(0, 0, 0, 0),
        response_id="chatcmpl-BuBnK8LTKUtp70pLip5ZGv7HUzYPj"),
    # ---------------------------------------------------------------- OpenAI-compatible
    (f"{OX}/llm__test_tools_streaming_variant_a.yaml", 0): Expect(
        "toolUse", text="", tools=[("llm_version", {})], tool_ids=["0"], usage=(57, 17, 0, 0)),
    (f"{OX}/llm__test_tools_streaming_variant_a.yaml", 1): Expect(
        "stop", text="The current version of *llm* is **0.fixed-version**.",
        usage=(107, 15, 0, 0)),
    (f"{OX}/llm__test_tools_streaming_variant_c.yaml", 0): Expect(
        "toolUse", text="", tools=[("llm_version", {})], tool_ids=["llm_version:0"],
        usage=(56, 12, 0, 0)),
    (f"{OX}/llm__test_tools_streaming_variant_c.yaml", 1): Expect(
        "stop", text="The installed version of LLM on this system is 0.fixed-version.",
        usage=(105, 16, 0, 0)),
    (f"{OX}/langchaingo__TestOpenRouterStreaming.httprr", 0): Expect(
        "stop", text="test response", usage=(586, 3, 0, 0),
        response_id="gen-1754667632-NNYO7FUAFP6cwNW8jL7x"),
    (f"{OX}/pydantic-ai__test_deepseek_model_thinking_stream.yaml", 0): Expect(
        "stop", text="Hello there! 😊 How can I help you today?",
        thinking_prefix='Hmm, the user just said "Hello".', thinking_blocks=1,
        usage=(6, 212, 0, 0)),
    (f"{OX}/pydantic-ai__test_openrouter_stream_error.yaml", 0): Expect(
        "error", error="Token limit reached",
        thinking_prefix="We need to respond to a greeting. The user"),
    (f"{OX}/pydantic-ai__test_tool_use_failed_error_streaming.yaml", 0): Expect(
        "error", error="Tool call validation failed", thinking_prefix="We need to call the tool",
        extra={"error_code": "tool_use_failed"}),
    (f"{OX}/pydantic-ai__test_tool_use_failed_error_streaming.yaml", 1): Expect(
        "toolUse", tools=[("get_something_by_name", {"name": "example"})],
        tool_ids=["fc_bfb39741-3748-4def-9886-a93fc9c64a90"],
        thinking_prefix='We need to call the function with correct parameter "name".',
        usage=(304, 49, 0, 0)),
    (f"{OX}/pydantic-ai__test_tool_use_failed_error_streaming.yaml", 2): Expect(
        "stop", text="The tool returned the expected result for the valid call.",
        thinking_prefix="The user wants to test error handling", usage=(339, 58, 0, 0)),
    # ---------------------------------------------------------------- OpenAI Responses
    (f"{OR}/llm__test_responses_tool_use_streaming.yaml", 0): Expect(
        "toolUse", text="", tools=[("multiply", {"a": 1231, "b": 2331})],
        tool_ids=["call_sVidsfFJ6zlzRpelrPkTPlpd"], usage=(58, 23, 0, 0)),
    (f"{OR}/llm__test_responses_tool_use_streaming.yaml", 1): Expect(
        "stop", text="1231 × 2331 = **2,869,461**", usage=(94, 18, 0, 0)),
    (f"{OR}/dd-trace-py__response_function_call_streamed.yaml", 0): Expect(
        "toolUse", tools=[("get_current_weather", {"location": "Boston, MA", "unit": "celsius"})],
        usage=(75, 23, 0, 0),
        response_id="resp_682c9421a0b881918d920a1c0ad7a6250b603284be451166"),
    (f"{OR}/dd-trace-py__response_stream_incomplete.yaml", 0): Expect(
        "length", text="In the bustling city of Detroit, a sleek, metallic blue sedan rolled off the"),
    (f"{OR}/fantasy__TestOpenAIResponsesCommon_openai-gpt-4o_multi_tool_streaming.yaml", 0): Expect(
        "toolUse", text="", tools=[("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})],
        usage=(104, 51, 0, 0)),
    (f"{OR}/fantasy__TestOpenAIResponsesCommon_openai-gpt-4o_multi_tool_streaming.yaml", 1): Expect(
        "stop", text="The sum of 2 and 3 is 5, and their product is 6.", usage=(150, 21, 0, 0)),
    (f"{OR}/fantasy__TestOpenAIResponsesWithSummaryThinking_openai-o4-mini_thinking-streaming.yaml", 0): Expect(
        "toolUse", tools=[("weather", {"location": "Florence, Italy"})], thinking_blocks=1,
        signature=True, usage=(60, 225, 0, 0)),
    (f"{OR}/fantasy__TestOpenAIResponsesWithSummaryThinking_openai-o4-mini_thinking-streaming.yaml", 1): Expect(
        "stop", thinking_prefix="**Summarizing Florence's weather**\n\nThe user asked about",
        text_prefix="The current temperature in Florence, Italy is 40 °C", signature=True,
        usage=(89, 196, 0, 0)),
    (f"{OR}/pydantic-ai__test_openai_responses_streaming_usage.yaml", 0): Expect(
        "toolUse", tools=[("final_result", {"result": 6666})], thinking_blocks=1,
        signature=True, usage=(53, 469, 0, 0), extra={"reasoning_tokens": 448}),
    (f"{OR}/pydantic-ai__test_openai_responses_phase_streamed_on_part_start.yaml", 0): Expect(
        "toolUse", text="I’ll check the capital lookup tool for “PotatoLand.”",
        tools=[("get_capital", {"country": "PotatoLand"})], usage=(63, 69, 0, 0)),
    (f"{OR}/pydantic-ai__test_openai_responses_phase_streamed_on_part_start.yaml", 1): Expect(
        "stop", text="The capital of PotatoLand is **Potato City**.", usage=(147, 16, 0, 0)),
    (f"{OR}/pydantic-ai__test_openai_responses_stream.yaml", 0): Expect(
        "toolUse", tools=[("get_capital", {"country": "France"})], usage=(255, 16, 0, 0)),
    (f"{OR}/pydantic-ai__test_openai_responses_stream.yaml", 1): Expect(
        "stop", text="The capital of France is Paris.", usage=(278, 9, 0, 0)),
    (f"{OR}/vercel-ai__openai-error.1.chunks.txt", 0): Expect(
        "error", error="You exceeded your current quota", extra={"error_code": "insufficient_quota"}),
    # ---------------------------------------------------------------- Anthropic
    (f"{AN}/llm-anthropic__test_stream_events_tool_calls.yaml", 0): Expect(
        "toolUse", text="", tools=[("pelican_name_generator", {})],
        tool_ids=["toolu_01CzN6riCPqw4pVSuTd9Dwn7"], usage=(543, 40, 0, 0),
        response_id="msg_01BnVamfF7ccY9Qt3nZHAyaG"),
    (f"{AN}/llm-anthropic__test_fixed_version_tool_chain_with_thinking_display_regression.yaml", 0): Expect(
        "toolUse", tools=[("fixed_version", {})], thinking_prefix="The user wants me to:\n1. Use the "
        "fixed_version tool", thinking_blocks=1, signature=True, usage=(598, 92, 0, 0)),
    (f"{AN}/llm-anthropic__test_fixed_version_tool_chain_with_thinking_display_regression.yaml", 1): Expect(
        "stop", text_prefix="The version is **0.32a0**.", usage=(707, 89, 0, 0)),
    (f"{AN}/llm-anthropic__test_prompt_with_prefill_and_stop_sequences.yaml", 0): Expect(
        "stop", text='\ndef pelican():\n    return "A large waterbird with a long bill and a '
        'throat pouch for catching fish."\n', usage=(16, 28, 0, 0)),
    (f"{AN}/fantasy__TestAnthropicCommon_claude-sonnet-4_multi_tool_streaming.yaml", 0): Expect(
        "toolUse", text="I'll add and multiply the numbers 2 and 3 for you.",
        tools=[("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})],
        tool_ids=["toolu_01UYxUYC2zRPY8wiutnF48eP", "toolu_01VaRx1jpWCvPhi7L4kywAcd"],
        usage=(502, 137, 0, 0)),
    (f"{AN}/fantasy__TestAnthropicCommon_claude-sonnet-4_multi_tool_streaming.yaml", 1): Expect(
        "stop", text="The results are:\n- 2 + 3 = 5\n- 2 × 3 = 6", usage=(700, 31, 0, 0)),
    (f"{AN}/fantasy__TestAnthropicThinking_claude-sonnet-4_thinking-streaming.yaml", 0): Expect(
        "toolUse", tools=[("weather", {"location": "Florence, Italy"})],
        thinking_prefix="The user is asking for weather information for Florence, Italy.",
        signature=True, usage=(424, 119, 0, 0)),
    (f"{AN}/fantasy__TestAnthropicThinking_claude-sonnet-4_thinking-streaming.yaml", 1): Expect(
        "stop", text_prefix="The current weather in Florence, Italy is 40°C (104°F).",
        usage=(558, 51, 0, 0)),
    (f"{AN}/fantasy__TestGoogleCommon_vertex-claude-3-7-sonnet_tool_streaming.yaml", 0): Expect(
        "toolUse", text="I'll help you check the weather in Florence, Italy. Let me get that "
        "information for you right away.", tools=[("weather", {"location": "Florence,Italy"})],
        tool_ids=["toolu_vrtx_01JhPy9eXqgjLWmUpoCiEkCs"], usage=(394, 76, 0, 0)),
    (f"{AN}/fantasy__TestGoogleCommon_vertex-claude-3-7-sonnet_tool_streaming.yaml", 1): Expect(
        "stop", text_prefix="Currently, the weather in Florence, Italy is 40 degrees Celsius",
        usage=(484, 65, 0, 0)),
    (f"{AN}/pydantic-ai__test_anthropic_model_thinking_part_stream.yaml", 0): Expect(
        "stop", thinking_prefix="This is a straightforward question about pedestrian safety.",
        text_prefix="Here are the basic steps for safely crossing the street:", signature=True,
        usage=(43, 282, 0, 0)),
    (f"{AN}/pydantic-ai__test_anthropic_model_thinking_part_redacted_stream.yaml", 0): Expect(
        "stop", text_prefix="I notice that you've sent what appears to be some kind of test string",
        thinking_blocks=2, signature=True, usage=(92, 189, 0, 0),
        extra={"redacted": 2, "signature_prefix": "EqkECkYIBxgCKkA8AZ4noDfV5VcOJe"}),
    (f"{AN}/pydantic-ai__test_anthropic_native_tool_search_streaming.yaml", 0): Expect(
        "toolUse", text="Let me search for a tool that can provide current exchange rate "
        "information.I found the right tool! Let me fetch the current USD to EUR exchange rate "
        "for you.", tools=[("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"})],
        usage=(1591, 175, 0, 0)),
    (f"{AN}/pydantic-ai__test_anthropic_native_tool_search_streaming.yaml", 1): Expect(
        "stop", text_prefix="The current exchange rate is **1 USD = 0.92 EUR**.",
        usage=(1007, 59, 0, 0)),
    (f"{AN}/pydantic-ai__test_anthropic_web_fetch_tool_stream.yaml", 0): Expect(
        "stop", tools=[], thinking_prefix="The user wants me to fetch the content from the URL",
        text="Pydantic AI is a Python agent framework designed to help you quickly, confidently, "
        "and painlessly build production grade applications and workflows with Generative AI.",
        signature=True, usage=(7244, 153, 0, 0)),
    (f"{AN}/dd-trace-py__anthropic_completion_tools_stream.yaml", 0): Expect(
        "toolUse", text_prefix="<thinking>\nThe get_weather tool is relevant",
        tools=[("get_weather", {"location": "San Francisco, CA"})], usage=(599, 135, 0, 0)),
    (f"{AN}/dd-trace-py__anthropic_completion_stream.yaml", 0): Expect(
        "length", text='The phrase "I think, therefore I am" (originally in Latin as',
        usage=(27, 15, 0, 0)),
    (f"{AN}/vercel-ai__anthropic-tool-no-args.chunks.txt", 0): Expect(
        "toolUse", text="I'll update the issue list for you.", tools=[("updateIssueList", {})],
        usage=(565, 48, 0, 0)),
    # ---------------------------------------------------------------- Gemini
    (f"{GE}/fantasy__TestGoogleCommon_gemini-2.5-flash_multi_tool_streaming.yaml", 0): Expect(
        "toolUse", text="", tools=[("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})],
        thought_signature=True, usage=(121, 74, 0, 0), response_id="XQCzaYWvIqfRz7IPupTlyAk"),
    (f"{GE}/fantasy__TestGoogleCommon_gemini-2.5-flash_multi_tool_streaming.yaml", 1): Expect(
        "stop", text="The sum of 2 and 3 is 5. The product of 2 and 3 is 6.",
        usage=(218, 22, 0, 0)),
    (f"{GE}/fantasy__TestGoogleCommon_gemini-3-pro-preview_multi_tool_streaming.yaml", 0): Expect(
        "toolUse", tools=[("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})],
        tool_ids=["8hd01vsf", "k0srpqrc"], thought_signature=True, usage=(157, 470, 0, 0)),
    (f"{GE}/fantasy__TestGoogleCommon_gemini-3-pro-preview_multi_tool_streaming.yaml", 1): Expect(
        "stop", text="The sum of 2 and 3 is 5, and their product is 6.", usage=(646, 39, 0, 0),
        extra={"text_signature": True}),
    (f"{GE}/fantasy__TestGoogleCommon_vertex-gemini-2-5-flash_tool_streaming.yaml", 0): Expect(
        "toolUse", tools=[("weather", {"location": "Florence,Italy"})], thought_signature=True,
        usage=(28, 56, 0, 0)),
    (f"{GE}/fantasy__TestGoogleCommon_vertex-gemini-2-5-flash_tool_streaming.yaml", 1): Expect(
        "stop", text="The weather in Florence, Italy is 40 C.", usage=(89, 12, 0, 0)),
    (f"{GE}/fantasy__TestGoogleThinking_gemini-2.5-pro_thinking-streaming.yaml", 0): Expect(
        "toolUse", tools=[("weather", {"location": "Florence, Italy"})],
        thinking_prefix="**Mapping the Inquiry**", thought_signature=True, usage=(54, 78, 0, 0)),
    (f"{GE}/fantasy__TestGoogleThinking_gemini-2.5-pro_thinking-streaming.yaml", 1): Expect(
        "stop", text="It's 40 C in Florence, Italy. \n", usage=(148, 12, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_streaming_tool_call_thought_signature.yaml", 0): Expect(
        "toolUse", tools=[("get_country", {})], thought_signature=True, usage=(29, 212, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_streaming_tool_call_thought_signature.yaml", 1): Expect(
        "stop", text="The capital of Mexico is Mexico City.", usage=(257, 8, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_model_iter_stream.yaml", 0): Expect(
        "toolUse", tools=[("get_capital", {"country": "France"})], usage=(52, 5, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_model_iter_stream.yaml", 1): Expect(
        "toolUse", tools=[("get_temperature", {"city": "Paris"})], usage=(64, 5, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_model_iter_stream.yaml", 2): Expect(
        "stop", text="The temperature in Paris is 30°C.\n", usage=(79, 12, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_model_thinking_part_iter.yaml", 0): Expect(
        "stop", thinking_prefix="**Clarifying User Goals**", thinking_blocks=1,
        text_prefix="This is a great question! Safely crossing the street",
        usage=(34, 1256, 0, 0)),
    (f"{GE}/llm-gemini__test_tools.yaml", 0): Expect(
        "toolUse", tools=[("pelican_name_generator", {})],
        thinking_prefix="**Generating Pelican Names**", thought_signature=True, usage=(32, 54, 0, 0)),
    (f"{GE}/llm-gemini__test_tools.yaml", 1): Expect(
        "toolUse", tools=[("pelican_name_generator", {})], usage=(105, 13, 0, 0)),
    (f"{GE}/llm-gemini__test_tools.yaml", 2): Expect(
        "stop", text="How about Charles and Sammy?", usage=(137, 6, 0, 0)),
    (f"{GE}/llm-gemini__test_tools_with_gemini_3_thought_signatures.yaml", 0): Expect(
        "toolUse", tools=[("multiply", {"x": 5, "y": 3})], thought_signature=True,
        usage=(60, 48, 0, 0)),
    (f"{GE}/llm-gemini__test_tools_with_gemini_3_thought_signatures.yaml", 1): Expect(
        "stop", text="5 times 3 is 15.", usage=(121, 9, 0, 0)),
    (f"{GE}/pydantic-ai__test_google_model_max_tokens_thinking_model_empty_response.yaml", 0): Expect(
        "length", text="", tools=[], usage=(15, 2, 0, 0)),
    (f"{GE}/vercel-ai__google-stream-tool-call-arguments.chunks.txt", 0): Expect(
        "toolUse", tools=[("getWeather", {"location": "Boston"}),
                          ("getWeather", {"location": "San Francisco"})],
        thought_signature=True, usage=(26, 155, 0, 0)),
}


def _streams() -> list[tuple[str, int]]:
    out = []
    for f in all_files():
        if f.startswith(("openai_chat/", "openai_compatible/", "openai_responses/", "anthropic/",
                         "gemini/")):
            for i, it in enumerate(load(f)):
                if it.status == 200:
                    out.append((f, i))
    return out


def test_every_streaming_recording_has_expectations() -> None:
    streams = set(_streams())
    # The vercel reasoning file holds four concatenated streams; it has its own test below.
    streams.discard(("openai_responses/vercel-ai__openai-reasoning-encrypted-content.1.chunks.txt", 0))
    missing = sorted(streams - set(CASES))
    assert not missing, f"recordings without expectations: {missing}"


@pytest.mark.parametrize("key", sorted(CASES), ids=lambda k: f"{k[0].split('/')[-1]}[{k[1]}]")
def test_recorded_stream(key: tuple[str, int]) -> None:
    path, index = key
    exp = CASES[key]
    folder = path.split("/")[0]
    it = load(path)[index]
    events = decode(folder, it.body)
    msg = check_shape(events)
    assert msg.stop_reason == exp.stop, msg.error_message
    if exp.error is not None:
        assert msg.error_message is not None and exp.error in msg.error_message
        if "error_code" in exp.extra:
            assert exp.extra["error_code"] in msg.error_message
    else:
        assert msg.error_message is None
    texts = [b for b in msg.content if isinstance(b, TextContent)]
    thinking = [b for b in msg.content if isinstance(b, ThinkingContent)]
    calls = [b for b in msg.content if isinstance(b, ToolCall)]
    joined = "".join(b.text for b in texts)
    if exp.text is not None:
        assert joined == exp.text
    if exp.text_prefix is not None:
        assert joined.startswith(exp.text_prefix), joined[:200]
    if exp.thinking_prefix is not None:
        assert thinking and thinking[0].thinking.startswith(exp.thinking_prefix), thinking
    if exp.thinking_blocks is not None:
        assert len(thinking) == exp.thinking_blocks
    if exp.signature:
        assert thinking and all(b.thinking_signature for b in thinking)
    if exp.tools is not None:
        assert [(c.name, thaw(c.arguments)) for c in calls] == exp.tools
    if exp.tool_ids is not None:
        assert [c.id for c in calls] == exp.tool_ids
    if all(c.id for c in calls):
        assert len({c.id for c in calls}) == len(calls)
    else:
        pytest.fail("a tool call without id")
    if exp.thought_signature:
        assert calls and calls[0].thought_signature
    if exp.usage is not None:
        u = msg.usage
        assert (u.input, u.output, u.cache_read, u.cache_write) == exp.usage
        assert u.total_tokens >= u.input + u.output
        # cost from the test model's prices: 1, 2, 0.5, 4 USD per million tokens
        expected_cost = (u.input * 1.0 + u.output * 2.0 + u.cache_read * 0.5
                         + u.cache_write * 4.0) / 1e6
        assert u.cost.total == pytest.approx(expected_cost)
    if exp.response_id is not None:
        assert msg.response_id == exp.response_id
    if "tool_name" in exp.extra:
        assert calls[0].name == exp.extra["tool_name"]
        assert thaw(calls[0].arguments)["answers"][0] == exp.extra["first_answer"]
    if "redacted" in exp.extra:
        assert sum(b.redacted for b in thinking) == exp.extra["redacted"]
        assert (thinking[0].thinking_signature or "").startswith(exp.extra["signature_prefix"])
    if exp.extra.get("text_signature"):
        assert texts and texts[-1].text_signature
    # the message keeps the model it was asked for
    assert msg.model == "test-model" and msg.provider == "test"


@pytest.mark.parametrize("key", [k for k in sorted(CASES) if "reasoning_tokens" in CASES[k].extra],
                         ids=lambda k: f"{k[0].split('/')[-1]}[{k[1]}]")
def test_reasoning_tokens_reported(key: tuple[str, int]) -> None:
    from agentcore.providers.openai_chat import OpenAIChatDecoder
    from agentcore.providers.openai_responses import OpenAIResponsesDecoder

    from .helpers import model_for

    path, index = key
    folder = path.split("/")[0]
    d: OpenAIChatDecoder | OpenAIResponsesDecoder
    d = OpenAIChatDecoder(model_for(folder)) if folder == OC else OpenAIResponsesDecoder(
        model_for(folder))
    d.feed(load(path)[index].body)
    d.finish()
    assert d.reasoning_tokens == CASES[key].extra["reasoning_tokens"]


def test_vercel_reasoning_encrypted_content_four_streams() -> None:
    it = load("openai_responses/vercel-ai__openai-reasoning-encrypted-content.1.chunks.txt")[0]
    lines: list[str] = it.extra["lines"]
    streams: list[list[str]] = []
    for line in lines:
        if '"type":"response.created"' in line.replace(" ", ""):
            streams.append([])
        streams[-1].append(line)
    assert len(streams) == 4
    from tests.support.corpus import sse_from_chunks

    msgs = [check_shape(decode(OR, sse_from_chunks(s, named=True))) for s in streams]
    assert [m.stop_reason for m in msgs] == ["toolUse", "toolUse", "toolUse", "stop"]
    calls = [c for m in msgs for c in m.tool_calls]
    assert [c.name for c in calls] == ["calculator"] * 3
    assert thaw(calls[0].arguments) == {"a": 12, "b": 7, "op": "add"}
    assert msgs[0].content[0].thinking.startswith(  # type: ignore[union-attr]
        "**Calculating step-by-step using calculator**")
    first = msgs[0].content[0]
    assert isinstance(first, ThinkingContent) and first.thinking_signature
    assert "encrypted_content" in first.thinking_signature
    assert [thaw(c.arguments) for c in calls[1:]] == [
        {"a": 19, "b": 3, "op": "multiply"}, {"a": 57, "b": 10, "op": "multiply"}]
    assert msgs[-1].text == "The final result is **570**."
