"""Tool, @tool and ToolRegistry: schemas from type hints, lookup, duplicates, validation."""

from __future__ import annotations

from typing import Literal

import jsonschema
import pytest

from tools.base import (
    DuplicateToolError,
    Tool,
    ToolArgumentsError,
    ToolRegistry,
    UnknownToolError,
    coerce_arguments,
    tool,
)


@tool
def convert(amount: float, currency: Literal["EUR", "USD"], round_to: int = 2, tags: list[str] | None = None) -> str:
    """Convert an amount of money.

    Args:
        amount: how much money
        currency: the target currency
        round_to: decimals to keep
    """
    return f"{amount} {currency}"


def test_tool_decorator_builds_schema_from_hints_and_docstring() -> None:
    assert convert.name == "convert"
    assert convert.description == "Convert an amount of money."
    props = convert.parameters["properties"]
    assert props["amount"] == {"type": "number", "description": "how much money"}
    assert props["currency"]["enum"] == ["EUR", "USD"]
    assert props["round_to"]["default"] == 2
    assert props["tags"]["type"] == "array"
    assert convert.parameters["required"] == ["amount", "currency"]
    assert convert.run(amount=3.5, currency="EUR") == "3.5 EUR"


def test_decorator_with_explicit_name_and_description() -> None:
    @tool(name="shout", description="Upper-cases text.")
    def upper(text: str) -> str:
        return text.upper()

    assert (upper.name, upper.description) == ("shout", "Upper-cases text.")


def test_subclass_tool_registers_and_runs() -> None:
    class Echo(Tool):
        name = "echo"
        description = "Echo the text back."
        parameters = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

        def run(self, text: str) -> str:  # type: ignore[override]
            return text

    registry = ToolRegistry([Echo()])
    found, args = registry.prepare("echo", {"text": "hi"})
    assert found.run(**args) == "hi" and registry.names() == ["echo"] and "echo" in registry


def test_duplicate_names_are_refused_case_insensitively() -> None:
    registry = ToolRegistry([convert])
    with pytest.raises(DuplicateToolError):
        registry.register_tool(convert)


def test_invalid_schema_is_refused_when_checked_and_its_calls_are_told_why() -> None:
    class Bad(Tool):
        name = "bad"
        parameters = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}

    with pytest.raises(jsonschema.SchemaError, match="no-such-type"):
        ToolRegistry().register_tool(Bad(), check_schema=True)  # what --tools modules get before the run
    registry = ToolRegistry([Bad(), convert])  # built-in tools: checked at their first call
    with pytest.raises(UnknownToolError, match="'bad' is not offered in this run: its parameters are not a valid "
                                               "JSON Schema: 'no-such-type' is not valid"):
        registry.prepare("bad", {"x": 1})
    assert registry.names() == ["convert"]


def test_lookup_is_case_insensitive_and_unknown_names_suggest() -> None:
    registry = ToolRegistry([convert])
    assert registry.resolve("CONVERT") is convert
    with pytest.raises(UnknownToolError) as err:
        registry.resolve("convrt")
    assert err.value.suggestion == "convert" and "Valid tools: convert" in str(err.value)


def test_validation_uses_json_schema() -> None:
    registry = ToolRegistry([convert])
    with pytest.raises(ToolArgumentsError) as err:
        registry.prepare("convert", {"amount": 1, "currency": "GBP"})
    assert "currency: 'GBP' is not one of ['EUR', 'USD']" in str(err.value)
    with pytest.raises(ToolArgumentsError, match="Additional properties"):
        registry.prepare("convert", {"amount": 1, "currency": "EUR", "colour": "red"})
    with pytest.raises(ToolArgumentsError, match="'amount' is a required property"):
        registry.prepare("convert", {"currency": "EUR"})


def test_plain_string_needs_a_single_parameter() -> None:
    with pytest.raises(ToolArgumentsError, match="JSON object"):
        coerce_arguments(convert, "3 EUR")
