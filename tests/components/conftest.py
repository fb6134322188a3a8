"""Pulumi mocks: record every registered resource; answer only the invokes we expect.

Follows ../shared/docs/pulumi-offline.md: preview=False (so outputs are
known and checks over them run), ids returned for every resource, unmocked
invokes raise, a fresh root stack and event loop per program run.
"""

from __future__ import annotations

import asyncio
import json

import pulumi
import pytest


class Recorder(pulumi.runtime.Mocks):
    """Mocks that keep (type, name, inputs) of every resource in registration order."""

    def __init__(self):
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(args)
        outputs = dict(args.inputs)
        outputs.setdefault("arn", f"arn:aws:mock:::{args.name}")
        outputs.setdefault("name", args.name)
        outputs.setdefault("email", f"{args.name}@mock.iam.gserviceaccount.com")
        outputs.setdefault("selfLinkUnique", f"https://compute.mock/{args.name}?uid=1")
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:ec2/getAmi:getAmi":
            assert args.args["owners"] == ["amazon"]
            return {"id": "ami-0dlami00000000001", "name": args.args["filters"][0]["values"][0]}
        if args.token == "aws:ec2/getVpc:getVpc":
            return {"id": "vpc-0default"}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            return {"ids": ["subnet-a", "subnet-b"], "id": "us-east-1"}
        raise NotImplementedError(f"unmocked invoke {args.token}")  # an empty dict would silently yield None

    def of_type(self, typ: str) -> list[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str) -> dict:
        found = self.of_type(typ)
        assert len(found) == 1, f"{typ}: {len(found)} registered"
        return found[0].inputs


def run_program(fn, config: dict | None = None, secret_keys=(), stack: str = "dev") -> tuple[Recorder, dict]:
    """Run `fn` (which creates resources) under fresh mocks; return the recorder and pulumi.export calls."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi.runtime.settings.set_root_resource(None)
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()}, list(secret_keys)
    )
    mocks = Recorder()
    pulumi.runtime.set_mocks(mocks, project="gpusizer", stack=stack, preview=False)
    exports: dict = {}
    original = pulumi.export

    def record(name, value):
        exports[name] = value
        original(name, value)

    pulumi.export = record
    try:
        @pulumi.runtime.test
        def body():
            return fn()

        body()
    finally:
        pulumi.export = original
        pulumi.runtime.set_all_config({})
        loop.close()
        asyncio.set_event_loop(None)
    return mocks, exports


def resolve(output) -> object:
    """The value of an Output created under mocks (preview=False, so it is known)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(output.future())
    finally:
        loop.close()


@pytest.fixture
def program():
    return run_program
