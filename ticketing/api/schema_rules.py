"""The rules of text and objects that inputs share, as JSON Schema for the OpenAPI document.

Serializers and filter sets state their rules with these (`exactly_one_of`, `SPACE`, the `q`
parameter's schema), and `openapi.ApiAutoSchema` applies the shared ones to every operation.
"""

import itertools

from django import forms
from rest_framework import serializers

# What Python's `str.strip()` trims, so what DRF and Django forms trim from text input: Unicode's
# White_Space and the four information separators. Written out, as `\s` differs between regex
# engines (Python's includes the separators, ECMAScript's and Rust's do not).
SPACE = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f"
    r"\u205f\u3000"
)
# Text inputs: Django and DRF refuse NUL in any text (PostgreSQL cannot store it), and DRF trims
# a CharField before refusing it blank, so "non-blank" means "has a character not trimmed".
NO_NUL = r"^[^\u0000]*$"
NON_BLANK = rf"^[^\u0000]*[^{SPACE}\u0000][^\u0000]*$"


def exactly_one_of(*names: str) -> dict:
    """Object rules: exactly one of `names` is sent, nothing else."""
    return {
        "minProperties": 1,
        "maxProperties": 1,
        "oneOf": [{"required": [name]} for name in names],
    }


def at_least_one_of(*names: str) -> dict:
    return {"anyOf": [{"required": [name]} for name in names]}


def key_rule(rules: dict) -> tuple[list[str], bool] | None:
    """The fields of an exactly-one (`oneOf`) or at-least-one (`anyOf`) rule of `required`
    branches, and whether it is exactly one; None for any other rules."""
    for keyword, exactly in (("oneOf", True), ("anyOf", False)):
        branches = rules.get(keyword)
        if isinstance(branches, list) and all(
            isinstance(b, dict) and set(b) == {"required"} and len(b["required"]) == 1
            for b in branches
        ):
            return [b["required"][0] for b in branches], exactly
    return None


def key_rule_sentence(names: list[str], exactly: bool) -> str:
    keys = ", ".join(f"`{name}`" for name in names)
    return f"Send {'exactly' if exactly else 'at least'} one of {keys}."


def key_rule_as_not(schema: dict) -> None:
    """An object's exactly-one or at-least-one rule as a `not` of what it refuses (none of the
    fields sent; two of them, for exactly one), said in its description too. Validators apply
    a `not`; client generators skip it, where a `oneOf` or `anyOf` beside the properties makes
    them type the object as a union of branches that have no type: `Any`."""
    rule = key_rule(schema)
    if rule is None:
        return
    names, exactly = rule
    del schema["oneOf" if exactly else "anyOf"]
    refused = [{"required": list(pair)} for pair in itertools.combinations(names, 2)]
    refused = [*(refused if exactly else []), {"not": at_least_one_of(*names)}]
    schema["not"] = refused[0] if len(refused) == 1 else {"anyOf": refused}
    sentence = key_rule_sentence(names, exactly)
    description = schema.get("description")
    schema["description"] = f"{description}\n\n{sentence}" if description else sentence


def query_filter_schema(exact_fields: dict[str, forms.Field], max_length: int) -> dict:
    """`q` (CONTRACT §6): search text, or a JSON object of exact filters on `exact_fields`.

    Text must not start with `{`; the JSON branch is a pattern over the allowed keys, each with
    a value its form field accepts (ids up to 999,999,999, choices, codes of letters, digits,
    `_` and `-`), a subset of what is accepted, so that a value matching it is never refused.
    """
    ws = r"[ \t\n\r]*"  # JSON's own whitespace, not Unicode's
    pairs = [
        f'"{key}"{ws}:{ws}{value}'
        for key, field in exact_fields.items()
        if (value := _json_value_pattern(field)) is not None
    ]
    pair = f"(?:{'|'.join(pairs)})"
    json_object = rf"^[{SPACE}]*\{{{ws}(?:{pair}(?:{ws},{ws}{pair})*)?{ws}\}}[{SPACE}]*$"
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": max_length,
        # Each branch typed too: a generator makes an untyped branch, so the parameter, `Any`.
        "anyOf": [
            {
                "type": "string",
                "pattern": rf"^(?![{SPACE}]*\{{)[^\u0000]*$",
                "title": "Search text",
            },
            {"type": "string", "pattern": json_object, "title": "Exact filters (a JSON object)"},
        ],
    }


def _json_value_pattern(field: forms.Field) -> str | None:
    if isinstance(field, forms.ChoiceField):
        return '"(?:' + "|".join(str(value) for value, _ in field.choices if value != "") + ')"'
    if isinstance(field, forms.IntegerField):
        return "[1-9][0-9]{0,8}"
    if isinstance(field, forms.CharField):
        return f'"[A-Za-z0-9_-]{{1,{min(field.max_length or 64, 64)}}}"'
    return None


def text_rules(schema: dict, *, blank: bool) -> None:
    """NUL refused everywhere; blank refused where `blank` is false. A schema that already
    constrains its text (pattern, format, enum) says this itself."""
    if schema.get("type") != "string" or {"pattern", "format", "enum", "anyOf"} & set(schema):
        return
    schema["pattern"] = NO_NUL if blank else NON_BLANK


def boolean_input(field: serializers.BooleanField) -> list[dict]:
    """What DRF reads as a boolean: JSON true/false, 0/1 and its words in any case (a form
    sends only text). Case is spelled out: OpenAPI's regular expressions have no flags."""
    words = sorted(
        str(value)
        for value in field.TRUE_VALUES | field.FALSE_VALUES
        if isinstance(value, str) and not value.isdigit()
    )
    either_case = "|".join("".join(f"[{c.upper()}{c}]" for c in word) for word in words)
    return [
        {"type": "boolean"},
        {"type": "number", "enum": [0, 1]},
        {"type": "string", "pattern": f"^(?:{either_case}|0|1)$"},
    ]


def nested_rules(rules: dict, schema: dict) -> None:
    """`rules` merged into `schema`; under `properties`, merged property by property, where
    `None` removes a keyword."""
    for key, value in rules.items():
        if key == "properties":
            for name, extra in value.items():
                prop = schema["properties"][name]
                prop.update(extra)
                for keyword in [k for k, v in extra.items() if v is None]:
                    del prop[keyword]
        else:
            schema[key] = value
