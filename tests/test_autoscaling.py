"""deploy.autoscaling: strict bounds and metric fields, and the $/month range the plan states."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer import autoscaling
from gpusizer.render import report

QUERY = 'sum(vllm:num_requests_waiting{model_name="x"})'
QUEUE = {"min_replicas": 0, "max_replicas": 4, "metric": "queue_depth", "query": QUERY, "target": 10}
WEEKDAYS = {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "replicas": 3}


def _spec(scaling: dict, **extra) -> gpusizer.WorkloadSpec:
    return gpusizer.load_spec(
        {"name": "chat", "model": {"name": "llama-3.1-8b"}, "deploy": {"autoscaling": scaling}, **extra}
    )


def test_contract_example_parses():
    a = _spec({**QUEUE, "scale_to_zero_after": "15m"}).deploy.autoscaling
    assert (a.min_replicas, a.max_replicas, a.metric, a.query, a.target) == (0, 4, "queue_depth", QUERY, 10)
    assert autoscaling.seconds(a.scale_to_zero_after) == 900


@pytest.mark.parametrize(
    "scaling, field, words",
    [
        ({**QUEUE, "min_replicas": 5}, "deploy.autoscaling", "min_replicas (5) exceeds max_replicas (4)"),
        ({**QUEUE, "min_replicas": 1, "scale_to_zero_after": "15m"}, "deploy.autoscaling", "only with min_replicas: 0"),
        ({**QUEUE, "query": None}, "deploy.autoscaling", "needs query"),
        ({"metric": "gpu_utilization", "target": 70, "query": QUERY}, "deploy.autoscaling", "query applies only"),
        ({"metric": "gpu_utilization"}, "deploy.autoscaling", "needs target"),
        (
            {"metric": "gpu_utilization", "target": 70, "min_replicas": 0},
            "deploy.autoscaling",
            "cannot scale up from zero",
        ),
        ({"metric": "gpu_utilization", "target": 170}, "deploy.autoscaling", "percentage"),
        ({"metric": "schedule"}, "deploy.autoscaling", "needs schedule"),
        ({"metric": "schedule", "target": 3, "schedule": [WEEKDAYS]}, "deploy.autoscaling", "target does not apply"),
        ({**QUEUE, "schedule": [WEEKDAYS]}, "deploy.autoscaling", "schedule applies only"),
        (
            {"metric": "schedule", "max_replicas": 2, "schedule": [WEEKDAYS]},
            "deploy.autoscaling",
            "exceed max_replicas",
        ),
        (
            {"metric": "schedule", "schedule": [{**WEEKDAYS, "end": "0 7 * * 1-5"}]},
            "deploy.autoscaling.schedule.0",
            "later",
        ),
        (
            {"metric": "schedule", "schedule": [{**WEEKDAYS, "end": "0 20 * * *"}]},
            "deploy.autoscaling.schedule.0",
            "same day",
        ),
        (
            {"metric": "schedule", "schedule": [{**WEEKDAYS, "start": "*/5 8 * * 1-5"}]},
            "deploy.autoscaling.schedule.0.start",
            "not valid",
        ),
        (
            {"metric": "schedule", "schedule": [{"start": "0 8 * * xyz", "end": "0 20 * * xyz", "replicas": 3}]},
            "deploy.autoscaling.schedule.0",
            "day fields as cron reads them",
        ),
        ({**QUEUE, "metric": "cpu"}, "deploy.autoscaling.metric", "gpu_utilization"),
        ({**QUEUE, "max_replicas": 0}, "deploy.autoscaling.max_replicas", "greater than or equal to 1"),
        ({**QUEUE, "min_replicas": -1}, "deploy.autoscaling.min_replicas", "greater than or equal to 0"),
        ({**QUEUE, "target": True}, "deploy.autoscaling.target", "not true/false"),
        ({**QUEUE, "scale_to_zero_after": "15 minutes"}, "deploy.autoscaling.scale_to_zero_after", "not valid"),
        ({**QUEUE, "query": "sum(x)\nor y"}, "deploy.autoscaling.query", "not valid"),
    ],
)
def test_invalid_autoscaling_names_field_and_fix(scaling, field, words):
    scaling = {k: v for k, v in scaling.items() if v is not None}
    with pytest.raises(gpusizer.SpecError) as err:
        _spec(scaling)
    assert err.value.field == field
    assert words in str(err.value)
    assert "To fix" in str(err.value) or "not true/false" in str(err.value)


def test_max_below_fixed_replicas_is_refused():
    with pytest.raises(gpusizer.SpecError, match="below replicas"):
        gpusizer.load_spec(
            {
                "name": "chat",
                "model": {"name": "llama-3.1-8b"},
                "deploy": {"replicas": 3, "autoscaling": {**QUEUE, "max_replicas": 2}},
            }
        )


def test_autoscaling_is_for_serving_only():
    with pytest.raises(gpusizer.SpecError, match="applies to serving"):
        _spec(QUEUE, task="training")


def test_plan_prices_min_and_max_per_replica(tiny_catalog):
    plan = gpusizer.document(gpusizer.plan(_spec(QUEUE), catalog=tiny_catalog))
    choice = plan["choice"]
    a = choice["autoscaling"]
    # one replica of the choice, 730 h a month (24 x 365 / 12), by hand
    assert (a["min_replicas"], a["max_replicas"]) == (0, 4)
    assert a["monthly_usd_min"] == 0
    assert a["monthly_usd_max"] == pytest.approx(choice["hourly_usd"] * 4 * 730, abs=0.01)
    # ranking unchanged: the choice is the same as without autoscaling
    fixed = gpusizer.plan(gpusizer.load_spec({"name": "chat", "model": {"name": "llama-3.1-8b"}}), catalog=tiny_catalog)
    assert choice["instance_type"] == fixed.chosen.offer.instance_type


def test_max_defaults_to_replicas_the_throughput_target_needs(tiny_catalog):
    spec = _spec(
        {"min_replicas": 1, "metric": "gpu_utilization", "target": 70},
        inference={"targets": {"tokens_per_second": 5000}},
        growth=2.0,
    )
    plan = gpusizer.plan(spec, catalog=tiny_catalog)
    a = gpusizer.document(plan)["choice"]["autoscaling"]
    assert plan.chosen.replicas > 1  # 10,000 tokens/s takes several replicas of one GPU
    assert a["max_replicas"] == plan.chosen.replicas
    assert a["monthly_usd_expected"] == a["monthly_usd_max"]  # the target load runs all month


def test_schedule_expected_cost_counts_window_hours(tiny_catalog):
    plan = gpusizer.document(
        gpusizer.plan(_spec({"min_replicas": 1, "metric": "schedule", "schedule": [WEEKDAYS]}), catalog=tiny_catalog)
    )
    a, hourly = plan["choice"]["autoscaling"], plan["choice"]["hourly_usd"]
    # weekdays 08:00-20:00 at 3 replicas = 5 x 12 x 3 = 180 replica-hours; the other 108 h of the week at 1
    mean = (180 + 108) / 168
    assert a["max_replicas"] == 3
    assert a["monthly_usd_expected"] == pytest.approx(hourly * mean * 730, abs=0.01)
    assert a["monthly_usd_min"] == pytest.approx(hourly * 730, abs=0.01)


def test_table_and_markdown_show_min_and_max(tiny_catalog):
    plan = gpusizer.plan(_spec(QUEUE), catalog=tiny_catalog)
    hourly = plan.chosen.cost.hourly_usd
    top = f"${hourly * 4 * 730:,.2f}/month at max"
    for fmt in ("table", "markdown"):
        text = report.render(plan, fmt)
        assert "$0/month at min" in text and top in text


@pytest.mark.parametrize(
    "days, per_week",
    [
        ("*/2", 4),  # Sun, Tue, Thu, Sat (cron steps count from the range's start, 0)
        ("1-5/2", 3),  # Mon, Wed, Fri
        ("5-1", 4),  # Fri, Sat, Sun, Mon: a range that wraps past Saturday
        ("mon-fri", 5),
        ("0,7", 1),  # 0 and 7 are both Sunday
    ],
)
def test_window_days_per_week_follow_cron_day_of_week_rules(days, per_week):
    w = autoscaling.Window(start=f"0 8 * * {days}", end=f"0 20 * * {days}", replicas=1)
    assert autoscaling.days_per_week(w.start) == per_week


# A Gregorian year averages 365.25 days, 52.18 weeks.
@pytest.mark.parametrize(
    "days, per_year",
    [
        ("1 * *", 12),  # the 1st of each month
        ("1,15 * *", 24),
        ("* 1 *", 31),  # every day of January
        ("* 2 *", 28.25),  # February: 29 days one year in four
        ("L * *", 12),  # each month's last day
        ("1 * 1", 12 + 365.25 / 7 - 12 / 7),  # the 1st OR a Monday (both restricted: cron runs on either)
        ("13 * 5", 12 + 365.25 / 7 - 12 / 7),  # the 13th or a Friday
    ],
)
def test_window_days_follow_day_of_month_and_month_as_cron_reads_them(days, per_year):
    assert autoscaling.days_per_week(f"0 8 {days}") * 365.25 / 7 == pytest.approx(per_year, rel=2e-3)


def test_a_monthly_window_costs_its_hours_not_a_daily_windows(tiny_catalog):
    # 12 h on the 1st of each month at 2 replicas, 1 replica otherwise: 12 x 12 = 144 h a year at 2.
    spec = _spec(
        {
            "min_replicas": 1,
            "max_replicas": 2,
            "metric": "schedule",
            "schedule": [{"start": "0 8 1 * *", "end": "0 20 1 * *", "replicas": 2}],
        }
    )
    a = gpusizer.document(gpusizer.plan(spec, catalog=tiny_catalog))["choice"]["autoscaling"]
    hourly = a["monthly_usd_min"] / 730  # one replica, all month
    extra_hours_per_month = 144 / 12 * (730 / (365.25 * 24 / 12))  # the 730-hour month's share of 144 h a year
    assert a["monthly_usd_expected"] == pytest.approx(a["monthly_usd_min"] + hourly * extra_hours_per_month, rel=1e-3)
