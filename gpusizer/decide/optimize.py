"""Choose the cheapest adequate offer: a pure function of a workload and a catalog.

Algorithm:
1. The catalog's index (gpusizer.catalog.index) holds its offers in classes
   that share everything but place, price and pool capacity; each class and
   purchase option keeps its offers sorted by price. A decision judges classes,
   so its cost grows with distinct shapes, not with offers.
2. Per class and purchase option the spec allows (owned pools: their one
   amortized rate), limits are judged in a fixed order and each offer keeps
   the first it fails:
   - placement: provider, region (or zone), GPU model, opt-in;
   - purchase: not sold that way;
   - sizing, once per class: the fewest nodes that run the workload (serving
     spans nodes as pipeline stages only when one node lacks the memory;
     training may span nodes), with memory, interconnect, precision and
     targets/deadline judged by gpusizer.estimate.fit; a node may run several
     replicas (Fit.node_groups), and the candidate is priced for all;
   - machine image (data/images.yaml), after the fit so sizing reasons win;
   - host vCPU and RAM;
   - per offer: pool free GPUs, cloud vCPU quota (per region);
   - budget (placement.max_hourly_usd): a bisection over the price order.
   The offers of a class thus fall into runs that share one verdict
   (gpusizer.decide.judgement.Segment).
3. Ranking: the feasible runs are merged by the objective ($/hour, or $ per
   million tokens when a throughput target or a training token count is set)
   with a full tie-break key (gpusizer.decide.judgement.rank_key), so the result
   never depends on input order. Candidates are built only for what is read:
   the top N, the nearest rejection per reason, or everything on request.

The slow, obvious form of these rules is tests/test_optimizer_oracle.py's
brute-force planner; the two must agree on every candidate.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpusizer.base import limits, providers, units
from gpusizer.catalog.index import OFFER, REGION, ZONE, Entry, OfferClass, OfferIndex, Priced
from gpusizer.catalog.offer import Offer
from gpusizer.decide import judgement, runs
from gpusizer.decide.decision import Decision
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate.workload import Workload

if TYPE_CHECKING:
    from gpusizer.catalog import Catalog

Limit = limits.Limit
Run = tuple[Sequence[Entry], Sequence[Entry]]
"""(offers sold at the purchase option, offers not sold that way), each in its index order."""
Verdict = tuple[int, fit_mod.Fit, bool, Limit | None]
"""(nodes, fit, lacks_fabric, first failed of sizing, image and host or None) of one class."""

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


def purchases(w: Workload, owned: bool) -> tuple[str, ...]:
    """Purchase options a candidate is judged at: owned capacity at its amortized rate, clouds as the spec asks."""
    if owned:
        return ("on-demand",)
    wanted = w.spec.placement.purchase
    return ("on-demand", "spot") if wanted == "any" else (wanted,)


class _Sizer:
    """Sizing verdicts of one workload: the fewest nodes per class, each shape and node count fitted once."""

    def __init__(self, w: Workload):
        self.w = w
        self.fits: dict[fit_mod.Shape, fit_mod.Fit] = {}
        self.verdicts: dict[tuple[fit_mod.Shape, int | None], tuple[int, fit_mod.Fit, bool]] = {}

    def fit(self, one: fit_mod.Shape, nodes: int) -> fit_mod.Fit:
        """The fit of `one` (a node's shape) on `nodes` nodes, evaluated once per shape."""
        if nodes == 1:  # one node has no fabric hops: its fabric does not change the fit, nor does its network
            # when serving; a training run downloads its weights and data at the node's network rate (the fixed
            # time, gpusizer.estimate.jobcost), so there the network stays in the shape.
            network = one.network_gbps if self.w.spec.task != "inference" else 0.0
            shape = fit_mod.Shape(
                one.gpu, one.gpu_memory_gib, one.gpu_count, one.gpu_fraction, one.nvlink, network_gbps=network
            )
        else:
            shape = fit_mod.Shape(
                one.gpu,
                one.gpu_memory_gib,
                one.gpu_count,
                one.gpu_fraction,
                one.nvlink,
                one.fabric,
                nodes,
                one.network_gbps,
            )
        f = self.fits.get(shape)
        if f is None:
            f = self.fits[shape] = fit_mod.fit(self.w, shape)
        return f

    def verdict(self, one: fit_mod.Shape, max_nodes: int | None) -> tuple[int, fit_mod.Fit, bool]:
        """(nodes, fit, lacks_fabric): the fewest nodes of shape `one` (at most `max_nodes`) that run the
        workload, or the failure shown.

        Serving spans nodes (pipeline stages) only when one node lacks the
        memory; more nodes do not help its latency targets. When more nodes
        would need a fabric the offer lacks, the limit shown is the one at
        the last node count, and `lacks_fabric` says so (gpusizer.decide.judgement
        adds it to each offer's sentence).
        """
        key = (one, max_nodes)
        found = self.verdicts.get(key)
        if found is None:
            found = self.verdicts[key] = self._walk(one, max_nodes)
        return found

    def _walk(self, one: fit_mod.Shape, max_nodes: int | None) -> tuple[int, fit_mod.Fit, bool]:
        serving = self.w.spec.task == "inference"
        if one.gpu_fraction < 1 or (serving and self.w.model.kind != "llm"):
            return 1, self.fit(one, 1), False  # an image model is not split across nodes
        limit = max_nodes or TRAINING_NODES[-1]
        best: tuple[int, fit_mod.Fit] | None = None
        for nodes in TRAINING_NODES:
            if nodes > limit:
                break
            f = self.fit(one, nodes)
            if f.ok:
                return nodes, f, False
            if f.code == Limit.INTERCONNECT and best is not None:
                return (
                    best[0],
                    best[1],
                    True,
                )  # more nodes need a fabric this type lacks: the last limit is the real one
            if serving and f.code != Limit.MEMORY:
                return nodes, f, False  # more pipeline stages do not shorten TTFT/TPOT
            best = (nodes, f)
        assert best is not None, "one node is always tried (limit >= 1), so the loop returned or set best"
        return best[0], best[1], False


def _host(w: Workload, o: Offer) -> Limit | None:
    if o.vcpus < w.min_vcpus(o.gpu_count * o.gpu_fraction):
        return Limit.HOST_VCPU
    if o.ram_gib < w.min_ram_gib(o.gpu_count):
        return Limit.HOST_RAM
    return None


def _free_gpus(o: Offer) -> int:
    """A pool offer's free GPUs: a pooled class is one whose offers carry them (gpusizer.catalog.index)."""
    assert o.gpus_free is not None, "a pooled class's offers carry free GPUs"
    return o.gpus_free


def capacity_limit(
    offer: Offer, instances: int, purchase: str, quotas: Mapping[tuple[str, str, str, str], float]
) -> tuple[Limit, float | None] | None:
    """Pool free GPUs, then the cloud vCPU quota, for `instances` nodes (every replica's): the limit
    failed and the quota read, or None."""
    if offer.gpus_free is not None and offer.gpu_count * instances > offer.gpus_free:
        return Limit.CAPACITY, None
    quota = quotas.get((offer.provider, offer.region, purchase, quota_class(offer)))
    if quota is not None and offer.vcpus * instances > quota:
        return Limit.QUOTA, quota
    return None


def quota_class(offer: Offer) -> str:
    """The vCPU quota class an offer counts against (AWS "G" or "P"; "" where quotas are not read)."""
    return providers.get(offer.provider).quota_class(offer.instance_type)


def _allowed(priced: Priced, regions: frozenset[str]) -> list[Run]:
    """(entries, missing) runs of the offers in `regions` (by region, or by zone), disjoint, each in price order."""
    by_region, by_zone = priced.by_place(REGION), priced.by_place(ZONE)
    parts = [by_region[r] for r in sorted(regions) if r in by_region]
    for z in sorted(regions):
        if z in by_zone:
            have, lack = by_zone[z]
            if have and have[0][1] in regions or lack and lack[0][1] in regions:
                continue  # a zone of an allowed region: already in
            parts.append((have, lack))
    return parts


class _Classes:
    """Judges the classes of one decision into runs.Groups."""

    def __init__(self, w: Workload, quotas: Mapping[tuple[str, str, str, str], float]):
        self.w, self.quotas = w, quotas
        self.sizer = _Sizer(w)
        self.objective = objective_of(w)
        p = w.spec.placement
        self.providers = None if p.providers is None else frozenset(p.providers)
        self.gpus = None if p.gpus is None else frozenset(p.gpus)
        self.regions = None if p.regions is None else frozenset(p.regions)
        self.purchases = {owned: purchases(w, owned) for owned in (False, True)}
        self.quota_keys = {(prov, purchase, qclass) for prov, _, purchase, qclass in quotas}
        self.verdicts: dict[tuple[Any, ...], Verdict] = {}  # by OfferClass.key

    def judge(self, cls: OfferClass) -> list[runs.Group]:
        """The class's Groups, one per purchase option, each cut into runs (module docstring, step 2)."""
        o, p = cls.sample, self.w.spec.placement
        if self.providers is not None and o.provider not in self.providers:
            later = Limit.PROVIDER  # before the region: no region runs
        elif self.gpus is not None and o.gpu not in self.gpus:
            later = Limit.GPU
        elif o.opt_in and not p.allow_opt_in:
            later = Limit.OPT_IN
        else:
            later = None
        groups = []
        for purchase in self.purchases[cls.owned]:
            priced = cls.priced[purchase]
            g = runs.Group(self.w, cls, purchase, self.objective)
            groups.append(g)
            parts: Sequence[Run]
            if later is Limit.PROVIDER or self.regions is None or cls.owned:
                parts = ((priced.entries, priced.missing),)
            else:
                parts = self._placed(g, priced)
            if later is not None:
                for have, lack in parts:
                    g.add(have, later)
                    g.add(lack, later, False)
                continue
            for _have, lack in parts:
                g.add(lack, Limit.PURCHASE, False)
            if not any(have for have, _ in parts):
                continue
            nodes, f, lacks_fabric, code = self._verdict(cls)
            g.size_with(nodes, f, lacks_fabric)
            per_offer = cls.pooled or (o.provider, purchase, cls.quota_class) in self.quota_keys
            for have, _ in parts:
                if code is not None:
                    g.add(have, code)
                elif per_offer:
                    self._per_offer(g, cls, have)
                else:
                    self._budget(g, have)
        return groups

    def _verdict(self, cls: OfferClass) -> Verdict:
        """(nodes, fit, lacks_fabric, first failed of sizing, image and host or None), once per class."""
        found = self.verdicts.get(cls.key)
        if found is None:
            w, o = self.w, cls.sample
            nodes, f, lacks_fabric = self.sizer.verdict(cls.shape, o.max_nodes)
            image = None if cls.image_ok or w.spec.deploy.machine_image else Limit.IMAGE
            # The ignore: Limit(value) is a lookup by value; mypy checks it against the members' __new__(value, group).
            code = Limit(f.code) if f.code else image or _host(w, o)  # type: ignore[call-arg]
            found = self.verdicts[cls.key] = (nodes, f, lacks_fabric, code)
        return found

    def _placed(self, g: runs.Group, priced: Priced) -> list[Run]:
        """The runs placement.regions allows; the rest added to `g` as "region"."""
        assert self.regions is not None, "judge places runs only when placement.regions is set"
        parts = _allowed(priced, self.regions)
        g.add(priced.entries, Limit.REGION, exclude=self.regions, n=len(priced.entries) - sum(len(h) for h, _ in parts))
        g.add(
            priced.missing,
            Limit.REGION,
            priced=False,
            exclude=self.regions,
            n=len(priced.missing) - sum(len(m) for _, m in parts),
        )
        return parts

    def _per_offer(self, g: runs.Group, cls: OfferClass, have: Sequence[Entry]) -> None:
        """Split a run by pool capacity and quota, offer by offer (pools, and classes with a quota read)."""
        if cls.pooled and (g.offer.provider, g.purchase, cls.quota_class) not in self.quota_keys:
            # Pools with no quota read: one threshold on free GPUs (capacity_limit's first test), kept in
            # price order; the split is kept on the class (per pool set) for the next workload that needs as many.
            need = g.offer.gpu_count * g.launched
            key = (g.purchase, need, id(have))
            split = cls.splits.get(key)
            if split is None:
                split = cls.splits[key] = (
                    tuple(e for e in have if _free_gpus(e[OFFER]) < need),
                    tuple(e for e in have if _free_gpus(e[OFFER]) >= need),
                    have,
                )
            full, have, _ = split
            g.add(full, Limit.CAPACITY)
            self._budget(g, have)
            return
        runs: dict[tuple[Limit, float | None] | None, list[Entry]] = {}
        for e in have:
            runs.setdefault(capacity_limit(e[OFFER], g.launched, g.purchase, self.quotas), []).append(e)
        for lost, run in runs.items():
            if lost is None:
                self._budget(g, tuple(run))
            else:
                g.add(tuple(run), lost[0], quota=lost[1])

    def _budget(self, g: runs.Group, have: Sequence[Entry]) -> None:
        """Feasible up to placement.max_hourly_usd (a bisection over the price order), "budget" after."""
        cap = self.w.spec.placement.max_hourly_usd
        if cap is None:
            g.add(have, None)
            return
        cut = bisect.bisect_right(have, cap, key=g.hourly_of)
        g.add(have, None, hi=cut)
        g.add(have, Limit.BUDGET, lo=cut)


def choose(w: Workload, catalog: Catalog, notes: tuple[str, ...] | None = None) -> Decision:
    """Pick the cheapest adequate candidate in `catalog` (gpusizer.catalog.Catalog) for workload `w`.

    Args:
        w: the resolved workload.
        catalog: cloud offers and on-prem pool offers (Catalog.with_pools), their
            index, and the vCPU quotas of a refresh (offers exceeding them are rejected).
        notes: provenance lines to carry into the decision (default: the catalog's).

    Returns:
        A Decision; `chosen` is None when nothing is feasible, and every
        candidate carries its first failed limit.
    """
    classes = _Classes(w, catalog.quotas or {})
    judged = judgement.Judgement(
        classes.objective, classes.judge, catalog.index.classes, _pending(w, classes.objective, catalog.index, classes)
    )
    top = judged.top(1)
    return Decision(w, judged.objective, top[0] if top else None, judged, catalog.notes if notes is None else notes)


# Lower bounds are taken this much under the figure, so that rounding (the metric is computed by a
# different sequence of operations) never puts a bound above a metric it bounds.
_BOUND_SLACK = 1 - 1e-9


def _pending(
    w: Workload, objective: str, index: OfferIndex, classes: _Classes
) -> list[tuple[float, OfferClass]] | None:
    """The classes in order of a lower bound on the ranking metric of any feasible candidate they hold
    (gpusizer.decide.judgement.Judgement's branch and bound), or None when the metric has no such bound.

    A candidate of a class launches at least `_fewest_nodes` nodes, each at
    least the class's floor (its cheapest offer's $/hour per node), and its
    metric is
    - ranking by $/hour: the $/hour, so floor x fewest nodes bounds it;
    - per token at a throughput target: $/hour x 1e6 / (target x 3600), one factor for every class;
    - per token of a training run: $/hour x run hours / tokens x 1e6, where the run's hours on
      n nodes are the hours on one node / n and the $/hour is n x the node's price, so the
      metric is the node's price x one node's hours / tokens x 1e6, whatever n.
    Serving ranked per token without a target divides by the layout's own speed: no bound.
    A class that cannot hold the workload on as many nodes as it may use is bounded by infinity.
    """
    by_floor = index.by_floor(classes.purchases[False])
    serving = w.spec.task == "inference"
    factor: Callable[[OfferClass], float]
    if objective == "hourly":
        factor = lambda c: 1.0  # noqa: E731
    elif serving:
        tps = w.targets.tokens_per_second
        if not tps:
            return None
        factor = lambda c: runs.per_mtok_at_rate(tps)  # noqa: E731
    elif w.training_flops and w.spec.train.tokens:
        factor = _per_token_training(w)
    else:
        return None
    b = w.breakdown
    weights = b.weights
    if serving and w.model.kind == "diffusion" and w.model.denoiser_params:
        weights *= w.model.denoiser_params / w.model.params  # text encoders and VAE may be offloaded (estimate.fit)
    need_gib = units.gib(weights + b.activations + (b.kv_cache if serving else b.gradients + b.optimizer_states))
    out = []
    for floor, c in by_floor:
        nodes = _fewest_nodes(w, c, need_gib)
        per_node = nodes if objective == "hourly" or serving else 1  # training per token: nodes cancel
        out.append((floor * per_node * factor(c) * _BOUND_SLACK if nodes else math.inf, c))
    out.sort(key=lambda x: x[0])
    return out


def _fewest_nodes(w: Workload, c: OfferClass, need_gib: float) -> int:
    """The fewest nodes of class `c` whose GPUs could hold `need_gib` (0: more than it may use).

    Every layout splits the weights, KV cache (serving), gradients and
    optimizer states (training) and activations over at most all GPUs of a
    replica (gpusizer.estimate.memory: per-GPU bytes >= their sum / GPUs), so
    a replica needs at least need / usable-per-GPU GPUs.
    """
    one = c.shape
    usable = one.gpu_memory_gib * w.memory_headroom
    nodes = max(1, math.ceil(need_gib / (one.gpu_count * usable) * _BOUND_SLACK))
    single = one.gpu_fraction < 1 or (w.spec.task == "inference" and w.model.kind != "llm")
    most = 1 if single else min(c.sample.max_nodes or TRAINING_NODES[-1], TRAINING_NODES[-1])
    return nodes if nodes <= most else 0


def _per_token_training(w: Workload) -> Callable[[OfferClass], float]:
    """A class's $ per million tokens per $/hour of one node (training ranked per token)."""
    from gpusizer.estimate import speed
    from gpusizer.facts import hardware

    gpus = hardware.load_gpus()
    flops, tokens = w.training_flops, w.spec.train.tokens
    assert flops and tokens, "ranked per token of a run only for training with a token count (_pending)"

    def factor(c: OfferClass) -> float:
        one = c.shape
        hours = speed.training_hours(
            flops, gpus[one.gpu], one.gpu_count * one.gpu_fraction, w.spec.precision, mfu=w.efficiency(one.gpu)[2]
        )
        return runs.per_mtok_of_run(hours, tokens)

    return factor


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
    assert c is not None, "Decision.autoscaling is None without a choice"
    lost = capacity_limit(c.offer, r.max_instances, c.purchase, quotas or {})
    if lost is None:
        return None
    detail = runs.capacity_detail(c.offer, lost[0], r.max_instances, c.purchase, lost[1])
    return f"max_replicas {r.max_replicas} ({r.max_instances} node(s)): {detail}"
