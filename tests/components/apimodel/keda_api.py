"""A registered KEDA ScaledObject validated against the CRD's OpenAPI v3 schema (keda_scaledobject_schema.yaml).

The schema ships beside this module with its source (kedacore/keda's CRD); the
registered inputs are validated as the API server would the custom resource:
apiVersion, kind, metadata and spec as one object.
"""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Mapping

import jsonschema
import yaml

from tests.components.apimodel.aws_api import ApiModelError
from tests.components.apimodel.k8s_api import _ints

SCHEMA = pathlib.Path(__file__).with_name("keda_scaledobject_schema.yaml")
TYPE = "kubernetes:keda.sh/v1alpha1:ScaledObject"


@functools.cache
def schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def scaled_object(name: str, inputs: Mapping) -> dict:
    """The ScaledObject body; ApiModelError naming the path of the first schema violation."""
    body = _ints({k: v for k, v in inputs.items() if v is not None})
    if (body.get("apiVersion"), body.get("kind")) != ("keda.sh/v1alpha1", "ScaledObject"):
        raise ApiModelError(f"{name}: not a keda.sh/v1alpha1 ScaledObject: {body.get('apiVersion')} {body.get('kind')}")
    try:
        jsonschema.validate(body, schema())
    except jsonschema.ValidationError as e:
        raise ApiModelError(f"{name} (ScaledObject) at {'/'.join(map(str, e.absolute_path))}: {e.message}") from None
    return body
