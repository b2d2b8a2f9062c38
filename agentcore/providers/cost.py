"""Cost of a model call from its token counts and the model's prices (USD per million tokens).

>>> from agentcore.messages import Model, ModelCost, Usage
>>> m = Model(id="m", cost=ModelCost(input=2.0, output=8.0, cache_read=0.5))
>>> u = usage_with_cost(m, Usage(input=1_000_000, output=500_000, cache_read=2_000_000))
>>> u.cost.input, u.cost.output, u.cost.cache_read, u.cost.total
(2.0, 4.0, 1.0, 7.0)
"""

from __future__ import annotations

from ..messages import Cost, Model, Usage
from ..records import replace

__all__ = ["usage_with_cost"]

_PER = 1_000_000


def usage_with_cost(model: Model, usage: Usage) -> Usage:
    """``usage`` with ``cost`` computed from ``model.cost`` (and ``total_tokens`` filled in when
    the provider did not give it)."""
    prices = model.cost
    c_in = prices.input * usage.input / _PER
    c_out = prices.output * usage.output / _PER
    c_read = prices.cache_read * usage.cache_read / _PER
    c_write = prices.cache_write * usage.cache_write / _PER
    total_tokens = usage.total_tokens or (
        usage.input + usage.output + usage.cache_read + usage.cache_write
    )
    return replace(
        usage,
        total_tokens=total_tokens,
        cost=Cost(c_in, c_out, c_read, c_write, c_in + c_out + c_read + c_write),
    )
