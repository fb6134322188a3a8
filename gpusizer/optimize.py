"""Choose the cheapest adequate offer: a pure function of a workload and a list of offers.

Algorithm:
1. Expand each offer into candidates: one per purchase option the spec
   allows and the offer sells, at the fewest nodes that run the workload
   (serving spans nodes as pipeline stages only when one node lacks the
   memory; training may span nodes). The fit prices all replicas: a node
   may run several (Fit.node_groups).
2. Judge each candidate in a fixed order and keep the first failed limit:
   placement (provider, region, GPU model, opt-in), purchase, memory,
   interconnect, targets/deadline, host vCPU and RAM, capacity (pool free
   GPUs, cloud quotas), budget (max_hourly_usd).
3. Rank the feasible ones by the objective ($/hour, or $ per million tokens
   when a throughput target or a training token count is set) with a full
   tie-break key, so the result never depends on input order.

Sizing limits depend only on the GPU shape, so each shape is evaluated once
however many regions, zones and purchase options share it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from gpusizer import images, limits, providers
from gpusizer.catalog.offer import Offer
from gpusizer.decision import Candidate, Decision, Rejection
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate.workload import Workload

# Node counts tried for multi-node training, in order (the smallest that fits wins).
TRAINING_NODES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def objective_of(w: Workload) -> str:
    """The ranking objective: "per-token" when there is a rate to divide by, else "hourly"."""
    chosen = w.spec.sizing.objective
    if chosen != "auto":
        return chosen
    if w.spec.task == "inference":
        return "per-token" if w.targets.tokens_per_second else "hourly"
    return "per-token" if w.spec.train.tokens else "hourly"


def _purchases(w: Workload, offer: Offer) -> tuple[str, ...]:
    if providers.get(offer.provider).owned:
        return ("on-demand",)  # owned capacity, priced at its amortized rate whatever the spec's purchase
    wanted = w.spec.placement.purchase
    return ("on-demand", "spot") if wanted == "any" else (wanted,)


def _placement_rejection(w: Workload, offer: Offer) -> Rejection | None:
    p = w.spec.placement
    if p.providers is not None and offer.provider not in p.providers:
        return Rejection(limits.Limit.PROVIDER, f"{offer.provider} is not in placement.providers {p.providers}")
    if (p.regions is not None and offer.region not in p.regions and offer.zone not in p.regions
            and not providers.get(offer.provider).owned):
        return Rejection(limits.Limit.REGION, f"{offer.region} is not in placement.regions")
    if p.gpus is not None and offer.gpu not in p.gpus:
        return Rejection(limits.Limit.GPU, f"{offer.gpu} is not in placement.gpus {p.gpus}")
    if offer.opt_in and not p.allow_opt_in:
        where = offer.zone or offer.region
        return Rejection(limits.Limit.OPT_IN, f"{where} is a Local Zone or opt-in region; set placement.allow_opt_in to use it")
    return None


def _image_rejection(w: Workload, offer: Offer) -> Rejection | None:
    """An adequate offer whose family has no supported machine image (data/images.yaml) cannot be
    provisioned unless the spec brings its own image. Judged after fit, so sizing reasons win."""
    why = None if w.spec.deploy.machine_image else images.unsupported(offer.provider, offer.instance_type)
    if why:
        return Rejection(limits.Limit.IMAGE, f"{offer.instance_type} cannot be provisioned: {why}. "
                                             "To fix: set deploy.machine_image to an image with a suitable driver")
    return None


class _Judge:
    """Judges candidates for one workload, caching shape fits."""

    def __init__(self, w: Workload, quotas: Mapping[tuple[str, str, str, str], float] | None):
        self.w = w
        self.quotas = quotas or {}
        self.fits: dict[fit_mod.Shape, fit_mod.Fit] = {}
        # nodes_and_fit per (instance type, one-node shape, node limit): the same type in every
        # region, zone and purchase option is sized once (1,174 offers share ~120 such keys).
        self.node_fits: dict[tuple, tuple[int, fit_mod.Fit]] = {}
        self.objective = objective_of(w)

    def shape_fit(self, offer: Offer, nodes: int) -> tuple[fit_mod.Shape, fit_mod.Fit]:
        shape = fit_mod.shape_of(offer, nodes)
        f = self.fits.get(shape)
        if f is None:
            f = self.fits[shape] = fit_mod.fit(self.w, shape)
        return shape, f

    def nodes_and_fit(self, offer: Offer) -> tuple[int, fit_mod.Fit]:
        """The fewest nodes that run the workload, or the best failure (memoized per type and shape).

        Serving spans nodes (pipeline stages) only when one node lacks the
        memory; more nodes do not help its latency targets.
        """
        key = (offer.instance_type, fit_mod.shape_of(offer, 1), offer.max_nodes)
        found = self.node_fits.get(key)
        if found is None:
            found = self.node_fits[key] = self._nodes_and_fit(offer)
        return found

    def _nodes_and_fit(self, offer: Offer) -> tuple[int, fit_mod.Fit]:
        serving = self.w.spec.task == "inference"
        if offer.gpu_fraction < 1 or (serving and self.w.model.kind != "llm"):
            return 1, self.shape_fit(offer, 1)[1]  # an image model is not split across nodes
        limit = offer.max_nodes or TRAINING_NODES[-1]
        best: tuple[int, fit_mod.Fit] | None = None
        for nodes in (n for n in TRAINING_NODES if n <= limit):
            _, f = self.shape_fit(offer, nodes)
            if f.ok:
                return nodes, f
            if f.code == limits.Limit.INTERCONNECT and best is not None:
                # More nodes would need a fabric this type lacks: the real limit is the last one.
                n, last = best
                detail = f"{last.detail}; more nodes need EFA/GPUDirect, which {offer.instance_type} lacks"
                return n, dataclasses.replace(last, detail=detail)
            if serving and f.code != "memory":
                return nodes, f  # more pipeline stages do not shorten TTFT/TPOT
            best = (nodes, f)
        return best

    def judge(self, offer: Offer, purchase: str) -> Candidate:
        w = self.w
        price = offer.price(purchase)
        rej = _placement_rejection(w, offer)
        if rej:
            return Candidate(offer, purchase, 1, price, None, rej)
        if price is None:
            return Candidate(offer, purchase, 1, None, None, Rejection(limits.Limit.PURCHASE, f"{offer.instance_type} is not sold as {purchase} in {offer.zone or offer.region}"))
        nodes, f = self.nodes_and_fit(offer)
        hourly = price * nodes * f.node_groups
        if not f.ok:
            return Candidate(offer, purchase, nodes, hourly, f, Rejection(f.code, f.detail))
        rej = (_image_rejection(w, offer) or self._host(offer) or self._capacity(offer, nodes * f.node_groups, purchase)
               or self._budget(hourly))
        return Candidate(offer, purchase, nodes, hourly, f, rej, self._per_mtok(hourly, f))

    def _host(self, offer: Offer) -> Rejection | None:
        gpus = offer.gpu_count * offer.gpu_fraction
        need_cpu = self.w.min_vcpus(gpus)
        if offer.vcpus < need_cpu:
            return Rejection(limits.Limit.HOST_VCPU, f"{offer.instance_type}: {offer.vcpus} vCPUs < {need_cpu} needed for {gpus:g} GPU(s)")
        need_ram = self.w.min_ram_gib(offer.gpu_count)
        if offer.ram_gib < need_ram:
            return Rejection(limits.Limit.HOST_RAM, f"{offer.instance_type}: {offer.ram_gib:g} GiB host RAM < {need_ram:.1f} GiB to hold a GPU's share of the weights")
        return None

    def _capacity(self, offer: Offer, nodes: int, purchase: str) -> Rejection | None:
        """Pool free GPUs and cloud vCPU quotas, for all `nodes` the candidate launches (every replica's)."""
        gpus = offer.gpu_count * nodes
        if offer.gpus_free is not None and gpus > offer.gpus_free:
            return Rejection(limits.Limit.CAPACITY, f"pool {offer.instance_type} is full: needs {gpus} GPU(s), {offer.gpus_free} free")
        quota = self.quotas.get((offer.provider, offer.region, purchase, quota_class(offer)))
        if quota is not None and offer.vcpus * nodes > quota:
            return Rejection(limits.Limit.QUOTA, f"{offer.instance_type} x{nodes} needs {offer.vcpus * nodes} vCPUs; {purchase} quota in {offer.region} is {quota:g}")
        return None

    def _budget(self, hourly: float) -> Rejection | None:
        cap = self.w.spec.placement.max_hourly_usd
        if cap is not None and hourly > cap:
            return Rejection(limits.Limit.BUDGET, f"${hourly:,.2f}/h > placement.max_hourly_usd ${cap:,.2f}/h")
        return None

    def _per_mtok(self, hourly: float, f: fit_mod.Fit) -> float | None:
        if self.objective != "per-token":
            return None
        if self.w.spec.task == "inference":
            # At the target rate when there is one (what the workload will really serve),
            # else at full capacity (batch work that fills the GPUs).
            rate = self.w.targets.tokens_per_second or (f.tokens_per_second or 0) * f.replicas
            return hourly / (rate * 3600) * 1e6 if rate else None
        if f.train_hours is None:
            return None
        return hourly * f.train_hours / self.w.spec.train.tokens * 1e6


def scaling_capacity(d: Decision, quotas: Mapping[tuple[str, str, str, str], float] | None) -> str | None:
    """Why the choice's autoscaling maximum does not fit its pool's free GPUs or the account's vCPU
    quota (the same capacity check a candidate passes, at max replicas' nodes), or None.

    The plan ranks per replica at the replicas the throughput target needs; a larger
    `max_replicas` is judged here, by the policy pack's gpusizer-autoscaling-bounds.
    """
    r = d.autoscaling
    if r is None:
        return None
    c = d.chosen
    lost = _Judge(d.workload, quotas)._capacity(c.offer, r.max_instances, c.purchase)
    return None if lost is None else f"max_replicas {r.max_replicas} ({r.max_instances} node(s)): {lost.detail}"


def quota_class(offer: Offer) -> str:
    """The vCPU quota class an offer counts against (AWS "G" or "P"; "" where quotas are not read)."""
    return providers.get(offer.provider).quota_class(offer.instance_type)


def rank_key(c: Candidate) -> tuple:
    """Full tie-break key: objective, $/hour, fewer GPUs, provider, region, zone, type, purchase."""
    metric = c.usd_per_mtok if c.usd_per_mtok is not None else c.hourly_usd
    return (
        metric,
        c.hourly_usd,
        c.gpu_count,
        providers.NAMES.index(c.offer.provider),
        c.offer.region,
        c.offer.zone or "",
        c.offer.instance_type,
        c.purchase,
    )


def _price_key(c: Candidate) -> tuple:
    price = c.hourly_usd if c.hourly_usd is not None else float("inf")
    return (price,) + rank_key(c)[2:]


def choose(
    w: Workload,
    offers: Iterable[Offer],
    quotas: Mapping[tuple[str, str, str, str], float] | None = None,
    notes: tuple[str, ...] = (),
) -> Decision:
    """Pick the cheapest adequate candidate among `offers` for workload `w`.

    Args:
        w: the resolved workload.
        offers: cloud offers and on-prem pool offers.
        quotas: vCPU quotas by (provider, region, purchase, quota_class),
            from a catalog refresh; offers exceeding them are rejected.
        notes: provenance lines to carry into the decision.

    Returns:
        A Decision; `chosen` is None when nothing is feasible, and every
        candidate carries its first failed limit.
    """
    judge = _Judge(w, quotas)
    candidates = [judge.judge(o, p) for o in offers for p in _purchases(w, o)]
    feasible = sorted((c for c in candidates if c.feasible), key=rank_key)
    rejected = sorted((c for c in candidates if not c.feasible), key=_price_key)
    chosen = feasible[0] if feasible else None
    next_cheaper = None
    if chosen is not None:
        # The closest cheaper offer that lost on a sizing, host, capacity or budget limit.
        cheaper = [
            c for c in rejected
            if c.hourly_usd is not None and c.hourly_usd < chosen.hourly_usd and c.rejection.code not in limits.PLACEMENT
        ]
        next_cheaper = max(cheaper, key=lambda c: c.hourly_usd, default=None)  # first of ties in rank order
    return Decision(w, judge.objective, chosen, tuple(feasible + rejected), next_cheaper, _burst(chosen, rejected), notes)


def _burst(chosen: Candidate | None, rejected: list[Candidate]) -> str | None:
    """Say so when a full on-prem pool pushed the workload to a cloud."""
    if chosen is None or providers.get(chosen.offer.provider).owned:
        return None
    full = sorted({c.offer.instance_type for c in rejected
                   if c.rejection.code == limits.Limit.CAPACITY and providers.get(c.offer.provider).owned})
    if not full:
        return None
    return f"on-prem pool(s) {', '.join(full)} full: bursting to {chosen.offer.provider} {chosen.offer.region}"
