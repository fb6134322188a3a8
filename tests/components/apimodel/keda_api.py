"""A registered KEDA ScaledObject or ScaledJob validated against the vendored CRDs (vendor/keda).

The `keda.sh/v1alpha1` `openAPIV3Schema` of kedacore/keda's CRDs (source and
commit in vendor/keda/README.md) validates the registered inputs as the API
server would the custom resource, with unknown fields refused: an object schema
that lists `properties` and allows neither `additionalProperties` nor
`x-kubernetes-preserve-unknown-fields` is closed (strict field validation). A
ScaledJob's `jobTargetRef` is then validated as the Kubernetes `V1JobSpec`.
On top, the rules KEDA's admission webhook applies that the schema cannot
express: minReplicaCount <= maxReplicaCount, idleReplicaCount < minReplicaCount
(KEDA docs, "ScaledObject specification").
"""

from __future__ import annotations

import copy
import functools
import pathlib
from collections.abc import Mapping

import jsonschema
import yaml

from tests.components.apimodel.aws_api import ApiModelError
from tests.components.apimodel.k8s_api import _ints

VENDOR = pathlib.Path(__file__).with_name("vendor") / "keda"
TYPE = "kubernetes:keda.sh/v1alpha1:ScaledObject"
JOB_TYPE = "kubernetes:keda.sh/v1alpha1:ScaledJob"
FILES = {"ScaledObject": "keda.sh_scaledobjects.yaml", "ScaledJob": "keda.sh_scaledjobs.yaml"}


def _closed(node):
    """The schema with every object that lists properties closed to unknown fields."""
    if isinstance(node, dict):
        out = {k: _closed(v) for k, v in node.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_closed(v) for v in node]
    return node


@functools.cache
def schema(kind: str = "ScaledObject") -> dict:
    crd = yaml.safe_load((VENDOR / FILES[kind]).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return _closed(copy.deepcopy(version["schema"]["openAPIV3Schema"]))


def _validate(name: str, inputs: Mapping, kind: str) -> dict:
    body = _ints({k: v for k, v in inputs.items() if v is not None})
    if (body.get("apiVersion"), body.get("kind")) != ("keda.sh/v1alpha1", kind):
        raise ApiModelError(f"{name}: not a keda.sh/v1alpha1 {kind}: {body.get('apiVersion')} {body.get('kind')}")
    try:
        jsonschema.validate(body, schema(kind))
    except jsonschema.ValidationError as e:
        raise ApiModelError(f"{name} ({kind}) at {'/'.join(map(str, e.absolute_path))}: {e.message}") from None
    spec = body["spec"]
    low, high = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)  # KEDA's defaults
    if low > high:
        raise ApiModelError(f"{name} ({kind}): minReplicaCount {low} > maxReplicaCount {high}")
    if "idleReplicaCount" in spec and spec["idleReplicaCount"] >= low:
        raise ApiModelError(f"{name} ({kind}): idleReplicaCount must be below minReplicaCount")
    return body


def scaled_object(name: str, inputs: Mapping) -> dict:
    """The ScaledObject body; ApiModelError naming the path of the first violation."""
    return _validate(name, inputs, "ScaledObject")


def scaled_job(name: str, inputs: Mapping) -> dict:
    """The ScaledJob body, its jobTargetRef as a Kubernetes V1JobSpec."""
    import kubernetes.client

    body = _validate(name, inputs, "ScaledJob")
    try:
        kubernetes.client.V1JobSpec.model_validate(body["spec"]["jobTargetRef"])
    except Exception as e:
        raise ApiModelError(f"{name} (ScaledJob) jobTargetRef: {e}") from None
    return body
