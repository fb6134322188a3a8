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
import functools
import gzip
import io
import pathlib
import re
import zipfile
from collections.abc import Mapping, Sequence

import yaml

from gpusizer.contract import audit, metadata
from gpusizer.facts import hardware
from gpusizer.policies import deploytime, shapes, shell
from gpusizer.policies import view as v

# Kubernetes extended resources and DRA device classes of accelerators (NVIDIA device plugin, AMD GPU device
# plugin, GKE TPUs, AWS Neuron device plugin, Intel and Habana device plugins).
RESOURCE_NAMES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "amd.com/gpu", "google.com/tpu", "habana.ai/gaudi")
RESOURCE_PREFIXES = ("nvidia.com/mig-", "aws.amazon.com/neuron", "gpu.intel.com/", "nvidia.com/gpu-", "amd.com/gpu-")
DEVICE_CLASS = re.compile(r"(^|\.)(gpu|tpu|neuron|mig)(\.|$)|nvidia|amd\.com|habana|accel|gpu", re.I)
# Any device plugin's extended resource whose name says what it is (`squat.ai/nvidia`, `example.com/gpu-large`):
# read where a container requests resources.
_DEVICE_NAME = re.compile(r"^[a-z0-9.-]+\.[a-z]+/[a-z0-9._-]*(?:nvidia|gpu|(?<!ou)tpu|neuron|amd|accel)", re.I)
# Node labels that name or select accelerators (NVIDIA GPU feature discovery, GKE, Karpenter, EKS).
# (`tpu` but not in `output`: the one common English word that holds it)
_LABEL_WORDS = re.compile(r"gpu|accelerator|(?<!ou)tpu|neuron|inferentia|trainium", re.I)
INSTANCE_LABELS = (
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category",
    "cloud.google.com/machine-family",
    "eks.amazonaws.com/instance-type",
)
# A key naming an accelerator field: any non-empty value under it is evidence. Bedrock's `modelUnits` buy
# dedicated inference capacity for a model (AWS Bedrock User Guide, "Provisioned Throughput": "a model unit
# delivers a specific throughput level", billed hourly per unit; read 2026-11-26): accelerators in other words.
_FIELD_WORDS = re.compile(r"accelerat|gpu|(?<!ou)tpu|neuron|inferentia|trainium|^model_?units$|^accels?$", re.I)
# Keys (and folders of keys) that measure, watch or describe accelerators rather than ask for them: a GPU
# utilisation threshold, a dashboard, an alert, a metric, a driver or image version (`IDLE_GPU_UTIL_PCT: 5`,
# `grafana.dashboards.gpu.gnetId`, `gpuDriverVersion`). A GPU word under them is no accelerator field.
_MEASURING = re.compile(
    r"util|threshold|pct|percent|metric|alarm|alert|dashboard|monitor|exporter|temperature|watts|power|idle"
    r"|driver|version|image",
    re.I,
)
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
# Step Functions' AWS SDK integrations that read or stop (Step Functions Developer Guide, "AWS SDK service
# integrations": arn:aws:states:::aws-sdk:<service>:<apiAction>).
_READ_VERBS = r"describe|list|get|stop|terminate|reboot|delete"  # what reads, or takes capacity away
_SFN_READS = re.compile(rf":aws-sdk:[a-z0-9]+:(?:{_READ_VERBS})[A-Za-z]*$", re.I)
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
# Selections of pods and namespaces (network policies, pod affinity, spread constraints, a workload's own
# selector): they pick pods by their labels, never nodes, so a GPU word in them provisions nothing.
_POD_SELECTING = frozenset(
    {
        "podselector",
        "namespaceselector",
        "labelselector",
        "podaffinity",
        "podantiaffinity",
        "topologyspreadconstraints",
        "matchlabels",
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


# Sizes of other clouds inside free text (`az vm create --size Standard_ND96isr_H100_v5`, `--shape BM.GPU.H100.8`),
# and type patterns (`attribute:ecs.instance-type =~ p5.*`, `--instance-types 'g6*'`).
@functools.cache
def _other_in_text() -> re.Pattern[str]:
    """Other clouds' accelerated sizes as they appear inside text (the patterns of
    policies/accelerator_families.yaml, unanchored)."""
    parts = [re.sub(r"(?<![\\\[])[\^$]", "", p.pattern) for p in shapes.other_clouds().values()]
    return re.compile("|".join(f"(?<![a-z0-9_.-])(?:{x})[a-z0-9_.-]*" for x in parts))


_WILD_IN_TEXT = re.compile(r"(?<![a-z0-9_./-])[a-z]+\d[a-z0-9-]*(?:\\?\.[a-z0-9]*)?\*")  # a family with its digit
# Resources named by kind in a list of requirements (ECS resourceRequirements: {type: GPU, value: "8"};
# ECS inference accelerators), and what exposes a node's GPUs to a container without requesting them
# (NVIDIA container toolkit: NVIDIA_VISIBLE_DEVICES=all under the nvidia runtime class).
_KIND_VALUES = frozenset({"gpu", "tpu", "neuron", "inferenceaccelerator", "accelerator", "neuroncore"})
VISIBLE = frozenset({"nvidia_visible_devices", "cuda_visible_devices", "nvidia_driver_capabilities"})
# Karpenter's instance-category values of accelerated families (EC2 naming: g, p, inf, trn, dl, gr, vt, f).
_ACCELERATED_CATEGORIES = frozenset({"g", "p", "inf", "trn", "dl", "gr", "vt", "f"})
# The one list of file extensions of code a tool runs or deploys (scripts, programs, infrastructure as code), and
# of the documents beside it a command may name: `_CODE` (what a folder's walk reads), `_PATH_TOKEN` (what a
# command names) and model._SCRIPT (what a record holding a file runs) are built from them.
CODE_EXTENSIONS = (
    "py", "sh", "bash", "js", "mjs", "cjs", "ts", "go", "rb", "java", "kt", "rs", "cs", "scala", "ps1",
    "tf", "tfvars", "hcl", "bicep",
)  # fmt: skip
DOCUMENT_EXTENSIONS = ("yaml", "yml", "json", "toml", "template", "txt")
_CODE = re.compile(
    rf"\.(?:{'|'.join(CODE_EXTENSIONS)}|ya?ml|json)$|(?:^|/)(?:makefile|dockerfile)$",
    re.I,
)
# A project's build manifest: a command naming one builds and runs the project's code.
_PROJECT_FILES = frozenset({"Cargo.toml", "go.mod", "package.json", "pyproject.toml", "pom.xml", "build.gradle"})
# Tools that read a file of a known name where they run, and the files it names (a helmfile's charts and values).
_TOOL_FILES = (
    (re.compile(r"(?<![\w-])make\b(?!\s+-C)"), ("Makefile", "makefile", "GNUmakefile")),
    (re.compile(r"\bhelmfile\b(?!\s+(?:-f|--file))"), ("helmfile.yaml", "helmfile.yaml.gotmpl")),
    (re.compile(r"\bskaffold\s+(?:run|deploy|dev)\b"), ("skaffold.yaml",)),
    (re.compile(r"\b(?:terraform|tofu)\s+apply\b"), ("terraform.tfvars", "terraform.tfvars.json")),  # loaded unasked
    (re.compile(r"(?<![\w-])just\b"), ("justfile", "Justfile", ".justfile")),
    (re.compile(r"(?<![\w-])task\s+\w"), ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml")),
    (re.compile(r"\b(?:npm|pnpm|yarn)\s+(?:run\s+)?\w"), ("package.json",)),
)
# Buying capacity that exists only as accelerators: EC2 Capacity Blocks for ML (AWS EC2 User Guide, "Capacity
# Blocks for ML": P and Trn instances), in the CLI's, boto3's and the other SDKs' spellings.
_BUYS_ACCELERATORS = re.compile(r"purchase[-_]?capacity[-_]?block(?:s)?(?![-_]?extension)|PurchaseCapacityBlock", re.I)
# Fields that name a script a tool runs (Helm's post-renderer, a hook): the file is read as a command's would be.
_RUN_KEYS = frozenset({"postrender", "postrenderer", "script", "scriptpath", "hook", "binarypath"})
# Tools that deploy the code of the folder they run in (a Command's `dir`): Terraform and OpenTofu, Pulumi, the
# CDK, SAM, the Serverless Framework, `go run .`, npm scripts, helmfile, make (its Makefile).
_RUNS_FOLDER = re.compile(
    r"\b(?:(?:terraform|tofu)\s+apply|pulumi\s+(?:up|update)|cdk\s+deploy|sam\s+deploy|"
    r"(?:serverless|sls)\s+deploy|go\s+run\s+\.|npm\s+(?:run|start)|npx\s+ts-node|helmfile\s+(?:apply|sync)|"
    r"make)(?![\w-])"
)
COMMANDED = "<command>"  # marks the path of a template a command in text launches from
MAX_DOCUMENT = 1_000_000  # characters of an embedded YAML/JSON document read (a manifest bundle fits)
MAX_NODES = 200_000  # values walked per resource: a larger property tree is itself a finding
# Bounds on what one value or one command makes the pack read. A type value is a short token (a placeholder type is
# under `_VALUE` characters); an ARM or program expression that builds one is a line (`_EXPRESSION`); a folder a
# tool deploys is read for its first `_FOLDER_FILES` code files (a function or a small IaC project: larger is a
# repository the pack does not read whole), and a command names at most 5 more files.
_VALUE = 120
_EXPRESSION = 1000
_FOLDER_FILES = 20


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One thing seen that can put an accelerator under a resource.

    Attributes:
        path: where (`spec.template.spec.containers[0].resources.limits.nvidia.com/gpu`).
        kind: "type" (an accelerated instance or machine type), "mention" (one named inside free text: a
            command, a script, an expression), "resource" (an accelerator resource name), "accelerator" (an
            accelerator field or type name), "selector" (a node selection on a GPU label).
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
    k = key.strip().lower().replace("~1", "/")  # a JSON patch path escapes "/" as "~1" (RFC 6901)
    for prefix in ("requests.", "limits."):  # ResourceQuota spells requests.nvidia.com/gpu
        k = k.removeprefix(prefix)
    return k in RESOURCE_NAMES or k.startswith(RESOURCE_PREFIXES) or bool(_VENDOR_RESOURCE.match(k))


# Labels GPU feature discovery puts on nodes that already have GPUs (`nvidia.com/gpu.present`,
# `nvidia.com/gpu.deploy.*`): no autoscaler provisions for them, so selecting them makes no capacity.
_PRESENCE = re.compile(r"\.present$|\.deploy\.|^feature\.node\.kubernetes\.io/")


def gpu_label(key: str) -> bool:
    """A node label key that names or selects accelerators (never gpusizer's own metadata, nor a label that
    only marks nodes already holding GPUs)."""
    k = key.strip().lower()
    if k in _OWN_KEYS or k.startswith("gpusizer") or _PRESENCE.search(k):
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
    if any(p.match(t) for p in shapes.other_clouds().values()):
        return t  # an accelerated size of a cloud the catalog does not price (Azure, OCI, ...)
    return None


@functools.cache
def families() -> dict[str, frozenset[str]]:
    """Accelerated families: policies/accelerator_families.yaml plus every family the catalog prices (the pack's
    catalog is fixed for the process: computed once)."""
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


class _TagBlind(yaml.SafeLoader):
    """YAML as the safe loader reads it, with application tags read as what they mean: CloudFormation's short
    forms as the intrinsic functions they stand for (`!Sub 'p5.${Size}'` is `{"Fn::Sub": "p5.${Size}"}`,
    evaluated by policies/deploytime.py), any other tag (GitLab's `!reference`) as the value it tags."""


# CloudFormation's short-form tags (AWS CloudFormation User Guide, "Intrinsic function reference", read
# 2026-11-26): `!Ref` and `!Condition` stand for themselves, the others for `Fn::<name>`.
_CFN_TAGS = frozenset(
    "Base64 Cidr FindInMap GetAtt GetAZs ImportValue Join Select Split Sub Transform And Equals If Not Or "
    "ToJsonString Length ForEach".split()
)


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node):
    value: object
    if isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        return {"Fn::GetAtt": value.split(".", 1)}
    return {f"Fn::{suffix}": value} if suffix in _CFN_TAGS else value


_TagBlind.add_multi_constructor("!", _untagged)


def documents(text: str) -> list:
    """YAML/JSON documents held in a string (a manifest bundle, a values file), or none (public: manifests and
    charts read the documents their inputs hold)."""
    s = text.strip()
    if len(s) > MAX_DOCUMENT or not (s.startswith(("{", "[", "---", "apiVersion")) or ("\n" in s and ":" in s)):
        return []
    try:
        docs = [d for d in yaml.load_all(s, Loader=_TagBlind) if isinstance(d, (Mapping, list))]
    except (yaml.YAMLError, ValueError, RecursionError):
        return []
    return docs


LAUNCHER = "launcher "  # marks the path of a document that a tool launches capacity from (`launcher`)
# Kubernetes kinds that launch nothing when applied: data, permissions, networking, monitoring rules, quotas.
_INERT_KINDS = frozenset(
    "configmap secret resourcequota prometheusrule servicemonitor podmonitor role clusterrole rolebinding "
    "clusterrolebinding serviceaccount networkpolicy service ingress namespace".split()
)


def launcher(doc) -> bool:
    """Whether a document is one a tool launches capacity from when it is applied, whoever holds it (a
    ConfigMap mounted into a job that runs `kubectl apply -f` or `eksctl create -f` on it, a Secret that
    `ray up` reads, an object `sky launch` fetches): a Kubernetes object of a kind that runs or provisions
    (Pods, workloads, node pools, eksctl's ClusterConfig), a Ray cluster config, an AWS ParallelCluster
    config, an Ansible playbook, a SkyPilot or dstack task, a CloudFormation template, Terraform JSON. Held
    as data, what it asks for is still asked for."""
    if isinstance(doc, list):  # an Ansible playbook: plays with hosts and tasks (cloud modules launch instances)
        return any(isinstance(p, Mapping) and "hosts" in p and ("tasks" in p or "roles" in p) for p in doc)
    if not isinstance(doc, Mapping):
        return False
    keys = {str(k).lower(): x for k, x in doc.items()}
    kind = keys.get("kind")
    if isinstance(keys.get("apiversion"), str) and isinstance(kind, str):
        return kind.strip().lower() not in _INERT_KINDS
    if {"available_node_types", "head_node_type"} & keys.keys() or {"cluster_name", "provider"} <= keys.keys():
        return True  # Ray's cluster launcher (docs.ray.io, "Cluster YAML Configuration Options")
    if {"pipelineinfo", "root"} <= keys.keys() or {"deploymentspec", "pipelinespec"} & keys.keys():
        return True  # a Kubeflow / Vertex AI pipeline spec (its executors' `resources.accelerator`)
    if {"headnode", "scheduling"} <= keys.keys():
        return True  # AWS ParallelCluster's cluster config (`pcluster create-cluster --cluster-configuration`)
    res = keys.get("resources")
    if isinstance(res, Mapping) and (
        {"run", "setup", "num_nodes", "type", "commands"} & keys.keys()
        or {"accelerators", "instance_type", "gpu"} & {str(k).lower() for k in res}
    ):
        # SkyPilot's task YAML (`resources: {accelerators: H100:8}`, docs.skypilot.co "YAML spec"); dstack's
        # (`type: task`, `resources: {gpu: ...}`)
        return True
    if deploytime.cfn_template(doc):
        return True
    return isinstance(keys.get("resource"), Mapping)  # Terraform JSON (`{"resource": {"aws_instance": ...}}`)


class _Walk:
    def __init__(self, local_files: bool = False, env: Mapping[str, str] | None = None):
        self.out: list[Evidence] = []
        self.nodes = 0
        self.local_files = local_files
        self.bases: list[pathlib.Path] = [pathlib.Path.cwd()]  # where relative paths are read from
        self.read: set[pathlib.Path] = set()  # local files read once (two scripts may name each other)
        self.env = env or {}
        self.parameters: Mapping = {}  # the resource's own parameter values (a CloudFormation stack's)

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
                if _last(where).lower() in _ARGV and len(value) > 1 and all(isinstance(x, str) for x in value):
                    # a container's command or args: one command line, as the runtime passes it
                    self.text(" ".join(value), where, field, stack)
            elif isinstance(value, str):
                self.text(value, where, field, stack)
            elif field and _positive(value) and (not isinstance(value, bool) or _SWITCH.match(_last(where))):
                # a count, or a switch that turns accelerators on (`enableTpu`, `gpu: {enabled: true}`); a
                # switch for something else about them (`gpuDashboard: true`) turns none on
                self.add(where, "accelerator", value)

    def mapping(self, m: Mapping, where: str, field: bool, stack: list) -> None:
        op = str(m.get("operator", "")).strip().lower() if isinstance(m.get("operator"), str) else ""
        keys = {str(k).strip().lower() for k in m}
        skip: frozenset[str] = frozenset()
        if op in ("notin", "doesnotexist", "lt") and "key" in m:
            opened = _opens_accelerators(m.get("key"), op, m.get("values"))
            if opened:
                self.add(_join(where, "key"), "selector", opened)
            if keys <= _REQUIREMENT_KEYS:
                return  # keeps accelerators out (or bounds them from above): the model judges what remains
            skip = _REQUIREMENT_KEYS  # a requirement's words beside other fields: the other fields still count
        if "effect" in m and "key" in m and keys <= _TOLERATION_KEYS:
            return  # a toleration admits a pod to a tainted node, it requests nothing
        resource = m.get("Resource")
        if isinstance(resource, str) and _SFN_READS.search(resource):
            # a Step Functions task calling an AWS API that reads or stops (`aws-sdk:ec2:describeInstanceTypes`):
            # the types in its parameters are what it asks about, not what it launches
            skip = frozenset({"parameters", "arguments"})
        if _last(where).lower() == "sharing" and keys & {"timeslicing", "mps"}:
            # the NVIDIA device plugin's sharing config: it splits a node's GPUs among pods and provisions none
            # (k8s-device-plugin README, "Shared Access to GPUs"); the same text in a ConfigMap is a record
            return
        key = m.get("key") if not skip else None
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
                    and kind.strip().lower() in VISIBLE
                    and str(m.get("value", "")).strip().lower() not in _NOTHING | {"void"}
                )
            ):
                self.add(_join(where, k), "resource", f"{kind.strip()} {m.get('value', m.get('count', ''))}".strip())
                break
        if self.local_files and m.get(v.SIG_KEY) in (v.ASSET_SIG, v.ARCHIVE_SIG) and isinstance(m.get("path"), str):
            for name, text in _archived(
                m["path"], self.bases[-1]
            ):  # a function's code (a FileArchive, a zip): what it runs
                stack.append((text, f"{_join(where, 'path')}<{name}>", field))
        option, option_value = _option(m)
        if option and _sizes(option) and isinstance(option_value, str):  # {name: InstanceTypes, value: "t3..,p5.."}
            for part in re.split(r"[,\s]+", option_value):
                t = accelerated_type(part, loose=True) if part else None
                if t:
                    self.add(_join(where, "value"), "type", t)
        if (
            isinstance(key, str)
            and key.strip().lower().endswith("sku-family")
            and op in ("in", "")
            and any(isinstance(x, str) and _AZURE_GPU_FAMILY.match(x.strip()) for x in m.get("values") or [])
        ):
            self.add(_join(where, "key"), "selector", f"{key.strip()} {op or 'in'} {m.get('values', '')}")
        cb = next((x for kk, x in m.items() if str(kk).lower() == "capacityblockofferingid"), None)
        if isinstance(cb, str) and cb.strip():  # EC2 Capacity Blocks for ML sell accelerated instances only
            self.add(_join(where, "capacityBlockOfferingId"), "type", f"capacity block {cb.strip()}")
        rc = next((x for kk, x in m.items() if str(kk).lower() == "runtimeclassname"), None)
        if isinstance(rc, str) and "nvidia" in rc.lower():
            self.add(_join(where, "runtimeClassName"), "resource", rc)
        for k, x in m.items():
            ks = str(k)
            here = _join(where, ks)
            low = ks.strip().lower()
            if field and x is None and (_names_a_gpu(ks) or accelerated_type(ks)):
                # a set written as a mapping's keys (SkyPilot's `accelerators: {H100:8, A100-80GB:8}`: any of them)
                self.add(here, "accelerator", ks.strip())
                continue
            if low in _TEMPLATE_KEYS:
                for ref in _template_refs(x):
                    self.add(here, "template", ref)
            if low in skip or low in _OWN_KEYS or low in _POD_SELECTING or _PRESENCE.search(low):
                continue  # (a presence label selects nodes that already hold GPUs: it makes no capacity)
            if (_EXCLUDING.search(ks) or low in METADATA) and _flat(x):
                continue  # tags, labels, tolerations, exclusion lists: records and exclusions, never capacity
            if low in ("eventpattern", "filterpattern"):
                continue  # an event rule's pattern filters events (a CloudTrail RunInstances record): it launches nothing
            asked = where.rsplit(".", 1)[-1] in ("limits", "requests")
            if (
                is_resource_name(ks)
                or (asked and _DEVICE_NAME.match(ks.strip()))
                or (asked and "/" in ks and _names_a_gpu(ks.split("/", 1)[1]))  # `example.com/h100: 8`
            ):
                if _positive(x) or isinstance(x, (Mapping, list)):
                    self.add(here, "resource", f"{ks.strip()}: {x}")
                continue
            if gpu_label(ks) and isinstance(x, (str, int, float, bool)) and not isinstance(x, bool) and _positive(x):
                self.add(here, "selector", f"{ks.strip()}={x}")
                continue
            if ks.strip().lower() in INSTANCE_LABELS and isinstance(x, str) and accelerated_type(x, loose=True):
                self.add(here, "selector", f"{ks.strip()}={x}")
                continue
            if low.endswith("sku-family") and isinstance(x, str) and _AZURE_GPU_FAMILY.match(x.strip()):
                self.add(here, "selector", f"{ks.strip()}={x}")  # Azure's N-series (NC, ND, NV): GPU sizes
                continue
            if (
                _last(where).lower() == "nodeselector"
                and isinstance(x, str)
                and (_names_a_gpu(x) or (low.endswith("compute-class") and _names_a_family(x)))
            ):
                # a node class chosen by a name that names a GPU (GKE `cloud.google.com/compute-class:
                # h100-class`): the class's nodes are GPU nodes the pack cannot see
                self.add(here, "selector", f"{ks.strip()}={x}")
                continue
            if low in ("resourceclaimtemplatename", "resourceclaimname") and isinstance(x, str) and x.strip():
                # a pod's DRA claim: the devices it allocates (GPUs, in practice) are in the claim, by name
                self.add(here, "resource", f"DRA claim {x.strip()}")
                continue
            named = (
                bool(_FIELD_WORDS.search(ks))
                and not ks.lower().startswith(("gpusizer", "enablegpusizer"))
                and not _FILE_KEY.search(ks)
                and not _MEASURING.search(here)
                and not low.rstrip("s").endswith(_NAMING_FIELDS)  # it names a thing: `GPU_REPORT_TABLE: gpu-inventory`
            )
            stack.append((x, here, field or named))

    def provider_code(self, s: str, where: str) -> None:
        """A dynamic provider's serialized code (base64 of a pickle, or its source as a Node.js provider sends
        it): its constants are plain strings; an accelerated type among them is what its create() may launch
        (`SIZES = {"xl": "p5.48xlarge"}`), and a launch it builds a type for is read as any code's."""
        for t in in_text(s) + shell.unreadable_launches(s, self.env):
            self.add(where, "mention", f"{t} (in the dynamic provider's code)")
        try:
            blob = base64.b64decode("".join(s.split()), validate=False)[: MAX_DOCUMENT * 4]  # a pickle: 4 bytes a char
        except ValueError:
            return
        words = [t.decode("ascii").strip() for t in re.findall(rb"[\x20-\x7e]{4,}", blob)]
        launches = [w for w in words if shell.launches_from_template(w)]
        if launches and not any(_AWS_TYPE.match(w.lower()) or _GCP_TYPE.match(w.lower()) for w in words):
            # it calls a launch (`run_instances`) and holds no literal type: the type is built or read at run time
            self.add(where, "mention", f"{launches[0]} (in the dynamic provider's code, with a type built at run time)")
        for word in words:
            t = accelerated_type(word)
            if t:
                self.add(where, "type", f"{t} (in the dynamic provider's code)")
            for r in requests_in_text(word):
                self.add(where, "resource", f"{r} (in the dynamic provider's code)")

    def text(self, s: str, where: str, field: bool, stack: list) -> None:
        if v.is_unknown(s):
            return
        last = where.rsplit(".", 1)[-1].rstrip("]0123456789[").lower()
        if last.endswith(("image", "imageuri", "imagename")):
            return  # a container image reference: its name and tag are any text the registry allows
        loose = field or any(w in last for w in ("instance", "family", "values", "machine", "shape", "size"))
        t = accelerated_type(s, loose=loose, tpu=field)
        if t:
            self.add(where, "type", t)
            return
        if _sizes(last) and _names_a_gpu(s.strip()):
            self.add(where, "type", f"{s.strip()} (a size naming a GPU)")
            return
        if loose and "*" in s:
            wild = wildcard_families(s)
            if wild:
                self.add(where, "type", f"{s.strip()} admits {', '.join(wild[:4])}")
                return
        if (
            len(s) < _VALUE
            and shell.PLACEHOLDER.search(s)
            and not any(c.isspace() for c in shell.PLACEHOLDER.sub("", s))
        ):
            t = templated_type(s, loose)
            if t:
                self.add(where, "type", t)
                return
        if s.startswith("[") and s.endswith("]") and "(" in s and len(s) < _EXPRESSION:
            # an ARM template expression (`[if(equals(parameters('env'), 'prod'), 'Standard_ND96asr_v4', ...)]`):
            # any literal it holds may be its value
            for lit in _literals(s):
                t = accelerated_type(lit, loose=True)
                if t or (_sizes(last) and _names_a_gpu(lit)):
                    self.add(where, "type", f"{t or lit} (a value the ARM expression {s[:50]}... may take)")
                    return
        computed = shell.evaluated(s) if "(" in s and len(s) < _EXPRESSION else s  # (an expression, not a document)
        if computed != s:  # an expression of literals (`[concat('Standard_NC', '24ads_A100_v4')]`), computed
            value = computed.strip().strip("[]").strip("'\"")
            t = accelerated_type(value, loose=loose)
            if t or (_sizes(last) and _names_a_gpu(value)):
                self.add(where, "type", f"{t or value} (computed from {s.strip()[:60]})")
                return
        n = normal(s)
        named = last in ("name", "id", "title", "bucket", "namespace") and not field
        if (_ACCELERATOR_NAME.match(n) and not named) or (field and audit.gpu_from_label(n)):
            self.add(where, "accelerator", s.strip())
            return
        if last == "expression" and "device." in s:
            # a DRA request's CEL selector (`device.attributes['productName'] == 'NVIDIA H100 80GB HBM3'`): the
            # device it picks, by the model a literal names (Kubernetes docs, "Dynamic Resource Allocation")
            models = [x for x in _literals(s) if _names_a_gpu(x)]
            if models:
                self.add(where, "selector", f"DRA device selector naming {models[0]}")
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
        if last == "key":
            return  # a label or requirement key: the mapping around it is judged (`mapping`)
        if last == "__provider":  # a dynamic provider's code, pickled: the strings it holds are what it launches
            self.provider_code(s, where)
            return
        if len(s) > MAX_DOCUMENT:  # more than the pack reads: judged as if it held an accelerator (fail closed)
            self.add(where, "accelerator", f"a value of {len(s):,} characters, more than the pack reads")
            return
        docs = documents(s)
        computes = deploytime.may_compute(s)  # most documents hold no deploy-time expression: not walked for one
        for i, doc in enumerate(docs):
            doc, opened = deploytime.resolved(doc, self.parameters) if computes else (doc, [])
            here = f"{where}<{LAUNCHER if launcher(doc) else ''}doc {i}>"
            for path, expr in opened:  # a type the engine computes when it deploys, from what the pack cannot read
                self.add(
                    f"{here}.{path}", "type", f"{expr} (a type computed when deployed, from values outside the stack)"
                )
            stack.append((doc, here, field))
        if not docs and len(s) <= MAX_DOCUMENT:
            for t in in_text(s):
                self.add(where, "mention", t)
            for t in shell.unreadable_launches(s, self.env):  # `--instance-type "$(printf 'p%d...' 5 48)"`
                self.add(where, "mention", t)
            for m in _BUYS_ACCELERATORS.finditer(s):  # a purchase of capacity sold as accelerated only
                self.add(where, "mention", f"{m.group(0)} (EC2 Capacity Blocks for ML sell accelerated instances only)")
            for ref in _templates_launched(s):  # `aws ec2 run-instances --launch-template LaunchTemplateName=x`
                self.add(where + COMMANDED, "template", ref)
            if self.local_files and (" " in s.strip() or (last in _RUN_KEYS and _PATH_TOKEN.fullmatch(s.strip()))):
                # a command runs or deploys a local file, or a field names a script the tool runs (a Helm
                # release's `postrender`): read it too
                for path in [f for f in _local_files(s, self.bases) if f not in self.read]:
                    self.read.add(path)
                    stack.append((read(path), f"{where}<{path}>", field))
            for token in _B64_TOKEN.findall(s) if " " in s.strip() else ():  # `$(echo cDUu... | base64 -d)`
                inner = _base64(token, shortest=12)
                if inner is None:
                    continue
                t = accelerated_type(inner.strip())
                if t:
                    self.add(where, "mention", t)
                else:
                    stack.append((inner, f"{where}<base64>", field))
            for r in requests_in_text(s):
                self.add(where, "resource", r)
            decoded = _base64(s)
            if decoded is not None:  # user data a provider decodes (userDataBase64, a cloud-init part)
                stack.append((decoded, f"{where}<base64>", field))


_REQUIREMENT_KEYS = frozenset({"key", "operator", "values", "minvalues"})  # a node-selector requirement's fields
_TOLERATION_KEYS = frozenset({"key", "operator", "value", "effect", "tolerationseconds"})
# EC2 instance categories of general-purpose, compute and memory capacity (Karpenter's instance-category label):
# a NotIn that removes all three leaves an autoscaler choosing among the rest, accelerated ones included.
_CPU_CATEGORIES = frozenset({"c", "m", "r"})


# Fields that name a launch or instance template (EC2, Auto Scaling, CloudFormation and aws-native spellings;
# GCP instance templates): the template holds the types, so the name is evidence to resolve (policies/model.py).
_TEMPLATE_KEYS = frozenset(
    {
        "launchtemplate",
        "launchtemplateid",
        "launchtemplatename",
        "launchtemplatespecification",
        "launchconfiguration",
        "launchconfigurationname",
        "instancetemplate",
        "sourceinstancetemplate",
        "sourcemachineimage",  # a GCP machine image holds its machine type and accelerators
        "templateurl",  # a CloudFormation template fetched from S3: what it launches is outside the stack
        "infrastructureref",  # Cluster API: a MachineDeployment's machine template (an AWSMachineTemplate), by name
        "endpointconfigname",  # a SageMaker endpoint launches what its endpoint configuration holds, by name
    }
)
_TEMPLATE_REF_KEYS = ("launchtemplateid", "launchtemplatename", "id", "name")


def _template_refs(value) -> list[str]:
    """The literal template names or ids a template field holds (a string, or a specification's id/name)."""
    if isinstance(value, str):
        return [value.strip()] if value.strip() and not v.is_unknown(value) else []
    if isinstance(value, Mapping):
        low = {str(k).strip().lower(): x for k, x in value.items()}
        return [
            x.strip()
            for k in _TEMPLATE_REF_KEYS
            if isinstance(x := low.get(k), str) and x.strip() and not v.is_unknown(x)
        ][:1]
    return []


# Keys a cloud sizes capacity under (`type`, `size`, `flavor`, `plan`, `preset`, `sku`, `shape`, ...): a value
# there that names a GPU model or says "gpu" (OVH `h100-380`, Nebius `gpu-h100-sxm`, `gpu3-huge`) is a GPU size of
# whatever cloud, listed or not.
_SIZE_KEYS = (
    "type",
    "size",
    "flavor",
    "plan",
    "preset",
    "sku",
    "shape",
    "tier",
    "profile",
    "platform",
    "machine",
    "runs-on",  # a CI job's runner (GitHub's larger runners, `gpu-t4-4-core`, are GPU machines billed per minute)
    "bundle",  # Lightsail's bundles (`gpu_nvidia_xl_1_0`, Lightsail for Research)
)
# Keys that size capacity too (`nodeClass`, `hardware`, `computeTarget`, `vmSeries`), unless they name or point at
# the thing rather than size it (`instanceName: llm-h100-server`, `serverId`).
_THING_KEYS = ("class", "hardware", "instance", "compute", "node", "vm", "server", "device")
_NAMING = ("name", "names", "id", "ids", "arn", "description", "title", "url", "uri", "path", "label", "labels")
# Fields whose value names a thing (a table, a bucket, a queue) however they are named (`GPU_REPORT_TABLE`).
# (not `name`: `acceleratorNames: [h100]` selects GPUs by name)
_NAMING_FIELDS = ("table", "bucket", "queue", "topic", "arn", "url", "uri", "path", "prefix", "_id", "report", "log")


def _sizes(key: str) -> bool:
    """Whether a (lower-case) key sizes capacity: a value there that names a GPU is a GPU size. A key that picks
    an image (`amiType: AL2_x86_64_GPU`, the AMI EKS puts on GPU nodes; `imageType`) sizes nothing."""
    if key.startswith("ami") or "image" in key:
        return False
    return any(w in key for w in _SIZE_KEYS) or (any(w in key for w in _THING_KEYS) and not key.endswith(_NAMING))


# GPU model stems inside a longer token: a count before (`8x`, `8`) or after (`x8`), or a fabric suffix (`ib`,
# `sxm`), never letters on both sides (`bl4ck`).
# The registry's models (gpusizer/data/gpus.yaml) and accelerators it does not price yet (AMD Instinct, Blackwell
# superchips, China-market Hopper/Ampere parts), as four-character-or-longer stems.
_UNPRICED_MODELS = ("h800", "a800", "b300", "gb200", "gb300", "mi250x", "mi300x", "mi325x", "mi355x")


@functools.cache
def _glued_gpu() -> re.Pattern[str]:
    stems = {g.split("-")[0].lower() for g in hardware.load_gpus()} | set(_UNPRICED_MODELS)
    alternation = "|".join(sorted((x for x in stems if len(x) >= 4), key=len, reverse=True))
    return re.compile(rf"(?:^|\d|x)({alternation})(?=$|x|\d|ib|sxm|pcie|nvl)")


_GPU_TOKEN = re.compile(r"^(?:gpus?\d*|[a-z]*gpu[a-z]?\d*)$")  # `gpu3`, `vgpu`, Exoscale's `gpua5000`


_ARGV = frozenset({"command", "args", "cmd", "entrypoint", "arguments", "argv"})
_NEGATING = frozenset({"non", "no", "not", "without", "cpu", "cpuonly"})


_AZURE_GPU_FAMILY = re.compile(r"^(?:standard_)?n[cdvgm]", re.I)  # Azure N-series: NC, ND, NV, NG, NM (GPU VMs)


def _option(m: Mapping) -> tuple[str | None, object]:
    """A name/value option (`{name: InstanceTypes, value: ...}`, `{optionName: ..., value: ...}`): the
    lower-case name and the value, or (None, None)."""
    low = {str(k).strip().lower(): x for k, x in m.items()}
    name = next((low[k] for k in ("name", "optionname", "key", "parameterkey") if isinstance(low.get(k), str)), None)
    value = next((low[k] for k in ("value", "parametervalue") if k in low), None)
    return (name.strip().lower(), value) if name and value is not None else (None, None)


def _names_a_gpu(value: str) -> bool:
    """Whether a size value names a GPU: a token `gpu` (`gpu3`, `vgpu`), or a GPU model the catalog knows."""
    if len(value) > 80:
        return False
    tokens = [t for t in re.split(r"[-_.\s/:]+", value.lower()) if t]
    if any(t in _NEGATING or t.startswith(("nogpu", "nongpu")) for t in tokens):
        return False  # `non-gpu`, `no-gpu`, `without-gpus`, `cpu-only`: says there is none
    if any(_GPU_TOKEN.match(t) or (len(t) >= 3 and hardware.canonical_gpu(t)) for t in tokens):
        return True
    # a cloud's accelerator name (`nvidia-l4`, `nvidia-tesla-t4`: two-letter models only beside their maker), or a
    # model glued to a count or a suffix (`8xh100ib`, `8H100.80S`, `h100x8`)
    return bool(_ACCELERATOR_NAME.match(normal(value))) or any(_glued_gpu().search(t) for t in tokens)


def _literals(expression: str) -> list[str]:
    """The string literals an expression holds, single- or double-quoted (an ARM or CEL expression)."""
    return [x for pair in re.findall(r"'([^']{2,80})'|\"([^\"]{2,80})\"", expression) for x in pair if x]


def _names_a_family(value: str) -> bool:
    """Whether a name holds an accelerated family's name as a word (`a3-class`, `p5_nodes`): a GKE compute
    class so named picks that family's GPU machines (GKE docs, "About custom compute classes": a class's
    priorities name machine families)."""
    fam = families()
    return any(t in fam["aws"] or t in fam["gcp"] for t in re.split(r"[-_.\s/:]+", value.lower()) if t)


def _flat(value) -> bool:
    """Scalars, a mapping of scalars, or a list of either: how tags, labels, tolerations and exclusion lists
    look. Anything nested deeper (a values file under `description:`) is walked like any other value."""

    def scalar(x) -> bool:
        return not isinstance(x, (Mapping, list))

    if isinstance(value, Mapping):
        return all(scalar(x) for x in value.values())
    if isinstance(value, list):
        return all(scalar(x) or (isinstance(x, Mapping) and all(scalar(y) for y in x.values())) for x in value)
    return True


def _opens_accelerators(key, op: str, values) -> str | None:
    """What a NotIn requirement selects when it keeps out only the absence of accelerators
    (`instance-gpu-count NotIn ["0"]`, `nvidia.com/gpu.present NotIn ["false"]`) or every CPU category
    (`instance-category NotIn [c, m, r, t]`): GPU nodes by elimination. None otherwise."""
    if op != "notin" or not isinstance(key, str):
        return None
    vals = [str(x).strip().lower() for x in (values if isinstance(values, list) else [values]) if x is not None]
    if gpu_label(key) and vals and all(x in _NOTHING for x in vals):
        return f"{key.strip()} notin {vals} (selects accelerated nodes by elimination)"
    if key.strip().lower().endswith("instance-category") and _CPU_CATEGORIES <= set(vals):
        left = sorted(_ACCELERATED_CATEGORIES - set(vals))
        if left:
            return f"{key.strip()} notin {vals} (leaves accelerated categories {left})"
    return None


def wildcard_families(pattern: str) -> list[str]:
    """Accelerated families a type pattern admits: EC2's `*` wildcard (`p5*`, `p*.48xlarge`, case-blind) or a
    regular expression's `.*` (an ECS `=~` expression). A bare `*` admits every type and names none."""
    p = pattern.strip().lower().replace("\\.", ".").replace(".*", "*").replace(".+", "*")
    if not p.strip("*") or len(p) > 100:
        return []
    fam = families()
    out = [f for f in sorted(fam["aws"]) if any(shapes.ec2_match(f"{f}.{size}", p) for size in shapes.SIZES)]
    out += [
        f
        for f in sorted(fam["gcp"])
        if shapes.ec2_match(f"{f}-highgpu-8g", p) or shapes.ec2_match(f"{f}-standard-4", p)
    ]
    return out


_TEMPLATE_IN_TEXT = re.compile(
    r"(?:launch_?template_?(?:name|id)[\"']?\s*[:=]\s*[\"']?|--source-instance-template[= ]|--source-machine-image[= ]|"
    r"--launch-template-(?:name|id)[= ]|--template[= ](?!file)|launch_template\s*\{[^}]*?\b(?:name|id)\s*=\s*\")"
    r"([\w./:-]+)",
    re.I,
)  # a CLI shorthand (`LaunchTemplateName=x`), a flag, or a JSON or Python mapping (`"LaunchTemplateName": "x"`)


def _templates_launched(text: str) -> list[str]:
    """Templates that commands in `text` launch from (`run-instances --launch-template LaunchTemplateName=x`);
    a command that creates, describes or changes a template launches nothing. Where the text launches and
    changes no template, every template it names is launched from: a launch's input may lie on other lines
    (`create-fleet --cli-input-json file://fleet.json` after a heredoc writing it, an SDK call over lines)."""
    if not _TEMPLATE_IN_TEXT.search(text):
        return []
    cmds = shell.commands(text)
    if any(shell.launches_from_template(c) for c in cmds) and not any(shell.changes_template(c) for c in cmds):
        return _TEMPLATE_IN_TEXT.findall(text)
    return [ref for c in cmds if shell.launches_from_template(c) for ref in _TEMPLATE_IN_TEXT.findall(c)]


_B64_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])")
_B64 = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}$")


def _base64(s: str, shortest: int = 24) -> str | None:
    """The text a base64 string holds (user data), or None when it is not base64 of UTF-8 text."""
    t = "".join(s.split())
    if len(t) < shortest or len(t) % 4 or not _B64.match(t):
        return None
    try:
        raw = base64.b64decode(t, validate=True)
        if raw[:2] == b"\x1f\x8b":  # gzip: cloud-init and EC2 accept compressed user data
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_DOCUMENT + 1)[:MAX_DOCUMENT]
        out = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError, OSError, EOFError):
        return None
    return out if out.isprintable() or "\n" in out else None


# A type-shaped token with a placeholder another engine fills (`p${var.gen}.48xlarge`, `p{{ gen }}.48xlarge`,
# `Standard_ND${gen}isr_H100_v5`, `p%s.48xlarge`).
_PLACEHOLDER_TOKEN = re.compile(r"(?<![\w.-])[\w.-]*(?:" + shell.PLACEHOLDER.pattern + r")[\w.${}%-]*", re.I)


def templated_type(token: str, loose: bool) -> str | None:
    """What a type with a placeholder admits, or None: with its placeholders as wildcards, the accelerated
    families it matches (`p*.48xlarge` admits p4d, p5, ...) or the GPU it names (`Standard_ND*isr_H100_v5`).
    Outside a field that sizes (`loose`), only where its literal start is an accelerated family's (`p%s...`)."""
    wild = shell.PLACEHOLDER.sub("*", token.strip().strip("'\"")).lower()
    if not wild.strip("*.-_") or "*" not in wild:
        return None
    if _names_a_gpu(wild.replace("*", "-")):
        return f"{token} (names a GPU, with a placeholder filled when deployed)"
    prefix = wild.split("*", 1)[0]
    if not loose and not (prefix and prefix.rstrip(".-") in _ACCELERATED_CATEGORIES):
        return None
    fams = wildcard_families(wild)
    return f"{token} (a type filled in when deployed; it admits {', '.join(fams[:4])})" if fams else None


def _categories(values) -> bool:
    vals = values if isinstance(values, list) else [values]
    return any(isinstance(x, str) and x.strip().lower() in _ACCELERATED_CATEGORIES for x in vals)


# Accelerators requested inside command text: `gcloud ... --accelerator=type=nvidia-tesla-v100,count=8`,
# `kubectl run ... --limits=nvidia.com/gpu=8`, `helm ... --set resources.limits.nvidia\.com/gpu=8`,
# `docker run --gpus all`, and DRA device expressions naming a GPU driver (`device.driver == "gpu.nvidia.com"`).
_REQUEST_IN_TEXT = re.compile(
    r"--accelerator[= ](?:[a-z]+=[^,\s]*,)*(?:type=)?[a-z0-9-]*(?:nvidia|tpu|gaudi)|--gpus[= ]\S+|"
    r"--accelerator-type[= ](?:v\d+[a-z]*-\d+|tpu\S*|[a-z0-9-]*nvidia\S*)|"
    r"--set(?:-string)?[= ][\"']?[\w.\\\[\]-]*(?:gpu|accelerator)[\w.\\-]*=(?!0\b|false\b|none\b)[\w.:-]+|"  # helm --set gpu.count=8
    r"\bgcloud\s+(?:beta\s+)?run\s+[^\n;|&]*?--gpu[= ](?!0\b)\d+|--gpu-type[= ](?:nvidia|amd|tpu)[\w.-]*|"  # Cloud Run's GPUs
    r"\b(?:gpus?|accelerators?)\s*[=:]\s*[\"']?(?:nvidia-)?(?:h100|h200|b200|b300|gb200|a100|a10g?|l40s?|l4|t4|v100|"
    r"mi300x?|mi250x?|rtx\w*)\S*|"
    # a GPU cloud's API payload in a command (`gpuCount: 8`, `"gpu_type_id": "NVIDIA H100 80GB HBM3"`)
    r"\bgpu_?(?:count|type_?(?:id)?|name|model)[\"'\\]*\s*[=:]\s*[\"'\\]*(?!0\b|none\b|false\b|null\b)[\w.-]+|"
    r"(?:nvidia|amd)\\?\.com(?:/|~1)gpu(?:\\?\.shared)?(?![\w.-])|google\\?\.com/tpu|aws\.amazon\\?\.com/neuron|"
    r"gpu\.nvidia\.com|gpu\.amd\.com|tpu\.google\.com",
    re.I,
)


def requests_in_text(text: str) -> list[str]:
    """Accelerator requests written inside free text (commands, expressions), each once; a command that only
    reads or prints (`kubectl get nodes -l nvidia.com/gpu.product=...`, `describe`, `grep`, `echo`) asks for
    none."""
    plain = shell.plain(text)
    if not _REQUEST_IN_TEXT.search(plain):
        return []
    asking = "\n".join(c for c in _command_lines(plain) if not _read_only(c))
    return list(dict.fromkeys(m.group(0) for m in _REQUEST_IN_TEXT.finditer(asking)))


# What comes right before a type in text that asks for it: a flag or a field naming a type, size or shape
# (`--instance-type p5.48xlarge`, `--machine-type=a3-highgpu-8g`, `--size Standard_ND96...`, `InstanceType=`,
# `ecs.instance-type =~ p5.*`, `node_type: g6.xlarge`); prose (`echo 'building for g6.xlarge'`) asks for nothing.
_ASKS = re.compile(
    r"(?:(?:instance|machine|node|vm|type|size|shape|flavor|sku|class|family)[a-z_]*"
    r"(?:[\"'`\s:=~,\[\]({/\\]|value)*(?:in\s*\[[^\]]*)?"  # (`--instance-type "{\"Value\": ...}"`: AWS's JSON form)
    r"|(?:[a-z_][a-z0-9_]*\s?=|:-)\s*"  # a shell variable set to it (`T=p5.48xlarge`), its default (`${T:-...}`)
    r"|--arg\s+\w+\s*)$"  # a jq variable (`jq -n --arg t p5.48xlarge '{InstanceType: $t}'`)
)
# A size flag or field and its value (up to four words, as a quoted name may hold: `--gpuType 'NVIDIA H100 80GB'`).
_SIZE_WORDS = r"[a-z_-]*(?:type|size|flavor|plan|sku|shape|machine|gpu)[a-z_]*"
_SIZE_IN_TEXT = re.compile(
    rf"--({_SIZE_WORDS})[=\s]\s*([a-z0-9][\w.:-]*(?:[ \t]+[a-z0-9][\w.:-]*){{0,3}})"  # a flag: a quoted name's words
    rf"|\b({_SIZE_WORDS})\s*[=:]\s*([a-z0-9][\w.:-]*)"  # a field or keyword argument: one token
)
# Commands that only read or print (`aws ec2 describe-instance-types`, `aws pricing get-products`, `echo`,
# a comment): a type in them asks for nothing.
# Calls and commands that read or stop: the CLI's `describe-*`, `get-*`, `list-*`; kubectl and helm verbs that
# read, or change only nodes that exist (cordon, drain, label, taint); terraform's that plan; SDK calls that read
# or stop (boto3 `describe_instance_types(`, `get_paginator(`, JS `DescribeInstanceTypesCommand(`).
_READ_CALLS = (
    r"\b(?:describe|get|list)-[a-z-]+|\bpricing\b"
    r"|\bkubectl\b[^|;&\n]*?\s(?:get|describe|top|logs|explain|diff|cordon|uncordon|drain|label|annotate|taint)\b"
    r"|\bhelm\s+(?:template|lint|show|get|list|ls|status|diff|history)\b"
    r"|\b(?:terraform|tofu)\s+(?:plan|validate|fmt|show|output|graph)\b"
    r"|\b(?:describe[a-z_]*|list_[a-z_]+|list[a-z]+command|get_[a-z_]+)\s*\(|\b(?:stop|terminate|reboot)[-_]?instances"
)
_READING = re.compile(_READ_CALLS, re.I)
# A line that only reads or prints: a read call, a comment, `echo`/`grep`/`cat`/`jq` (not writing a file: `echo ...
# > file` writes what runs next, and counts), a prose field of HCL (a validation's error message listing types), or
# what a program prints.
_READS = re.compile(
    r"^\s*(?:#|//|(?:echo|printf|logger|grep|cat|jq)\b(?![^>]*>))|"
    + _READ_CALLS
    + r"|^\s*(?:description|error_message|summary|message|detail)\s*="
    r"|\bprint\(|\bconsole\.log\(|\blog(?:ger|ging)?\.(?:info|debug|warning|error)\(",
    re.I,
)


# A verb that creates or changes something, in any spelling (`run_instances`, `createFleet`, `--apply`,
# `UpdateAutoScalingGroup`): text holding none of them, beside a read (`describe_instances`), only reads.
_WRITES = re.compile(
    r"(?:^|[^a-zA-Z])(?:create|run|start|launch|request|allocate|update|put|modify|scale|deploy|apply|provision|"
    r"submit|invoke|patch|replace|set)(?:[-_A-Z(\s]|$)|(?:Create|Run|Start|Launch|Request|Allocate|Update|Put|"
    r"Modify|Scale|Deploy|Apply|Provision|Submit|Invoke|Patch|Replace|Set)[A-Z]",
    re.M,
)


def _only_reads(text: str) -> bool:
    """Whether a whole text (a function's code, a script) reads and never creates or changes anything: a
    report or a reaper that describes instances by the types it looks for (`Filters=[{"Name": "instance-type",
    "Values": GPU_TYPES}]`) asks for none of them."""
    return bool(_READING.search(text)) and not _WRITES.search(text) and not shell.launches_from_template(text)


def _command_lines(text: str) -> list[str]:
    """`text` a command at a time, for the readers that judge each command on its own: continued lines and a
    call's arguments joined, split at a newline, `;`, `&&`, `||` and also at a pipe (each side of a pipe is a
    command of its own to them: `kubectl get ... | grep nvidia.com/gpu` reads on both sides)."""
    return re.split(r"[\n;|&]", re.sub(r"\\\r?\n", " ", shell.calls_joined(text)))


def _read_only(command: str) -> bool:
    """Whether a command (or an SDK call) only reads, prints or stops (`_READS`), and launches nothing: a line
    that also holds a launch (`run_instances(..., ImageId=describe_images(...))`) is read."""
    return bool(_READS.search(command)) and not shell.launches_from_template(command)


# Other types of a list before the one judged, as they end the text before it: dropped, so the flag or field
# that names the list is what comes right before.
_LISTED = re.compile(r"(?:[\s,\[\](){}]*[a-z][a-z0-9-]*\.[a-z0-9-]+[\s,\]]*)+$")


_ENUM = re.compile(r"InstanceType(?:\.|::|_)?([A-Z][A-Za-z0-9_]*\d[A-Za-z0-9_]*)")  # Go, Java, .NET SDK enums


@functools.cache
def _squeezed() -> dict[str, str]:
    """Each catalog AWS type by its name without separators (`p548xlarge` -> p5.48xlarge)."""
    return {re.sub(r"[^a-z0-9]", "", t): t for t in audit.types_of("aws")}


def _enum_types(text: str) -> list[str]:
    """Accelerated types an SDK names by enum constant: Java `InstanceType.P5_48_XLARGE`, Go
    `types.InstanceTypeP548xlarge`, the CDK's `InstanceType.of(InstanceClass.P5, InstanceSize.XLARGE48)`."""
    names = [m.group(1) for m in _ENUM.finditer(text)]
    for m in shell.CDK_OF.finditer(text):  # (the size's digits follow XLARGE: XLARGE48 is 48xlarge)
        size = re.sub(r"^XLARGE(\d+)$", r"\1XLARGE", m.group(2))
        names.append(m.group(1) + size)
    found = (_squeezed().get(re.sub(r"[^a-z0-9]", "", n.lower())) for n in names)
    return [t for t in found if t and accelerated_type(t)]


def in_text(text: str) -> list[str]:
    """Accelerated instance or machine types that free text asks for (after a flag or field naming a type,
    size or shape: `_ASKS`), normalised, each once."""
    # As a shell reads it: continued lines joined, quotes dropped (`p5."48xlarge"` is p5.48xlarge), and each
    # command on its own, so a read-only one (describe, list, echo, a comment) asks for nothing.
    # String literals a program concatenates ('p4d' + '.24xlarge') are one; SageMaker's `ml.` prefix names the
    # EC2 type after it.
    text = shell.plain(text)
    if _only_reads(text):
        return []
    joined = (
        re.sub(r"\\\r?\n", " ", shell.calls_joined(text).lower()).replace('"', "").replace("'", "").replace(":-", ":- ")
    )
    joined = re.sub(r"(?<![a-z0-9-])ml\.(?=[a-z][a-z0-9-]*\.)", "", joined)
    low = "\n".join(c for c in _command_lines(joined) if not _read_only(c))
    fam = families()
    out = []

    def asks(m: re.Match) -> bool:
        # what comes right before it, however much blank space lies between; a type further along a list
        # (`--instance-types t3.large p5.48xlarge`, `[t3.large, p5.48xlarge]`) is asked for by the same flag
        # (400 characters back: a long list of types or a wrapped command's continuation lines; 40 of what is
        # left after the list: a flag or field name and its separator)
        before = low[max(0, m.start() - 400) : m.start()].rstrip()
        before = _LISTED.sub("", before)
        return bool(_ASKS.search(before[-40:]))

    for m in _AWS_IN_TEXT.finditer(low):
        t = m.group(0)
        if (m.group(1) in fam["aws"] or t in audit.types_of("aws")) and asks(m):
            out.append(t)
    for m in _GCP_IN_TEXT.finditer(low):
        if (m.group(1) is None or m.group(1) in fam["gcp"]) and asks(m):
            out.append(m.group(0))
    for m in _other_in_text().finditer(low):
        if accelerated_type(m.group(0)) and asks(m):
            out.append(m.group(0))
    # (enum constants are read in the text's own case, from the commands that are not read-only or comments)
    out += _enum_types("\n".join(c for c in _command_lines(text) if not _read_only(c)))
    if "*" in low:
        out += [
            f"{m.group(0)} admits {', '.join(w[:4])}"
            for m in _WILD_IN_TEXT.finditer(low)
            if asks(m) and (w := wildcard_families(m.group(0)))
        ]
    # any cloud's size flag or field whose value names a GPU (`--type h100-80gb-sxm-ib.8x`, `--machineType
    # A100-80Gx8`, `--gpuType 'NVIDIA H100 80GB HBM3'`, `instance_type="nvidia-h100"`): a GPU size, priced or not
    for m in _SIZE_IN_TEXT.finditer(low):
        value = (m.group(2) or m.group(4)).strip()
        if (m.group(1) or m.group(3)).startswith("gpusizer"):
            continue  # gpusizer's own metadata (`gpusizer:required-gpu-memory-gib`) names a requirement, not a size
        if _names_a_gpu(value):
            out.append(f"{value} (a size naming a GPU)")
    if "{" in low or "%" in low:  # `instance_type = "p${var.gen}.48xlarge"`: a type another engine fills in
        out += [x for m in _PLACEHOLDER_TOKEN.finditer(low) if asks(m) and (x := templated_type(m.group(0), True))]
    return list(dict.fromkeys(out))


_SWITCH = re.compile(
    r"^(?:enabled?|(?:enable|use|request|with|has)?[_-]?(?:gpus?|tpus?|accelerators?|neuron)[_-]?(?:enabled?)?)$", re.I
)


def _last(path: str) -> str:
    """The last key of a path (`values.gpu.enabled` -> `enabled`)."""
    return path.rsplit(".", 1)[-1].rstrip("]0123456789[")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def extract(props, path: str = "", local_files: bool = False, base: pathlib.Path | None = None) -> list[Evidence]:
    """Every piece of GPU evidence in `props` (plain data: dicts, lists, scalars; unknowns as sentinels).
    `local_files`: also read the local files a command in it names (`--template-file big.yaml`,
    `python3 launch.py`) and the code an asset or archive holds, as the command or the cloud would; relative
    paths from `base` (the program's directory) and a Command's `dir`."""
    w = _Walk(local_files, _environment(props))
    given = props.get("parameters") if isinstance(props, Mapping) else None
    w.parameters = given if isinstance(given, Mapping) else {}
    w.bases = _bases(props, base or pathlib.Path.cwd())
    w.run(props, path)
    return w.out


def _environment(props) -> dict[str, str]:
    """The literal variables a resource gives the commands it holds: `KEY: value` string pairs and
    `{name: KEY, value: ...}` entries (a Command's `environment`, a Lambda's, a container's `env`), anywhere."""
    out: dict[str, str] = {}
    stack = [props]
    while stack and len(out) < 1000:
        x = stack.pop()
        if isinstance(x, Mapping):
            if isinstance(x.get("name"), str) and isinstance(x.get("value"), str):
                out[x["name"]] = x["value"]
            out.update({k: val for k, val in x.items() if isinstance(k, str) and isinstance(val, str)})
            stack += [val for val in x.values() if isinstance(val, (Mapping, list))]
        elif isinstance(x, list):
            stack += [val for val in x if isinstance(val, (Mapping, list))]
    return out


_PATH_TOKEN = re.compile(
    rf"(?<![\w/.=-])((?:/|\./|\.\./)?[\w.-]+(?:/[\w.-]+)*\.(?:{'|'.join(CODE_EXTENSIONS + DOCUMENT_EXTENSIONS)}))\b"
    r"|(?:-chdir=|--chart[= ]|helm\s+upgrade\s+--install\s+\S+\s+|helm\s+install\s+\S+\s+|make\s+-C\s*|\s-k\s+|"
    r"--kustomize[= ]|--cwd[= ]|--dir[= ]|-C\s+|\bchart:\s*|-var-file[= ]|\bgo\s+run\s+|\bpython3?\s+(?:-u\s+)?|"
    r"--manifest-path[= ](?=\S*Cargo\.toml)|--project-dir[= ])"
    r"((?:\./|\.\./|/)?\w[\w./-]*)"
)  # a file by path, or a folder a tool runs from (`terraform -chdir=./tf`, `helm upgrade --install x ./chart`); a
# folder by name only (`.` alone is wherever the tool runs, `pip install -e .` on a CI runner)


def read(path: pathlib.Path) -> str:
    """A local file's text as the pack reads it (at most MAX_DOCUMENT characters), read once per version: the
    evidence walk and the resize reader (scaling.commanded) both read the files a command runs."""
    st = path.stat()
    return _read(path.resolve(), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _read(path: pathlib.Path, mtime_ns: int, size: int) -> str:
    return path.read_text(errors="replace")[:MAX_DOCUMENT]


def located(name: str | pathlib.Path, base: pathlib.Path | None) -> pathlib.Path:
    """A path as a tool run from `base` (the program's directory) reads it: absolute as given, else from
    `base`; with no base, as given (from the working directory). One rule for every file the pack reads."""
    p = pathlib.Path(name)
    return p if p.is_absolute() or base is None else base / p


def _bases(props, base: pathlib.Path) -> list[pathlib.Path]:
    """Where a resource's relative paths are read from: a Command's `dir` (under the program's directory), then
    the program's directory."""
    where = props.get("dir") if isinstance(props, Mapping) and isinstance(props.get("dir"), str) else None
    return [base / where, base] if where and not v.is_unknown(where) else [base]


def code_of(props, base: pathlib.Path) -> list[str]:
    """The text of the code a resource runs from files: what its assets and archives name by path (a
    function's code folder or zip), as the cloud deploys them, and the local files its commands run or deploy
    (`_local_files`, from its `dir` and `base`); inline code is in the properties themselves."""
    out: list[str] = []
    bases = _bases(props, base)
    stack, seen, done = [props], 0, set()
    while stack and seen < MAX_NODES:
        x, seen = stack.pop(), seen + 1
        if isinstance(x, Mapping):
            if x.get(v.SIG_KEY) in (v.ASSET_SIG, v.ARCHIVE_SIG) and isinstance(x.get("path"), str):
                out += [text for _, text in _archived(x["path"], base)]
            stack += [y for y in x.values() if isinstance(y, (Mapping, list, str))]
        elif isinstance(x, list):
            stack += [y for y in x if isinstance(y, (Mapping, list, str))]
        elif isinstance(x, str) and " " in x.strip() and not v.is_unknown(x):
            for f in _local_files(x, bases):
                if f not in done:
                    done.add(f)
                    out.append(read(f))
    return out


def _archived(path: str, base: pathlib.Path, most: int = 50) -> list[tuple[str, str]]:
    """(name, text) of the code files an asset or archive path holds: a file, a folder, or a zip (at most `most`
    code files, each at most MAX_DOCUMENT: a function's code, not a repository)."""
    out: list[tuple[str, str]] = []
    try:
        p = located(path, base)
        if p.is_dir():
            files = [f for f in sorted(p.rglob("*"))[: most * 10] if f.is_file() and _CODE.search(f.name)]
            out = [(str(f.relative_to(p)), read(f)) for f in files[:most]]
        elif p.is_file() and zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                names = [n for n in z.namelist() if _CODE.search(n)][:most]
                out = [(n, z.read(n)[:MAX_DOCUMENT].decode(errors="replace")) for n in names]
        elif p.is_file() and p.stat().st_size <= MAX_DOCUMENT:
            out = [(p.name, read(p))]
    except (OSError, ValueError, zipfile.BadZipFile):
        return [(path, "unreadable")]
    return out


def _local_files(text: str, bases: list[pathlib.Path]) -> list[pathlib.Path]:
    """Existing local files (at most 25, each at most MAX_DOCUMENT bytes) that a command names by path, the
    code files of a folder it runs a tool in, read from the first of `bases` where they exist, and the code of
    its own `dir` (the first of `bases`) when it runs a tool that deploys a folder (`_RUNS_FOLDER`)."""
    out: list[pathlib.Path] = []
    text = text.replace("file://", " ")  # `--cli-input-json file://req.json` names a local file
    # `python3 -m ops.launch` runs ops/launch.py, or ops/launch/__main__.py for a package
    text = re.sub(
        r"(?<=\s)-m\s+([A-Za-z_][\w.]*)",
        lambda m: f" {m.group(1).replace('.', '/')}.py {m.group(1).replace('.', '/')}/__main__.py ",
        text,
    )
    for tool, names in _TOOL_FILES:  # a tool that reads its own file from where it runs (`make`: the Makefile)
        if tool.search(text):
            for f in (bases[0] / n for n in names):
                if f.is_file() and f.stat().st_size <= MAX_DOCUMENT and f not in out:
                    out.append(f)
                    out += [x for x in _local_files(" " + read(f), [f.parent]) if x not in out]
    if len(bases) > 1 and _RUNS_FOLDER.search(text):  # a tool run in the command's own `dir` deploys its code
        try:
            out += [
                f
                for f in sorted(bases[0].rglob("*"))[: _FOLDER_FILES * 20]
                if f.is_file() and _CODE.search(f.name) and f.stat().st_size <= MAX_DOCUMENT
            ][:_FOLDER_FILES]
        except OSError:
            pass
    for m in _PATH_TOKEN.finditer(text):
        token = m.group(1) or m.group(2)
        for base in bases:
            try:
                p = located(token, base)
                if p.name in _PROJECT_FILES and p.is_file():
                    p = p.parent  # a build manifest (`--manifest-path launcher/Cargo.toml`): the project it builds
                found = (
                    [p] if p.is_file() else [f for f in sorted(p.rglob("*"))[:200] if f.is_file()] if p.is_dir() else []
                )
                found = [f for f in found if _CODE.search(f.name) and f.stat().st_size <= MAX_DOCUMENT]
            except (OSError, ValueError):
                continue
            out += [f for f in found if f not in out]
            if found:
                break
    return out[: _FOLDER_FILES + 5]
