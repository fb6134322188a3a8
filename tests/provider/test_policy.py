"""The policy pack judges GpuWorkload's children when the parent is a multi-language component.

When a TypeScript, YAML, Go, C# or Java program declares a GpuWorkload, the
engine sends Construct to the plugin; the plugin's own registrations (the
GpuWorkload with the spec and pools it recorded, and every child under it)
are the resource steps the engine analyses, and RegisterResourceOutputs
gives the GpuWorkload the outputs stack policies read. These tests feed
exactly those registrations, as the monitor received them over gRPC, to the
pack's analyzer (gpusizer.policies.analyzer: the servicer the CLI talks to).
"""

from __future__ import annotations

import json

import pytest

from gpusizer.policies import analyzer
from tests.provider.conftest import plain
from tests.provider.test_construct import CASES, construct

pytestmark = pytest.mark.slow  # whole components in the plugin's process, then the pack (~3 s a case)

OVER = "gpusizer-no-overprovisioning"


def resources(monitor, replace: tuple[str, str] | None = None) -> list[analyzer.Resource]:
    """What the engine sends the pack about each registration; `replace` swaps a text in custom resources'
    inputs (a hand edit of the instance type)."""
    found = []
    for r in monitor.registered:
        inputs = r.inputs
        if replace and r.custom:
            inputs = json.loads(json.dumps(inputs).replace(json.dumps(replace[0]), json.dumps(replace[1])))
        found.append(
            analyzer.Resource(
                r.typ,
                r.name,
                inputs,
                r.urn,
                r.parent,
                r.dependencies,
                monitor.outputs.get(r.urn) if not r.custom else None,
            )
        )
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_pack_passes_a_right_sized_multi_language_workload(plugin, case):
    stack_file, name = CASES[case]
    monitor, _ = construct(plugin, stack_file, name)
    found = analyzer.analyze(resources(monitor), stack_file.name.split(".")[1])
    assert found == [], found


def test_the_pack_blocks_an_oversized_child_under_a_multi_language_workload(plugin):
    stack_file, name = CASES["aws"]
    monitor, response = construct(plugin, stack_file, name)
    chosen = plain(response.state)["instanceType"]
    found = analyzer.analyze(resources(monitor, (chosen, "p5.48xlarge")), "dev")
    over = [f for f in found if f.policy == OVER and f.level == "mandatory"]
    assert over and any("p5.48xlarge" in f.message for f in over), found


POOL = {
    "name": "rack-a",
    "location": "fra-dc1",
    "gpu": "L40S",
    "gpusPerNode": 8,
    "gpusFree": 2,
    "usdPerGpuHour": 0.4,
    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
}
POD = {
    "name": "w",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batchSize": 4},
    "placement": {"providers": ["onprem"], "regions": ["fra-dc1"]},
    "deploy": {"image": "vllm/vllm-openai:v0.6.3"},
}


def test_the_pack_judges_children_by_their_multi_language_parent_chain(plugin):
    # An L40S pod for an 8B chat holds over twice the GPU memory it needs, as the engine chose on evidence the
    # memory ratio cannot see (tests/policies/test_own_output.py). The pack re-plans the spec the GpuWorkload
    # recorded, found through the children's parent links to the GpuWorkload the plugin registered, and passes
    # it; the same children without that parent are judged by memory alone and blocked.
    monitor, _ = plugin.construct("w", {"spec": POD, "pools": [POOL]})
    (component,) = [r for r in resources(monitor) if r.typ == "gpusizer:index:GpuWorkload"]
    assert component.parent.endswith("pulumi:pulumi:Stack::gpusizer-dev") and component.outputs["spec"]
    assert analyzer.analyze(resources(monitor), "dev") == []
    loose = [r for r in resources(monitor) if r.typ != "gpusizer:index:GpuWorkload"]
    judged = analyzer.analyze(loose, "dev")
    assert [f for f in judged if f.policy == OVER and f.level == "mandatory"], judged
