"""Schema names: Pulumi names properties in camelCase (`context_length` -> `contextLength`).

The same rule as pulumi.provider.experimental's `camel_case`, kept here so the
schema can be built (and tested) without importing `pulumi.provider`: its
server module registers `google.rpc.Status` in protobuf's default pool, which
clashes with googleapis' own in a process that also uses Google's clients.
"""


def camel_case(name: str) -> str:
    """`context_length` -> `contextLength` (tests/provider/test_schema.py checks it against the SDK's)."""
    first, *rest = name.split("_")
    return first + "".join(w[:1].upper() + w[1:] for w in rest)
