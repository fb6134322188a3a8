"""What one instance/machine type (or a set of them) holds, from the pack's catalog only.

A type is normalised (case, whitespace, a GCP URL's last segment) and looked up
in the engine's catalog. A type the catalog does not know is "not a GPU" only
when its family carries no accelerator (policies/accelerator_families.yaml);
otherwise it is a shape with no capacity: "unknown GPU type, cannot verify".
Prices come from the catalog, never from the resource.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re

import yaml

from gpusizer.base import units
from gpusizer.contract import audit
from gpusizer.facts import hardware
from gpusizer.policies import view as v

FAMILIES_FILE = pathlib.Path(__file__).with_name("accelerator_families.yaml")


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    """One type a resource may launch.

    Attributes:
        label: the type as the message shows it ("p5.48xlarge", "n1-standard-8 + 2 x T4").
        capacity: its GPUs, or None for an accelerator type the pack cannot verify.
        hourly_usd: the catalog's lowest on-demand $/hour of one node, or None.
        vcpus: host vCPUs (for capacities given in vCPUs), or None.
        by_attributes: one of the types an attribute-based selection admits; EC2 launches the cheapest
            that has capacity (and none priced far above it), so its host size is not the author's choice.
    """

    label: str
    capacity: audit.GpuCapacity | None
    hourly_usd: float | None
    vcpus: float | None = None
    by_attributes: bool = False  # admitted by attribute-based selection: EC2 picks among them by price


@functools.cache
def families() -> dict[str, frozenset[str]]:
    """Provider -> families with accelerators (verified and unverified alike: the guard fails closed)."""
    data = yaml.safe_load(FAMILIES_FILE.read_text())
    return {p: frozenset(d["families"]) | frozenset(d.get("unverified") or ()) for p, d in data.items()}


@functools.cache
def other_clouds() -> dict[str, re.Pattern[str]]:
    """Cloud -> the pattern of its accelerated sizes, for the clouds the catalog does not price (Azure, OCI,
    ...): evidence the pack cannot judge, never "not a GPU"."""
    data = yaml.safe_load(FAMILIES_FILE.read_text())
    return {c: re.compile("|".join(d["patterns"])) for c, d in data.items() if d.get("patterns")}


def aws_family(instance_type: str) -> str:
    """'p5.48xlarge' -> 'p5'; a bare family ('p4d', as AWS Batch accepts) is itself."""
    return instance_type.split(".", 1)[0]


def gcp_family(machine_type: str) -> str:
    """'a3-highgpu-8g' -> 'a3'."""
    return machine_type.split("-", 1)[0]


def machine(value: str) -> str:
    """A GCP machine type from a name or URL: '.../zones/us-central1-a/machineTypes/G2-STANDARD-4 ' -> 'g2-standard-4'."""
    return value.strip().lower().rsplit("/", 1)[-1]


def aws(instance_type: str) -> Shape | None:
    """The shape of an AWS type, or None when it carries no accelerator."""
    o = audit.types_of("aws").get(instance_type)
    if o is not None:
        return Shape(
            instance_type, audit.capacity_of_type("aws", instance_type), audit.price_of("aws", instance_type), o.vcpus
        )
    if aws_family(instance_type) in families()["aws"]:
        return Shape(instance_type, None, None)
    return None


def aws_family_shapes(family: str) -> list[Shape] | None:
    """Every catalog type of an AWS family (AWS Batch accepts family names), judged by its cheapest and
    largest; None when the family carries no accelerator."""
    types = [t for t in audit.types_of("aws") if aws_family(t) == family]
    if types:
        return extremes([aws(t) for t in types])
    if family in families()["aws"]:
        return [Shape(f"{family} (family)", None, None)]
    return None


def gcp(machine_type: str, accelerators: list[tuple[str, float]]) -> Shape | None:
    """A GCP machine with its attached accelerators (N1), or None when it carries none.

    Raises:
        ValueError: a non-positive accelerator count.
    """
    o = audit.types_of("gcp").get(machine_type)
    if o is not None and not accelerators:
        return Shape(
            machine_type, audit.capacity_of_type("gcp", machine_type), audit.price_of("gcp", machine_type), o.vcpus
        )
    if accelerators:
        (kind, count), *more = accelerators
        if count <= 0:
            raise ValueError(f"guestAccelerators count {count:g} must be positive")
        cap = audit.capacity_of_accelerator(kind, count, machine_type) if not more else None
        label = f"{machine_type or '(machine type unknown at preview)'} + " + ", ".join(
            f"{c:g} x {k}" for k, c in accelerators
        )
        price = audit.price_of("gcp", f"{machine_type}+{kind}x{count:g}") if cap else None
        return Shape(label, cap, price)
    if gcp_family(machine_type) in families()["gcp"]:
        return Shape(machine_type, None, None)
    return None


def extremes(shapes: list[Shape | None]) -> list[Shape]:
    """The cheapest and the largest (GPU memory, then price) of several admitted shapes, unknown ones kept."""
    known = [s for s in shapes if s is not None and s.capacity is not None]
    unknown = list({s.label: s for s in shapes if s is not None and s.capacity is None}.values())
    if not known:
        return unknown
    cheapest = min(known, key=lambda s: (s.hourly_usd if s.hourly_usd is not None else float("inf"), s.label))
    largest = max(known, key=lambda s: (s.capacity.total_gib, s.hourly_usd or 0.0, s.label))
    return ([cheapest] if cheapest == largest else [cheapest, largest]) + unknown


# EC2 lists accelerator memory as marketed, the catalog holds what the driver shows: EC2 DescribeInstanceTypes
# GpuInfo as recorded in data/catalog-sources/aws-gpu-instances-us-east-1.csv gives T4 16.0 GiB (16384 MiB)
# where the catalog holds 15.0, H100 80.0 vs 79.65, H200 141.0 vs 140.4, L40S 44.7 vs 44.7. A type is admitted
# when the range meets any figure from 0.97x to 1.10x the catalog's (T4's 1.067x is the widest seen), so a
# bound written from EC2's listing admits what EC2 admits. Admitting more is the safe side: the largest is judged.
LISTED_MEMORY = (0.97, 1.10)
SIZES = (
    "large",
    "xlarge",
    "2xlarge",
    "4xlarge",
    "8xlarge",
    "12xlarge",
    "16xlarge",
    "24xlarge",
    "32xlarge",
    "48xlarge",
    "72xlarge",
    "metal",
    "36xlarge",
)


def ec2_match(instance_type: str, pattern: str) -> bool:
    """EC2's allowed/excluded instance type rule: `*` is the only wildcard, anywhere; case-blind."""
    regex = "^" + ".*".join(re.escape(part) for part in pattern.strip().lower().split("*")) + "$"
    return re.match(regex, instance_type.strip().lower()) is not None


def admitted_gpus(name: str) -> set[str]:
    """Every canonical GPU an EC2 accelerator name admits: a100 -> A100-40GB and A100-80GB."""
    n = name.strip().lower()
    out = {g for g in hardware.load_gpus() if g.split("-")[0].lower() == n}
    one = audit.gpu_from_label(n)
    return out | ({one} if one else set()) or {n}


def _range(req: v.View, key: str) -> tuple[float, float]:
    lo = req.number(key, "min")
    hi = req.number(key, "max")
    return (lo if lo is not None else 0.0, hi if hi is not None else float("inf"))


def requirements(req: v.View) -> list[Shape] | None:
    """Attribute-based selection (`instanceRequirements`): the cheapest and largest catalog GPU type it admits.

    Follows EC2's InstanceRequirements semantics: no accelerator limit admits
    accelerated types (AcceleratorCount "Default: No minimum or maximum
    limits"; max 0 excludes them), so only `acceleratorCount.max: 0`, or
    accelerator types without "gpu", rule GPUs out. Admitted catalog types are
    filtered by accelerator count, total accelerator memory (MiB), names,
    vCPUs, memory (MiB) and allowed/excluded type patterns.

    Returns:
        None when it admits no GPU; else the extremes of the admitted catalog
        types and an unknown shape for each allowed accelerated type the catalog
        does not know, or one unknown shape when GPUs are asked for but none is known.
    """
    acc = _range(req, "acceleratorCount")
    kinds = [x.text() for x in req.each("acceleratorTypes")]
    if acc[1] == 0:
        return None
    if kinds and "gpu" not in kinds:
        # Inferentia (`inference`), FPGA and media accelerators are accelerators too, which the catalog does not
        # price (EC2 API, AcceleratorTypes: gpu | fpga | inference | media): unverifiable, never a pass
        return [
            Shape(
                f"{req.path} (admits {', '.join(map(str, kinds))} accelerators; the catalog prices GPUs only)",
                None,
                None,
            )
        ]
    names = set()
    for x in req.each("acceleratorNames"):
        names |= admitted_gpus(x.text() or "")
    makers = [(x.text() or "").strip().lower() for x in req.each("acceleratorManufacturers")]
    if makers and any(m != "nvidia" for m in makers):
        # Habana (Gaudi, dl1), AMD, Xilinx and AWS (Inferentia, Trainium) accelerators, which the catalog does
        # not price: unverifiable, never a pass (EC2 API, AcceleratorManufacturers)
        return [
            Shape(
                f"{req.path} (admits {', '.join(makers)} accelerators; the catalog prices NVIDIA GPUs only)", None, None
            )
        ]
    mem = _range(req, "acceleratorTotalMemoryMib")
    cpus = _range(req, "vcpuCount")
    ram = _range(req, "memoryMib")
    allowed = [(x.text() or "").strip().lower() for x in req.each("allowedInstanceTypes")]
    excluded = [(x.text() or "").strip().lower() for x in req.each("excludedInstanceTypes")]
    admitted = []
    catalog = audit.types_of("aws")
    for t, o in catalog.items():
        count = o.gpu_count * o.gpu_fraction
        seen = count * o.gpu_memory_gib * units.MIB_PER_GIB  # driver-visible; EC2 lists the marketed figure
        if not (acc[0] <= count <= acc[1] and mem[0] <= seen * LISTED_MEMORY[1] and seen * LISTED_MEMORY[0] <= mem[1]):
            continue
        if (names and o.gpu not in names) or (makers and "nvidia" not in makers):
            continue
        if not (cpus[0] <= o.vcpus <= cpus[1] and ram[0] <= o.ram_gib * units.MIB_PER_GIB <= ram[1]):
            continue
        if (allowed and not any(ec2_match(t, p) for p in allowed)) or any(ec2_match(t, p) for p in excluded):
            continue
        admitted.append(aws(t))
    # An allowed type or pattern that may launch an accelerated type the catalog does not price cannot be
    # verified (a new family needs a catalog refresh): literal types, and patterns matching such a family.
    admitted += [
        s
        for t in allowed
        if "*" not in t
        and t not in catalog
        and not any(ec2_match(t, p) for p in excluded)
        and (s := aws(t)) is not None
    ]
    unpriced = sorted(families()["aws"] - {aws_family(t) for t in catalog})
    admitted += [
        Shape(f"{fam}.* (allowed by {p!r}; not in the catalog)", None, None)
        for p in allowed
        if "*" in p
        for fam in unpriced
        if any(ec2_match(f"{fam}.{size}", p) for size in SIZES)
        and not any(ec2_match(f"{fam}.{size}", e) for e in excluded for size in SIZES)
    ]
    if admitted:
        return [dataclasses.replace(x, by_attributes=True) for x in extremes(admitted)]
    if acc[0] >= 1 or "gpu" in kinds or names:
        return [Shape(f"{req.path} (no catalog GPU type matches)", None, None)]
    return None


def capacity_of_any(instance_type: str) -> audit.GpuCapacity | None:
    """The GPUs of an AWS or GCP type the catalog knows, whichever cloud sells it (a Kubernetes node label
    names a type, not its cloud), or None."""
    for provider in ("aws", "gcp"):
        cap = audit.capacity_of_type(provider, instance_type)
        if cap is not None:
            return cap
    return None
