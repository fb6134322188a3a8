"""The whole Pulumi program (__main__.py) under mocks, for every stack file in stacks/."""

from __future__ import annotations

import pulumi
import pytest
import yaml

import gpusizer
from tests.components.conftest import REPO, run_stack, secret_value
from tests.conftest import EXAMPLE_SPECS

STACKS = sorted((REPO / "stacks").glob("Pulumi.*.yaml"))
EXAMPLES = EXAMPLE_SPECS
HYBRID = REPO / "stacks/Pulumi.hybrid.yaml"
DEV = REPO / "stacks/Pulumi.dev.yaml"


def _workloads(stack_file) -> list:
    return yaml.safe_load(stack_file.read_text())["config"]["gpusizer:workloads"]


@pytest.mark.parametrize("stack_file", STACKS, ids=lambda p: p.name)
def test_every_stack_runs_and_exports_each_decision(stack_file):
    mocks, exports, _ = run_stack(stack_file)
    assert len(exports) == len(_workloads(stack_file))
    for name, out in exports.items():
        assert out["provider"] in ("aws", "gcp", "onprem")
        assert out["instance_type"] == out["decision"]["choice"]["instance_type"]
        assert out["hourly_usd"] == out["decision"]["choice"]["hourly_usd"] > 0
        assert out["decision"]["workload"] == name
        assert out["required_gpu_memory_gib"] == out["decision"]["requirements"]["memory_gib"]["total"]
        assert out["instance_type"] in out["summary"] and "GiB" in out["summary"]
        assert {"instance_id", "asg_name", "instance_self_link", "group_self_link", "namespace"} & set(out)
    workloads = mocks.of_type("gpusizer:index:GpuWorkload")
    assert sorted(r.name for r in workloads) == sorted(exports)


@pytest.mark.slow  # runs a whole Pulumi program per provider path (~1.3 s)
def test_stacks_exist_for_each_provider_path():
    assert {p.name for p in STACKS} >= {"Pulumi.dev.yaml", "Pulumi.gcp.yaml", "Pulumi.hybrid.yaml"}
    providers = {out["provider"] for stack in STACKS for out in run_stack(stack)[1].values()}
    assert providers == {"aws", "gcp", "onprem"}


def test_hybrid_stack_fills_the_pool_then_bursts():
    mocks, exports, _ = run_stack(HYBRID)
    first, second = exports["support-chat"], exports["summarizer"]
    assert first["provider"] == "onprem" and first["burst"] is None
    assert first["namespace"] == "support-chat-hybrid"  # <workload>-<stack>
    assert second["provider"] == "aws"
    assert "rack-a" in second["burst"] and "full" in second["burst"]
    assert second["decision"]["burst"] == second["burst"]
    quota = mocks.one("kubernetes:core/v1:ResourceQuota")["spec"]["hard"]["requests.nvidia.com/gpu"]
    assert int(quota) == 2  # the pool's 2 free GPUs went to the first workload


def test_kubeconfig_from_stack_config_reaches_the_pool_as_a_secret():
    mocks, exports, _ = run_stack(
        HYBRID,
        {"gpusizer:kubeconfigs": {"rack-a": "apiVersion: v1\nkind: Config\n"}},
        secret_keys=["gpusizer:kubeconfigs"],
    )
    provider = mocks.one("pulumi:providers:kubernetes")
    assert secret_value(provider["kubeconfig"]) == "apiVersion: v1\nkind: Config\n"


# Where the token may be: a Kubernetes Secret for pods, a Secrets Manager / Secret Manager secret for VMs.
SECRET_STORES = {
    "kubernetes:core/v1:Secret",
    "aws:secretsmanager/secretVersion:SecretVersion",
    "gcp:secretmanager/secretVersion:SecretVersion",
}


def test_hf_token_from_stack_config_reaches_only_secret_stores():
    mocks, exports, _ = run_stack(HYBRID, {"gpusizer:hfToken": "hf_t0ken"}, secret_keys=["gpusizer:hfToken"])
    assert secret_value(mocks.one("kubernetes:core/v1:Secret")["stringData"]) == {"token": "hf_t0ken"}
    for r in mocks.resources:  # a VM's copy is a Pulumi secret too
        if r.typ == "aws:secretsmanager/secretVersion:SecretVersion":
            assert secret_value(r.inputs["secretString"]) == "hf_t0ken"
    assert "hf_t0ken" not in repr(exports)
    assert "hf_t0ken" not in repr([r.inputs for r in mocks.resources if r.typ not in SECRET_STORES])


def test_one_shared_kubeconfig_serves_every_pool():
    mocks, _, _ = run_stack(HYBRID, {"gpusizer:kubeconfig": "apiVersion: v1"}, secret_keys=["gpusizer:kubeconfig"])
    assert secret_value(mocks.one("pulumi:providers:kubernetes")["kubeconfig"]) == "apiVersion: v1"


def test_plain_text_kubeconfig_works_with_a_warning(caplog):
    mocks, _, _ = run_stack(HYBRID, {"gpusizer:kubeconfigs": {"rack-a": "apiVersion: v1"}})
    assert secret_value(mocks.one("pulumi:providers:kubernetes")["kubeconfig"]) == "apiVersion: v1"
    assert "gpusizer:kubeconfigs is stored in plain text" in caplog.text  # pulumi.log under mocks
    assert "pulumi config set --secret --path 'gpusizer:kubeconfigs.<pool>'" in caplog.text


def test_plain_text_hf_token_works_with_a_warning_naming_the_fix(caplog):
    mocks, _, _ = run_stack(HYBRID, {"gpusizer:hfToken": "hf_t0ken"})
    assert secret_value(mocks.one("kubernetes:core/v1:Secret")["stringData"]) == {"token": "hf_t0ken"}
    assert (
        "gpusizer:hfToken is stored in plain text. To fix: pulumi config set --secret gpusizer:hfToken" in caplog.text
    )
    assert "hf_t0ken" not in caplog.text


def test_secret_kubeconfig_and_token_raise_no_warning(caplog):
    run_stack(
        HYBRID,
        {"gpusizer:kubeconfigs": {"rack-a": "apiVersion: v1"}, "gpusizer:hfToken": "hf_t0ken"},
        secret_keys=["gpusizer:kubeconfigs", "gpusizer:hfToken"],
    )
    assert "plain text" not in caplog.text


def test_kubeconfig_for_an_unknown_pool_is_refused():
    with pytest.raises(pulumi.RunError) as e:
        run_stack(HYBRID, {"gpusizer:kubeconfigs": {"rack-z": "x"}}, secret_keys=["gpusizer:kubeconfigs"])
    assert "rack-z" in str(e.value) and "rack-a" in str(e.value)


def test_aws_networks_from_config():
    net = {"us-east-1": {"vpcId": "vpc-0abc", "subnetIds": ["subnet-1", "subnet-2"]}}
    mocks, _, _ = run_stack(REPO / "stacks/Pulumi.dev.yaml", {"gpusizer:awsNetworks": net})
    asg = [r.inputs for r in mocks.of_type("aws:autoscaling/group:Group") if r.name.startswith("dev-chat")][0]
    assert asg["vpcZoneIdentifiers"] == ["subnet-1", "subnet-2"]


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": -1}}, "inference.batch_size"),
        ({"name": "Chat", "model": {"name": "llama-3.1-8b"}}, "name"),  # upper case cannot name resources
        ({"name": "chat", "model": {"name": "llama-3.1-8b"}, "placement": {"purchase": "cheap"}}, "placement.purchase"),
    ],
)
def test_invalid_spec_provisions_nothing_and_reports_the_field(bad, field):
    valid = _workloads(REPO / "stacks/Pulumi.dev.yaml")[0]
    with pytest.raises(pulumi.RunError) as e:
        run_stack(REPO / "stacks/Pulumi.dev.yaml", {"gpusizer:workloads": [valid, bad]})
    assert "gpusizer:workloads[1]" in str(e.value) and f"(field {field})" in str(e.value)
    assert "To fix" in str(e.value)


def test_failed_validation_registers_no_resource(monkeypatch):
    # The valid first workload is not provisioned either: everything is planned before anything is created.
    registered = []
    from tests.components import conftest

    monkeypatch.setattr(conftest.Mocks, "new_resource", lambda self, args: registered.append(args) or ("x", {}))
    valid = _workloads(REPO / "stacks/Pulumi.dev.yaml")[0]
    bad = {"name": "chat", "model": {"name": "no-such-model-xyz"}}
    with pytest.raises(pulumi.RunError) as e:
        run_stack(REPO / "stacks/Pulumi.dev.yaml", {"gpusizer:workloads": [valid, bad]})
    assert "(field model.name)" in str(e.value)
    assert registered == []


@pytest.mark.parametrize(
    "key, value", [("gpusizer:awsEgress", "public"), ("gpusizer:awsPrivateCidr", "172.31.240.0/29")]
)
def test_invalid_aws_setting_provisions_nothing_and_names_the_key(monkeypatch, key, value):
    # The hybrid stack's first workload goes to the on-prem pool, the second to AWS: the AWS check
    # must run before the first workload is created, not when the second one is.
    registered = []
    from tests.components import conftest

    monkeypatch.setattr(conftest.Mocks, "new_resource", lambda self, args: registered.append(args) or ("x", {}))
    with pytest.raises(pulumi.RunError) as e:
        run_stack(HYBRID, {key: value})
    message = str(e.value)
    assert message.startswith(f"stack config {key} {value!r}") and "To fix" in message
    assert message.count(key) == 1  # one message, not the program's and the component's
    if key == "gpusizer:awsEgress":
        assert "use one of nat, endpoints, none" in message
    assert registered == []


def test_infeasible_workload_provisions_nothing(monkeypatch):
    registered = []
    from tests.components import conftest

    monkeypatch.setattr(conftest.Mocks, "new_resource", lambda self, args: registered.append(args) or ("x", {}))
    big = {"name": "big", "model": {"name": "llama-3.1-405b"}, "placement": {"providers": ["aws"], "max_hourly_usd": 1}}
    with pytest.raises(pulumi.RunError) as e:
        run_stack(REPO / "stacks/Pulumi.dev.yaml", {"gpusizer:workloads": [big]})
    assert "gpusizer:workloads[0]" in str(e.value) and "no feasible offer" in str(e.value)
    assert registered == []


def test_missing_spec_file_names_the_path():
    with pytest.raises(pulumi.RunError) as e:
        run_stack(REPO / "stacks/Pulumi.dev.yaml", {"gpusizer:workloads": ["stacks/examples/nope.yaml"]})
    assert "stacks/examples/nope.yaml" in str(e.value)


def test_duplicate_workload_names_are_refused():
    spec = _workloads(REPO / "stacks/Pulumi.dev.yaml")[0]
    with pytest.raises(pulumi.RunError) as e:
        run_stack(REPO / "stacks/Pulumi.dev.yaml", {"gpusizer:workloads": [spec, spec]})
    assert "duplicate" in str(e.value) and spec["name"] in str(e.value)


def test_example_specs_cover_the_documented_workloads():
    names = {gpusizer.load_spec(p).name: p.name for p in EXAMPLES}
    assert names.get("support-chat") == "chat-8b.yaml"
    tasks = {gpusizer.load_spec(p).task for p in EXAMPLES}
    assert tasks == {"inference", "finetune", "training"}
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_spec_plans(path):
    decision = gpusizer.plan(path)
    assert decision.chosen is not None, gpusizer.document(decision)["candidates"][:3]


def test_the_decision_output_holds_the_plan_json_whole_known_and_not_secret():
    from gpusizer.components import workload
    from tests.components.conftest import run_program

    value = {"candidates": [{"offer": "g6.xlarge", "hourly_usd": 0.8, "zone": None}], "notes": ["a", "b"], "total": 2}
    out = {}

    def program():
        o = workload.known(value)

        async def check():
            return [(await o.future()) is value, await o.is_known(), await o.is_secret()]

        pulumi.export("check", pulumi.Output.from_input(check()))
        pulumi.export("value", o)

    _, _, resolved = run_program(program)
    out.update(resolved)
    assert out["check"] == [True, True, False]  # the very dict, not an element-by-element copy
    assert out["value"] == value


def test_preview_names_the_consumption_model():
    # A p5 reservation named in the spec: the stack output and `gpusizer preview`'s line say what it is bought as.
    spec = {
        "name": "p5",
        "model": {"name": "llama-3.1-70b"},
        "task": "training",
        "training": {"sequence_length": 4096},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"], "gpus": ["H100"], "purchase": "on-demand"},
        "deploy": {"capacity_reservation": "cr-0123456789abcdef0", "capacity_block": True},
    }
    mocks, exports, _ = run_stack(DEV, {"gpusizer:workloads": [spec]})
    out = exports["p5"]
    assert out["consumption"] == "capacity-block"
    assert "on-demand as capacity-block (published block rate $39.33/h per instance" in out["summary"]
    from gpusizer.policies import offline

    line = offline._decision_line(out)
    assert "p5.48xlarge (" in line and "on-demand as capacity-block" in line
