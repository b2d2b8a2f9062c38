"""Tool argument validation: every schema problem is a clean error, never an exception."""

from __future__ import annotations

import pytest

from agentcore import ToolSpec, validate_arguments


@pytest.mark.parametrize(("parameters", "expected"), [
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "\\p{L}+"}}},
     'Tool "t" has an invalid parameters schema: error: bad escape \\p at position 0'),
    ({"$ref": "http://example.com/schema.json"},
     "Tool \"t\" has an invalid parameters schema: ValueError: remote $ref 'http://example.com/schema.json' "
     "is not followed: tool schemas must be self-contained"),
    ({"type": "bogus"}, 'Tool "t" has an invalid parameters schema: JsonSchemaDefinitionException: Unknown type'),
])
def test_schemas_that_cannot_compile_give_an_error_result(parameters: object, expected: str) -> None:
    result = validate_arguments(ToolSpec("t", parameters=parameters), {"s": "x"})
    assert result.failure() == expected


def test_a_format_failure_names_its_path() -> None:
    spec = ToolSpec("mail", parameters={"type": "object", "properties": {"to": {"type": "string", "format": "email"}}})
    assert validate_arguments(spec, {"to": "nobody"}).failure() == (
        'Validation failed for tool "mail":\n  - to: \'nobody\' is not a \'email\'\n\n'
        'Received arguments:\n{\n  "to": "nobody"\n}')


def test_schemas_equal_but_for_one_and_true_are_not_confused() -> None:
    one = ToolSpec("a", parameters={"type": "object", "properties": {"v": {"const": 1}}})
    true = ToolSpec("b", parameters={"type": "object", "properties": {"v": {"const": True}}})
    assert validate_arguments(one, {"v": 1}).unwrap()["v"] == 1
    assert validate_arguments(true, {"v": True}).unwrap()["v"] is True
    assert validate_arguments(one, {"v": 1}).unwrap()["v"] == 1
