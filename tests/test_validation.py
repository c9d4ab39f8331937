"""Shared validation: namespaces, keys, values and TTLs."""

from __future__ import annotations

import math
from typing import Any

import pytest

from claw_memory import (
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidTTLError,
    InvalidValueError,
    KeyTypeError,
    MemoryException,
    NamespaceValidator,
)
from claw_memory.validation import encode_json, normalize_ttl, validate_key, validate_value


@pytest.mark.parametrize("namespace", ["default", "user:1", "a.b-c_d", "N" * 100, "x"])
def test_valid_namespaces_are_returned_unchanged(namespace: str) -> None:
    assert NamespaceValidator.validate(namespace) == namespace
    assert NamespaceValidator.validate(namespace) == namespace  # cached path


@pytest.mark.parametrize(
    ("namespace", "message"),
    [
        ("", "must not be empty"),
        ("x" * 101, "at most 100 characters"),
        ("a\x00", "NUL"),
        ("a..b", "'..'"),
        ("a/b", "'/' or '\\'"),
        ("a\\b", "'/' or '\\'"),
        ("tab\there", "may only contain"),
        ("é", "may only contain"),
        # earlier rules win: length before NUL, NUL before '..', '..' before '/'
        ("\x00" * 101, "at most 100"),
        ("..\x00", "NUL"),
        ("../etc", "'..'"),
    ],
)
def test_namespace_rules_in_order(namespace: str, message: str) -> None:
    with pytest.raises(InvalidNamespaceError) as caught:
        NamespaceValidator.validate(namespace)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, MemoryException)


def test_key_rules() -> None:
    assert validate_key("k" * 255) == "k" * 255
    for bad in ["", "k" * 256, "a\x00"]:
        with pytest.raises(InvalidKeyError):
            validate_key(bad)
    with pytest.raises(KeyTypeError) as caught:
        validate_key(42)
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, InvalidKeyError)


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -1.5, "s", [], {}, (1, 2), {"a": [{"b": None}]}, 10**30],
)
def test_json_values_pass(value: Any) -> None:
    validate_value(value)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({1, 2}, "$ is a set"),
        ({"a": [1, b"x"]}, "$.a[1] is a bytes"),
        ({"a": math.nan}, "$.a is a non-finite float"),
        ({2: "x"}, "int key"),
        (object(), "$ is a object"),
    ],
)
def test_invalid_values_name_the_path_and_type(value: Any, where: str) -> None:
    with pytest.raises(InvalidValueError) as caught:
        validate_value(value)
    assert where in str(caught.value)
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, ValueError)


def test_encode_json_is_compact_and_keeps_unicode() -> None:
    assert encode_json({"a": ["é", 1.5, None]}) == '{"a":["é",1.5,null]}'
    with pytest.raises(InvalidValueError):
        encode_json([math.inf])


def test_ttl_rules() -> None:
    assert normalize_ttl(None, None) is None
    assert normalize_ttl(None, 86400) == 86400
    assert normalize_ttl(0, 86400) is None
    assert normalize_ttl(0.0, 5) is None
    assert normalize_ttl(2, None) == 2
    assert normalize_ttl(0.25, None) == 0.25
    for bad in [-1, -0.1, math.nan, math.inf, True, "5", [5]]:
        with pytest.raises(InvalidTTLError):
            normalize_ttl(bad, None)
