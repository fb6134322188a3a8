"""The component provider started the way the Pulumi engine starts it, and a mock engine and monitor for it.

The engine reads provider/PulumiPlugin.yaml, takes the interpreter of the
virtualenv its runtime options name (relative to provider/), and runs
`<venv>/bin/python <provider dir> <engine address>` in the program's
directory; the plugin prints its gRPC port on stdout. Construct then talks
back to a resource monitor (the `monitorEndpoint` of the request): here a
gRPC server in the test process that answers as Pulumi's own MockMonitor
does (pulumi.runtime.mocks), through the same `tests.components.conftest.Mocks`
the Python program's tests use, so both paths see the same ids, outputs and
invoke results. The SDK's own provider tests drive Construct the same way
(a ConstructRequest naming a monitor endpoint).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
import threading
from concurrent import futures
from typing import Any

import grpc
import pulumi
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import engine_pb2_grpc, provider_pb2, provider_pb2_grpc, resource_pb2, resource_pb2_grpc
from pulumi.runtime.sync_await import _sync_await

from tests.components.conftest import Mocks
from tests.conftest import REPO

PROVIDER_DIR = REPO / "provider"
PROJECT = "gpusizer"


def stack_urn(stack: str) -> str:
    return f"urn:pulumi:{stack}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{stack}"


def interpreter() -> pathlib.Path:
    """The interpreter the engine runs the plugin with: the virtualenv named in provider/PulumiPlugin.yaml."""
    runtime = yaml.safe_load((PROVIDER_DIR / "PulumiPlugin.yaml").read_text())["runtime"]
    assert runtime["name"] == "python" and runtime["options"]["toolchain"] == "pip"
    python = PROVIDER_DIR / runtime["options"]["virtualenv"] / "bin" / "python"
    assert python.exists(), f"{python}: create the virtualenv PulumiPlugin.yaml names (docs/pulumi.md)"
    return python


@dataclasses.dataclass
class Registered:
    typ: str
    name: str
    inputs: dict
    provider: str
    urn: str
    parent: str
    custom: bool
    dependencies: tuple[str, ...]


class Monitor(resource_pb2_grpc.ResourceMonitorServicer):
    """A resource monitor answering as pulumi.runtime.mocks.MockMonitor does, recording every call."""

    def __init__(self, mocks: Mocks, stack: str):
        self.mocks, self.stack = mocks, stack
        self.registered: list[Registered] = []
        self.outputs: dict[str, dict] = {}
        self.lock = threading.Lock()

    def GetDeploymentInfo(self, request, context):
        # As MockMonitor: outputValues off, so resource inputs arrive as plain values.
        return resource_pb2.DeploymentInfo(
            supportedFeatures=[
                resource_pb2.RESOURCE_MONITOR_FEATURE_SECRETS,
                resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES,
                resource_pb2.RESOURCE_MONITOR_FEATURE_ALIAS_SPECS,
                resource_pb2.RESOURCE_MONITOR_FEATURE_DELETED_WITH,
            ]
        )

    def SupportsFeature(self, request, context):
        return resource_pb2.SupportsFeatureResponse(hasSupport=request.id != "outputValues")

    def urn(self, parent: str, typ: str, name: str) -> str:
        if parent:
            typ = parent.split("::")[2].split("$")[-1] + "$" + typ
        return f"urn:pulumi:{self.stack}::{PROJECT}::{typ}::{name}"

    def RegisterResource(self, request, context):
        urn = self.urn(request.parent, request.type, request.name)
        inputs = _sync_await(_deserialize(request.object))
        args = pulumi.runtime.MockResourceArgs(
            typ=request.type,
            name=request.name,
            inputs=inputs,
            provider=request.provider,
            resource_id=request.importId,
            custom=request.custom,
        )
        with self.lock:
            id_, state = self.mocks.new_resource(args)
            self.registered.append(
                Registered(
                    request.type,
                    request.name,
                    inputs,
                    request.provider,
                    urn,
                    request.parent,
                    request.custom,
                    tuple(request.dependencies),
                )
            )
        obj = _sync_await(rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_ or "", object=obj)

    def RegisterResourceOutputs(self, request, context):
        self.outputs[request.urn] = _sync_await(_deserialize(request.outputs))
        return empty_pb2.Empty()

    def Invoke(self, request, context):
        args = _sync_await(_deserialize(request.args))
        with self.lock:
            ret = self.mocks.call(pulumi.runtime.MockCallArgs(token=request.tok, args=args, provider=request.provider))
        return resource_pb2.ResourceInvokeResponse(**{"return": _sync_await(rpc.serialize_properties(ret, {}))})

    def RegisterPackage(self, request, context):
        return resource_pb2.RegisterPackageResponse(ref="mock-uuid")

    def SignalAndWaitForShutdown(self, request, context):
        return empty_pb2.Empty()


async def _deserialize(struct) -> dict:
    return rpc.deserialize_properties(struct)


class Engine(engine_pb2_grpc.EngineServicer):
    """The engine's log service: records what the provider logs."""

    def __init__(self):
        self.logs: list[str] = []

    def Log(self, request, context):
        self.logs.append(request.message)
        return empty_pb2.Empty()

    def GetRootResource(self, request, context):
        from pulumi.runtime.proto import engine_pb2

        return engine_pb2.GetRootResourceResponse(urn="")

    def SetRootResource(self, request, context):
        from pulumi.runtime.proto import engine_pb2

        return engine_pb2.SetRootResourceResponse()


def _serve(add, servicer) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    add(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@dataclasses.dataclass
class Plugin:
    stub: provider_pb2_grpc.ResourceProviderStub
    engine: Engine
    port: str

    def construct(
        self,
        name: str,
        inputs: dict,
        config: dict | None = None,
        mocks: Mocks | None = None,
        secret_inputs: tuple[str, ...] = (),
        stack: str = "dev",
        preview: bool = False,
    ) -> tuple[Monitor, Any]:
        """Construct a GpuWorkload as the engine would for a program's declaration; (monitor, response or error).

        `config` is the stack's config (as the engine passes it); `secret_inputs` are sent as secrets;
        `preview`: as at `pulumi preview` (dryRun)."""
        monitor = Monitor(mocks or Mocks(), stack)
        server, address = _serve(resource_pb2_grpc.add_ResourceMonitorServicer_to_server, monitor)
        try:
            request = provider_pb2.ConstructRequest(
                project=PROJECT,
                stack=stack,
                organization="organization",
                dryRun=preview,
                parallel=4,
                monitorEndpoint=address,
                type="gpusizer:index:GpuWorkload",
                name=name,
                parent=stack_urn(stack),
                inputs=struct(inputs, secret_inputs),
                config={k: v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()},
            )
            try:
                return monitor, self.stub.Construct(request, timeout=120)
            except grpc.RpcError as exc:
                return monitor, exc
        finally:
            server.stop(None)

    def invoke(self, args: dict, token: str = "gpusizer:index:plan"):
        return self.stub.Invoke(provider_pb2.InvokeRequest(tok=token, args=struct(args)), timeout=120)


def struct(values: dict, secret: tuple[str, ...] = ()) -> struct_pb2.Struct:
    """Values as the engine sends them (JSON-like; `secret` keys marked with Pulumi's secret signature)."""
    s = struct_pb2.Struct()
    s.update(
        {
            k: ({rpc._special_sig_key: rpc._special_secret_sig, "value": v} if k in secret else v)
            for k, v in json.loads(json.dumps(values)).items()
        }
    )
    return s


def plain(value: Any) -> Any:
    """A Struct from the provider as plain Python values."""
    return _sync_await(_deserialize(value))


@pytest.fixture(scope="session")
def plugin(tmp_path_factory):
    """The provider plugin, started as the engine starts it, with a mock engine for its logs."""
    engine = Engine()
    server, engine_address = _serve(engine_pb2_grpc.add_EngineServicer_to_server, engine)
    program_dir = tmp_path_factory.mktemp("program")  # the engine runs a plugin in the program's directory
    proc = subprocess.Popen(
        [str(interpreter()), str(PROVIDER_DIR), engine_address],
        cwd=program_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit(), proc.stderr.read() if proc.poll() is not None else port
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=60)
        yield Plugin(provider_pb2_grpc.ResourceProviderStub(channel), engine, port)
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
        server.stop(None)


@pytest.fixture(scope="session")
def served_schema(plugin) -> dict:
    """The schema the engine gets from GetSchema."""
    return json.loads(plugin.stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60).schema)


@pytest.fixture(scope="session")
def package_schema() -> dict:
    """The schema the plugin serves, built in this process (test_schema.py checks the two are equal), so the
    checks of its content run in the quick loop without starting the plugin."""
    import importlib.metadata

    from provider import schema

    return json.loads(json.dumps(schema.build(importlib.metadata.version("gpusizer"))[0]))
