"""Schemathesis hooks of test/fuzz/schemathesis.test.ts (loaded through SCHEMATHESIS_HOOKS).

The suite's LLM runs on CPU, so every generated request to an operation whose JSON body documents
`max_tokens` or `max_completion_tokens` asks for at most FUZZ_MAX_TOKENS tokens: a larger value is
lowered to it, and a body without either gets `max_tokens: FUZZ_MAX_TOKENS`. Both stay within what
the schema allows (an integer of at least 1 that the body may carry), so every case remains one the
document says the service takes; what the fuzz leaves out is only the cost of long generations.
A value that is no valid count (a string, a negative number, null) is left as generated: it is a
negative case and must be refused.
"""

import os

import schemathesis

CAP = int(os.environ.get("FUZZ_MAX_TOKENS", "16"))
FIELDS = ("max_tokens", "max_completion_tokens")


def _json_body_properties(operation):
    content = (operation.definition.raw.get("requestBody") or {}).get("content") or {}
    schema = (content.get("application/json") or {}).get("schema") or {}
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


@schemathesis.hook
def before_call(ctx, case, kwargs):
    if not isinstance(case.body, dict):
        return
    documented = [name for name in FIELDS if name in _json_body_properties(case.operation)]
    if not documented:
        return
    if not any(name in case.body for name in documented):
        case.body[documented[0]] = CAP
    for name in documented:
        value = case.body.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > CAP:
            case.body[name] = CAP
