"""What a choice costs people: per hour, per month, per run; and what the ranking minimised.

One definition, shared by the plan JSON, every report, `gpusizer diff` and
`gpusizer preview`:

- `hourly_usd` is the price of ONE replica for one hour: every node that
  replica spans (a 2-node training job counts both nodes). A candidate that runs
  several replicas (deploy.replicas, or more to reach a throughput target)
  costs `hourly_usd x replicas` per hour.
- `monthly_usd = hourly_usd x replicas x HOURS_PER_MONTH`, computed from the
  rounded `hourly_usd` the JSON shows, so a reader's own multiplication agrees
  to the cent.
- For a training run with a token count, `run_hours` is the estimated length
  of the run on that shape and `total_usd = hourly_usd x replicas x run_hours`
  (again from the shown, rounded figures).

Autoscaling (min/max replicas) extends this by calling `monthly_usd` with
other replica counts; the `Cost` record is where such fields go.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gpusizer.base import units

# Hours in an average month: 24 x 365 / 12 = 730. Infracost's reports use the
# same figure ("assuming they are used for the whole month (730 hours)",
# infracost/infracost internal/output/testdata/ToMarkdown_NoPreviousBreakdown.md,
# read 2026-11-23), as does the AWS Pricing Calculator.
HOURS_PER_MONTH = units.HOURS_PER_YEAR // 12

# Decimals kept in the JSON: prices to 1/100 of a cent per hour (catalog
# prices have 4 decimals), run length to 1/10,000 h (0.36 s), dollars to the cent.
HOURLY_DECIMALS = 4
HOURS_DECIMALS = 4
USD_DECIMALS = 2

OBJECTIVES = {
    "hourly": "$/hour of all replicas",
    "per-token": "$ per million tokens",
}
"""The ranking objectives (spec `sizing.objective`, or chosen by optimize.objective_of) and what each minimises."""


def objective_text(objective: str, task: str) -> str:
    """The ranking objective in words, for every report ("ranked by ...")."""
    if objective == "per-token":
        if task == "inference":
            return "$ per million tokens served"
        return "the cost of the whole training run"
    return OBJECTIVES.get(objective, objective)


@dataclasses.dataclass(frozen=True, slots=True)
class Cost:
    """What a candidate costs, rounded as shown (see the module docstring for the arithmetic).

    Attributes:
        hourly_usd: one replica (all its nodes) for one hour.
        replicas: copies of the workload that run.
        monthly_usd: hourly_usd x replicas x HOURS_PER_MONTH.
        run_hours: a training run's estimated length, or None (serving, or no token count): training plus the
            fixed time (boot, image pull, weight and dataset download, final checkpoint; gpusizer.estimate.jobcost),
            at least the provider's billing minimum.
        total_usd: the whole run, hourly_usd x replicas x run_hours, or None.
    """

    hourly_usd: float
    replicas: int
    monthly_usd: float
    run_hours: float | None = None
    total_usd: float | None = None
    split: dict[str, float] | None = dataclasses.field(
        default=None, compare=False
    )  # run_hours by part (training, boot, ...)

    def to_dict(self) -> dict[str, float | int | dict[str, float] | None]:
        out: dict[str, float | int | dict[str, float] | None] = {
            "hourly_usd": self.hourly_usd,
            "replicas": self.replicas,
            "monthly_usd": self.monthly_usd,
        }
        if self.run_hours is not None:
            out.update(run_hours=self.run_hours, total_usd=self.total_usd)
            if self.split:
                out["run_split"] = dict(self.split)
        return out


def monthly_usd(hourly_usd: float, replicas: int) -> float:
    """$/month of `replicas` copies at `hourly_usd` each, running all month.

    >>> monthly_usd(1.861, 2)
    2717.06
    """
    return round(hourly_usd * replicas * HOURS_PER_MONTH, USD_DECIMALS)


def of(replica_hourly_usd: float, replicas: int, run_hours: float | None = None) -> Cost:
    """The Cost of `replicas` copies priced at `replica_hourly_usd` each (unrounded), run for `run_hours` if known.

    >>> of(11.3933, 1, 0.4321).to_dict()
    {'hourly_usd': 11.3933, 'replicas': 1, 'monthly_usd': 8317.11, 'run_hours': 0.4321, 'total_usd': 4.92}
    """
    hourly = round(replica_hourly_usd, HOURLY_DECIMALS)
    if run_hours is None:
        return Cost(hourly, replicas, monthly_usd(hourly, replicas))
    hours = round(run_hours, HOURS_DECIMALS)
    return Cost(hourly, replicas, monthly_usd(hourly, replicas), hours, round(hourly * replicas * hours, USD_DECIMALS))


def from_choice(choice: Mapping[str, Any]) -> Cost:
    """The Cost a plan JSON `choice` (or a `candidates` row) states; older plans without monthly_usd get it computed."""
    replicas = int(choice.get("replicas") or 1)
    hourly = float(choice["hourly_usd"])
    monthly = choice.get("monthly_usd")
    return Cost(
        hourly,
        replicas,
        monthly_usd(hourly, replicas) if monthly is None else float(monthly),
        choice.get("run_hours"),
        choice.get("total_usd"),
    )
