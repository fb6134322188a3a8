"""Step 1 of the pack's one pass: GPU evidence in any resource's properties, whatever its type.

The pack never decides from a resource's type whether it can carry a GPU: it
walks every property (and every YAML or JSON document held in a string, as a
ConfigGroup's `yaml` or a Helm release's values file holds them) and reports
what it sees, the way the clouds read it:

- instance and machine types of accelerator families (the catalog plus
  policies/accelerator_families.yaml), matched case- and whitespace-blind and
  from the last segment of a URL (`.../machineTypes/A3-HIGHGPU-8G `), with
  SageMaker's `ml.` prefix;
- accelerator resource names (Kubernetes extended resources and device
  classes): `nvidia.com/gpu`, `nvidia.com/gpu.shared`, `nvidia.com/mig-*`,
  `amd.com/gpu`, `google.com/tpu`, `aws.amazon.com/neuron*`, `habana.ai/gaudi`,
  `gpu.intel.com/*`, in requests, limits, quotas and DRA device classes;
- accelerator fields: a non-empty value under a key that names an accelerator,
  GPU or TPU (GCP guest accelerators, accelerator types and configs, TPU types,
  GKE autoscaling resource limits), and GPU accelerator type names anywhere
  (`nvidia-tesla-t4`, `tpu-v5-lite-podslice`);
- node selectors, affinities and Karpenter requirements on a GPU label
  (`nvidia.com/gpu.product`, `cloud.google.com/gke-accelerator`,
  `karpenter.k8s.aws/instance-gpu-name`, ...) or on an instance type or family
  that is a GPU one.

What is excluded is excluded on purpose and narrowly: tolerations (they admit
a pod to a GPU node, they give it no GPU), exclusion lists and `NotIn` /
`DoesNotExist` expressions (they keep GPUs out), zero counts, and gpusizer's
own sizing metadata keys. A value unknown at preview is no evidence (it is
judged again at `up`).

Step 2 (policies/model.py) turns a resource with evidence into a GPU-resource
model, or into a finding when no precise model exists.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import io
import re
from collections.abc import Mapping, Sequence

import yaml

from gpusizer.contract import audit, metadata
from gpusizer.policies import shapes
from gpusizer.policies import view as v

# Kubernetes extended resources and DRA device classes of accelerators (NVIDIA device plugin, AMD GPU device
# plugin, GKE TPUs, AWS Neuron device plugin, Intel and Habana device plugins).
RESOURCE_NAMES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "amd.com/gpu", "google.com/tpu", "habana.ai/gaudi")
RESOURCE_PREFIXES = ("nvidia.com/mig-", "aws.amazon.com/neuron", "gpu.intel.com/", "nvidia.com/gpu-", "amd.com/gpu-")
DEVICE_CLASS = re.compile(r"(^|\.)(gpu|tpu|neuron|mig)(\.|$)|nvidia|amd\.com|habana", re.I)
# Node labels that name or select accelerators (NVIDIA GPU feature discovery, GKE, Karpenter, EKS).
_LABEL_WORDS = re.compile(r"gpu|accelerator|tpu|neuron|inferentia|trainium", re.I)
INSTANCE_LABELS = (
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category",
    "cloud.google.com/machine-family",
    "eks.amazonaws.com/instance-type",
)
# A key naming an accelerator field: any non-empty value under it is evidence.
_FIELD_WORDS = re.compile(r"accelerat|gpu|tpu|neuron|inferentia|trainium", re.I)
_FILE_KEY = re.compile(r"\.(ya?ml|json|conf|cfg|ini|txt|rules|toml|sh|py|md)$", re.I)  # a ConfigMap file name
_OWN_KEYS = frozenset(
    k.lower()
    for k in (
        metadata.AWS_REQUIRED,
        metadata.AWS_SIZED_BY,
        metadata.GCP_REQUIRED,
        metadata.GCP_SIZED_BY,
        metadata.K8S_REQUIRED,
        metadata.K8S_SIZED_BY,
        metadata.K8S_WORKLOAD,
        "gpusizer:workload",
        "gpusizer-workload",
    )
)
_EXCLUDING = re.compile(r"exclud|tolerat|antiaffinity|anti_affinity", re.I)
# Metadata that records, never provisions: tags, resource labels, annotations, descriptions.
METADATA = frozenset(
    {
        "tags",
        "tagsall",
        "labels",
        "annotations",
        "resourcelabels",
        "description",
        "tagspecifications",
        "defaulttags",
        "userlabels",
        "effectivelabels",
        "terraformlabels",
        "pulumilabels",
    }
)
_NOTHING = frozenset({"", "none", "false", "0", "disabled", "off", "no", "null"})
_AWS_TYPE = re.compile(
    r"^(?:ml\.|db\.|cache\.|ra3\.)?([a-z][a-z0-9-]*)\.(nano|micro|small|medium|large|"
    r"\d*xlarge|metal(?:-\d+xl)?|\d+xl)$"
)
# GCP accelerator-optimized machine types by their shape (a2-highgpu-1g, a3-megagpu-8g, a4x-highgpu-4g,
# g2-standard-4, ct5lp-hightpu-4t): a name such as "a3-data" or "ctrl-plane" is none.
_GCP_TYPE = re.compile(r"^([a-z][a-z0-9]*)-(?:(?:high|mega|ultra|edge)gpu-\d+g(?:-[a-z0-9]+)?|standard-\d+)$")
_GCP_TPU_TYPE = re.compile(r"^ct\d+[a-z]*-(?:high|standard)(?:tpu)?-\d+t$")
_TPU_TYPE = re.compile(r"^(v\d+[a-z]*(?:lite)?(?:pod)?-\d+|tpu-v\d+.*|ct\d+[a-z]*-.*|tpu\d+[a-z]*.*)$")
# Accelerator type names (GCP acceleratorTypes, GKE accelerator and TPU labels): nvidia-l4, nvidia-tesla-t4,
# nvidia-h100-80gb, tpu-v5-lite-podslice, tpu7x; a resource's own name ("tpu-checkpoints") is none.
_ACCELERATOR_NAME = re.compile(r"^(nvidia-(tesla-|rtx-)?[a-z]{0,3}\d|tpu-v\d|tpu\d|intel-gaudi|gaudi\d?-)")
# Types inside free text (a CLI command, an ECS placement expression, a CloudFormation body): an AWS type
# with a size, a GCP accelerator-optimized machine type.
_AWS_IN_TEXT = re.compile(r"(?<![a-z0-9-])([a-z][a-z0-9-]*)\.(\d*xlarge|metal(?:-\d+xl)?|large|medium)(?![a-z0-9])")
_GCP_IN_TEXT = re.compile(
    r"(?<![a-z0-9-])([a-z][a-z0-9]*)-(?:high|mega|ultra|edge)gpu-\d+g(?:-[a-z0-9]+)?(?![a-z0-9])"
    r"|(?<![a-z0-9-])(g2|g4)-standard-\d+(?![a-z0-9])"
)
# Resources named by kind in a list of requirements (ECS resourceRequirements: {type: GPU, value: "8"};
# ECS inference accelerators), and what exposes a node's GPUs to a container without requesting them
# (NVIDIA container toolkit: NVIDIA_VISIBLE_DEVICES=all under the nvidia runtime class).
_KIND_VALUES = frozenset({"gpu", "tpu", "neuron", "inferenceaccelerator", "accelerator", "neuroncore"})
_VISIBLE = frozenset({"nvidia_visible_devices", "cuda_visible_devices", "nvidia_driver_capabilities"})
# Karpenter's instance-category values of accelerated families (EC2 naming: g, p, inf, trn, dl, gr, vt, f).
_ACCELERATED_CATEGORIES = frozenset({"g", "p", "inf", "trn", "dl", "gr", "vt", "f"})
MAX_DOCUMENT = 1_000_000  # characters of an embedded YAML/JSON document read (a manifest bundle fits)
MAX_NODES = 200_000  # values walked per resource: a larger property tree is itself a finding


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One thing seen that can put an accelerator under a resource.

    Attributes:
        path: where (`spec.template.spec.containers[0].resources.limits.nvidia.com/gpu`).
        kind: "type" (an accelerated instance or machine type), "resource" (an accelerator resource name),
            "accelerator" (an accelerator field or type name), "selector" (a node selection on a GPU label).
        what: the value as seen.
    """

    path: str
    kind: str
    what: str

    def __str__(self) -> str:
        return f"{self.path} = {self.what}" if self.path else self.what


def normal(value: str) -> str:
    """A type as the cloud matches it: trimmed, lower case, the last segment of a URL or path."""
    return value.strip().lower().rstrip("/").rsplit("/", 1)[-1].strip()


# An extended resource name whose vendor domain is an accelerator maker's or names one: device plugins
# register GPUs and TPUs under their own domain (KubeVirt passthrough `nvidia.com/GH100_H100_SXM5_80GB`,
# `cloud-tpus.google.com/v3`, `habana.ai/gaudi`, `xilinx.com/fpga-*`), whatever the name after the slash;
# a name with a dot is a node label of the same vendor (GPU feature discovery: nvidia.com/gpu.present,
# nvidia.com/mig.strategy, nvidia.com/cuda.driver.major), not a resource.
_VENDOR_RESOURCE = re.compile(
    r"^(?:[a-z0-9-]+\.)*(?:nvidia\.com|amd\.com|habana\.ai|xilinx\.com|"
    r"[a-z0-9-]*(?:gpu|tpu|neuron)[a-z0-9-]*\.[a-z0-9.-]+)/[A-Za-z0-9_-]+$",
    re.I,
)


def is_resource_name(key: str) -> bool:
    k = key.strip().lower()
    for prefix in ("requests.", "limits."):  # ResourceQuota spells requests.nvidia.com/gpu
        k = k.removeprefix(prefix)
    return k in RESOURCE_NAMES or k.startswith(RESOURCE_PREFIXES) or bool(_VENDOR_RESOURCE.match(k))


def gpu_label(key: str) -> bool:
    """A node label key that names or selects accelerators (never gpusizer's own metadata)."""
    k = key.strip().lower()
    if k in _OWN_KEYS or k.startswith("gpusizer"):
        return False
    return "/" in k and bool(_LABEL_WORDS.search(k.rsplit("/", 1)[-1])) or k in RESOURCE_NAMES


def accelerated_type(value: str, loose: bool = False, tpu: bool = False) -> str | None:
    """The normalised type when `value` is an accelerated instance or machine type (or, `loose`, a bare
    family such as AWS Batch and Karpenter take, or GKE's cloud.google.com/machine-family label; `tpu`, a TPU type such as `v5litepod-8`), else None."""
    if not isinstance(value, str) or len(value) > 300 or v.is_unknown(value):
        return None
    t = normal(value)
    fam = families()
    m = _AWS_TYPE.match(t)
    if m and (m.group(1) in fam["aws"] or t.removeprefix("ml.") in audit.types_of("aws")):
        return t
    m = _GCP_TYPE.match(t)
    if (m and m.group(1) in fam["gcp"]) or _GCP_TPU_TYPE.match(t) or t in audit.types_of("gcp"):
        return t
    if (loose and (t in fam["aws"] or t in fam["gcp"])) or (tpu and _TPU_TYPE.match(t)):
        return t  # a bare family: AWS Batch and Karpenter take AWS ones, GKE's machine-family label GCP ones
    return None


def families() -> dict[str, frozenset[str]]:
    """Accelerated families: policies/accelerator_families.yaml plus every family the catalog prices."""
    out = dict(shapes.families())
    out["aws"] = out["aws"] | {shapes.aws_family(t) for t in audit.types_of("aws")}
    out["gcp"] = out["gcp"] | {shapes.gcp_family(t) for t in audit.types_of("gcp") if "+" not in t}
    return out


def _positive(value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    if isinstance(value, str):
        s = value.strip().lower()
        if v.is_unknown(value) or s in _NOTHING:
            return False
        try:
            return float(s.rstrip("kmgi")) > 0
        except ValueError:
            return True
    return value is not None and bool(value)


def _documents(text: str) -> list:
    """YAML/JSON documents held in a string (a manifest bundle, a values file), or none."""
    s = text.strip()
    if len(s) > MAX_DOCUMENT or not (s.startswith(("{", "[", "---", "apiVersion")) or ("\n" in s and ":" in s)):
        return []
    try:
        docs = [d for d in yaml.safe_load_all(s) if isinstance(d, (Mapping, list))]
    except (yaml.YAMLError, ValueError, RecursionError):
        return []
    return docs


def documents(text: str) -> list:
    """The mappings and lists a string holds as YAML or JSON (public: policies/model.py expands manifests)."""
    return _documents(text)


class _Walk:
    def __init__(self):
        self.out: list[Evidence] = []
        self.nodes = 0

    def add(self, path: str, kind: str, what) -> None:
        self.out.append(Evidence(path, kind, str(what)[:120]))

    def run(self, data, path: str = "") -> None:
        stack = [(data, path, False)]
        while stack:
            value, where, field = stack.pop()
            self.nodes += 1
            if self.nodes > MAX_NODES:
                self.add(
                    where,
                    "accelerator",
                    f"more than {MAX_NODES} values: too large to read, judged as if it held an accelerator",
                )
                return
            if isinstance(value, Mapping):
                self.mapping(value, where, field, stack)
            elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
                stack += [(x, f"{where}[{i}]", field) for i, x in enumerate(value)]
            elif isinstance(value, str):
                self.text(value, where, field, stack)
            elif field and _positive(value):  # a count, or a switch that turns accelerators on (enableTpu)
                self.add(where, "accelerator", value)

    def mapping(self, m: Mapping, where: str, field: bool, stack: list) -> None:
        op = str(m.get("operator", "")).strip().lower() if isinstance(m.get("operator"), str) else ""
        if op in ("notin", "doesnotexist", "lt") and "key" in m:
            return  # keeps accelerators out (or bounds them from above): the model judges what remains
        if "effect" in m and "key" in m:
            return  # a toleration admits a pod to a tainted node, it requests nothing
        key = m.get("key")
        if (
            isinstance(key, str)
            and op in ("in", "exists", "gt", "")
            and (gpu_label(key) or (key.strip().lower().endswith("instance-category") and _categories(m.get("values"))))
        ):
            self.add(_join(where, "key"), "selector", f"{key.strip()} {op or 'in'} {m.get('values', '')}")
        for k in ("type", "resourcetype", "resource", "name"):
            kind = next((x for kk, x in m.items() if str(kk).lower() == k), None)
            if (
                isinstance(kind, str)
                and kind.strip().lower() in _KIND_VALUES
                and k != "name"
                or (
                    k == "name"
                    and isinstance(kind, str)
                    and kind.strip().lower() in _VISIBLE
                    and str(m.get("value", "")).strip().lower() not in _NOTHING | {"void"}
                )
            ):
                self.add(_join(where, k), "resource", f"{kind.strip()} {m.get('value', m.get('count', ''))}".strip())
                break
        cb = next((x for kk, x in m.items() if str(kk).lower() == "capacityblockofferingid"), None)
        if isinstance(cb, str) and cb.strip():  # EC2 Capacity Blocks for ML sell accelerated instances only
            self.add(_join(where, "capacityBlockOfferingId"), "type", f"capacity block {cb.strip()}")
        rc = next((x for kk, x in m.items() if str(kk).lower() == "runtimeclassname"), None)
        if isinstance(rc, str) and "nvidia" in rc.lower():
            self.add(_join(where, "runtimeClassName"), "resource", rc)
        for k, x in m.items():
            ks = str(k)
            here = _join(where, ks)
            if _EXCLUDING.search(ks) or ks.strip().lower() in _OWN_KEYS or ks.strip().lower() in METADATA:
                continue
            if is_resource_name(ks):
                if _positive(x) or isinstance(x, (Mapping, list)):
                    self.add(here, "resource", f"{ks.strip()}: {x}")
                continue
            if gpu_label(ks) and isinstance(x, (str, int, float, bool)) and not isinstance(x, bool) and _positive(x):
                self.add(here, "selector", f"{ks.strip()}={x}")
                continue
            if ks.strip().lower() in INSTANCE_LABELS and isinstance(x, str) and accelerated_type(x, loose=True):
                self.add(here, "selector", f"{ks.strip()}={x}")
                continue
            named = (
                bool(_FIELD_WORDS.search(ks))
                and not ks.lower().startswith(("gpusizer", "enablegpusizer"))
                and not _FILE_KEY.search(ks)
            )
            stack.append((x, here, field or named))

    def text(self, s: str, where: str, field: bool, stack: list) -> None:
        if v.is_unknown(s):
            return
        last = where.rsplit(".", 1)[-1].rstrip("]0123456789[").lower()
        loose = field or any(w in last for w in ("instance", "family", "values", "machine", "shape"))
        t = accelerated_type(s, loose=loose, tpu=field)
        if t:
            self.add(where, "type", t)
            return
        n = normal(s)
        named = last in ("name", "id", "title", "bucket", "namespace") and not field
        if (_ACCELERATOR_NAME.match(n) and not named) or (field and audit.gpu_from_label(n)):
            self.add(where, "accelerator", s.strip())
            return
        if DEVICE_CLASS.search(n) and last in ("deviceclassname", "deviceclass", "driver", "resourceclassname"):
            self.add(where, "resource", s.strip())
            return
        if is_resource_name(s) and last not in ("key",):
            self.add(where, "resource", s.strip())
            return
        if (
            field
            and _positive(s)
            and len(s) < 100
            and not any(c.isspace() for c in s.strip())
            and last not in ("name", "description", "id")
        ):
            self.add(where, "accelerator", s.strip())
            return
        docs = _documents(s)
        for i, doc in enumerate(docs):
            stack.append((doc, f"{where}<doc {i}>", field))
        if not docs and len(s) <= MAX_DOCUMENT:
            for t in in_text(s):
                self.add(where, "type", t)
            for r in requests_in_text(s):
                self.add(where, "resource", r)
            decoded = _base64(s)
            if decoded is not None:  # user data a provider decodes (userDataBase64, a cloud-init part)
                stack.append((decoded, f"{where}<base64>", field))


_B64 = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}$")


def _base64(s: str) -> str | None:
    """The text a base64 string holds (user data), or None when it is not base64 of UTF-8 text."""
    t = "".join(s.split())
    if len(t) < 24 or len(t) % 4 or not _B64.match(t):
        return None
    try:
        raw = base64.b64decode(t, validate=True)
        if raw[:2] == b"\x1f\x8b":  # gzip: cloud-init and EC2 accept compressed user data
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_DOCUMENT + 1)[:MAX_DOCUMENT]
        out = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError, OSError, EOFError):
        return None
    return out if out.isprintable() or "\n" in out else None


def _categories(values) -> bool:
    vals = values if isinstance(values, list) else [values]
    return any(isinstance(x, str) and x.strip().lower() in _ACCELERATED_CATEGORIES for x in vals)


# Accelerators requested inside command text: `gcloud ... --accelerator=type=nvidia-tesla-v100,count=8`,
# `kubectl run ... --limits=nvidia.com/gpu=8`, `helm ... --set resources.limits.nvidia\.com/gpu=8`,
# `docker run --gpus all`, and DRA device expressions naming a GPU driver (`device.driver == "gpu.nvidia.com"`).
_REQUEST_IN_TEXT = re.compile(
    r"--accelerator[= ](?:type=)?[a-z0-9-]*(?:nvidia|tpu|gaudi)|--gpus[= ]\S|"
    r"(?:nvidia|amd)\\?\.com/gpu|google\\?\.com/tpu|aws\.amazon\\?\.com/neuron|"
    r"gpu\.nvidia\.com|gpu\.amd\.com|tpu\.google\.com",
    re.I,
)


def requests_in_text(text: str) -> list[str]:
    """Accelerator requests written inside free text (commands, expressions), each once."""
    return list(dict.fromkeys(m.group(0) for m in _REQUEST_IN_TEXT.finditer(text)))


def in_text(text: str) -> list[str]:
    """Accelerated instance or machine types named inside free text, normalised, each once."""
    low = text.lower()
    fam = families()
    out = []
    for m in _AWS_IN_TEXT.finditer(low):
        t = m.group(0)
        if m.group(1) in fam["aws"] or t in audit.types_of("aws"):
            out.append(t)
    for m in _GCP_IN_TEXT.finditer(low):
        if m.group(1) is None or m.group(1) in fam["gcp"]:
            out.append(m.group(0))
    return list(dict.fromkeys(out))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def extract(props, path: str = "") -> list[Evidence]:
    """Every piece of GPU evidence in `props` (plain data: dicts, lists, scalars; unknowns as sentinels)."""
    w = _Walk()
    w.run(props, path)
    return w.out
