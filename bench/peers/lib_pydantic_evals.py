"""The eval peer: the same cases as bench/bench_evals.py through pydantic-evals, with a pydantic-ai
agent on a ``FunctionModel`` (one tool call, then the answer). Run by bench/bench_evals.py in the
venv made by ``bash bench/peers/setup.sh --evals``; prints the cases per second as JSON."""

from __future__ import annotations

import json
import statistics
import sys
import time

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains, MaxToolCalls


def answer(messages: list, info: AgentInfo) -> ModelResponse:
    prompt = messages[0].parts[-1].content
    i = int(prompt.split()[2])
    returned = [p for m in messages for p in getattr(m, "parts", ()) if isinstance(p, ToolReturnPart)]
    if not returned:
        return ModelResponse(parts=[ToolCallPart("add", {"a": i, "b": 1})])
    return ModelResponse(parts=[TextPart(f"It is {returned[0].content}.")])


agent = Agent(FunctionModel(answer))


@agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def task(prompt: str) -> str:
    return (await agent.run(prompt)).output


def main() -> None:
    n, reps = int(sys.argv[1]), int(sys.argv[2])
    cases = [Case(name=f"sum-{i}", inputs=f"What is {i} + 1?", expected_output=f"It is {i + 1}.")
             for i in range(n)]
    dataset = Dataset(name="sums", cases=cases,
                      evaluators=[Contains("It is"), MaxToolCalls(3)])
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        report = dataset.evaluate_sync(task, max_concurrency=8, progress=False)
        rates.append(n / (time.perf_counter() - t0))
        assert len(report.cases) == n and not report.failures
    print(json.dumps({"cases_per_s": statistics.median(rates)}))


if __name__ == "__main__":
    main()
