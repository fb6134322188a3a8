"""Autoscaling resources for a spec's deploy.autoscaling (gpusizer.autoscaling), one builder per platform.

- Kubernetes (on-prem pools): a KEDA ScaledObject (keda.sh/v1alpha1) with a
  Prometheus trigger for a query metric, cron triggers for `schedule`;
  for `gpu_utilization` an autoscaling/v2 HorizontalPodAutoscaler on the
  DCGM_FI_DEV_GPU_UTIL pods metric that the Prometheus adapter serves.
- AWS: the Auto Scaling group's min/max come from the component; this adds a
  target-tracking policy on a CloudWatch metric (GPU utilization from the
  CloudWatch agent, or the Prometheus query pushed to CloudWatch, per
  replica) and two scheduled actions per `schedule` window.
- GCP: a zonal Autoscaler on the managed instance group: a per-instance GPU
  utilization metric, a per-group metric for a query (single-instance
  assignment = target), or scaling schedules.

Every resource that takes metadata carries the sizing metadata (docs/contract.md
section 3) plus `max-replicas`; AWS scaling policies and scheduled actions take
no tags (the group carries them) and a GCP autoscaler takes no labels (its
description carries them).
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from gpusizer import autoscaling
from gpusizer.base import errors
from gpusizer.components import serving
from gpusizer.components import tags as tagging
from gpusizer.decide import scaling as scaling_cost
from gpusizer.decide.decision import Decision

AWS_MAX_REPLICAS = "gpusizer:max-replicas"
GCP_MAX_REPLICAS = "gpusizer-max-replicas"
K8S_MAX_REPLICAS = "gpusizer.io/max-replicas"

# Where the Prometheus metrics land in CloudWatch. GPU utilization: the CloudWatch agent's
# nvidia_gpu plugin publishes nvidia_smi_utilization_gpu (percent) in namespace CWAgent, with the
# AutoScalingGroupName dimension when append_dimensions asks for it (Amazon CloudWatch user guide,
# "Collect NVIDIA GPU metrics", read 2026-11-23). A query metric: whatever runs the PromQL (the
# CloudWatch agent's Prometheus scraping, or a scheduled job) puts its value as serving.CW_GPU_NAMESPACE /
# <metric> with dimension Workload=<name> (docs/pulumi.md, "Autoscaling").
CW_GPU_METRIC = "nvidia_smi_utilization_gpu"
CW_NAMESPACE = "gpusizer"
# GCP: the Ops Agent's GPU utilization, per VM (GCP docs, "Ops Agent metrics: agent.googleapis.com/gpu",
# read 2026-11-23; unverified against a live project). A query metric is written by the user's
# exporter as a custom per-group metric.
GCP_GPU_METRIC = "agent.googleapis.com/gpu/utilization"
GCP_CUSTOM_PREFIX = "custom.googleapis.com/gpusizer"
# Default Prometheus address for KEDA: kube-prometheus-stack's operated service (unverified for any
# given cluster): GpuWorkloadArgs.prometheus_url overrides it.
DEFAULT_PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"


# Series only the scaled pods emit: at zero pods they are absent, so a trigger on them never scales
# 0 -> 1 (vLLM's /metrics: vllm:num_requests_waiting, ...; dcgm-exporter's DCGM_FI_* per GPU in use).
POD_SERIES = ("vllm:", "DCGM_FI_")


def check_signal(d: Decision) -> None:
    """min_replicas 0 needs a signal that exists while nothing runs: on Kubernetes (KEDA's trigger) and on
    AWS/GCP (the job that pushes the query's value) alike.

    Raises:
        errors.SpecError: a query metric on series the pods themselves emit, with min_replicas 0.
    """
    a = d.workload.spec.deploy.autoscaling
    if a is None or a.metric == "schedule" or d.autoscaling.min_instances > 0:
        return
    if a.metric == "gpu_utilization" or any(s in (a.query or "") for s in POD_SERIES):
        what = "GPU utilization" if a.metric == "gpu_utilization" else f"the query {a.query!r}"
        raise errors.SpecError(
            f"deploy.autoscaling.min_replicas: 0, but {what} reads series that only the running replicas "
            "emit; at zero replicas there is no series and nothing scales 0 -> 1. To fix: set "
            "min_replicas to 1, or query a signal that exists without pods (a gateway or ingress request "
            "metric, e.g. the ingress controller's request count for this service, or the KEDA HTTP add-on's "
            "interceptor queue)",
            field="deploy.autoscaling.min_replicas",
        )


def bounds(d: Decision) -> tuple[int, int]:
    """(min, max) nodes (instances, pods: one pod per node) of the decision's autoscaling range."""
    r = d.autoscaling
    return r.min_instances, r.max_instances


def units(d: Decision, replicas: int) -> int:
    """Nodes (instances, pods) that `replicas` replicas of the choice launch."""
    c = d.chosen
    return scaling_cost.instances(replicas, c.fit.replicas_per_node if c.fit else 1, c.nodes)


def _annotations(d: Decision) -> dict[str, str]:
    return {**tagging.k8s_annotations(d), K8S_MAX_REPLICAS: str(d.autoscaling.max_replicas)}


def k8s_scaler(
    name: str,
    d: Decision,
    namespace: pulumi.Input[str],
    target: str,
    prometheus_url: str,
    child: pulumi.ResourceOptions,
) -> pulumi.CustomResource:
    """A KEDA ScaledObject (a query, a schedule, or min 0) or an HPA (gpu_utilization) for Deployment `target`."""
    a = d.workload.spec.deploy.autoscaling
    low, high = bounds(d)
    meta = k8s.meta.v1.ObjectMetaArgs(
        namespace=namespace,
        name=target,
        annotations=_annotations(d),
        labels={"app.kubernetes.io/managed-by": "gpusizer"},
    )
    if a.metric == "gpu_utilization":
        return k8s.autoscaling.v2.HorizontalPodAutoscaler(
            f"{name}-hpa",
            metadata=meta,
            spec=k8s.autoscaling.v2.HorizontalPodAutoscalerSpecArgs(
                scale_target_ref=k8s.autoscaling.v2.CrossVersionObjectReferenceArgs(
                    api_version="apps/v1", kind="Deployment", name=target
                ),
                min_replicas=low,
                max_replicas=high,
                metrics=[
                    k8s.autoscaling.v2.MetricSpecArgs(
                        type="Pods",
                        pods=k8s.autoscaling.v2.PodsMetricSourceArgs(
                            metric=k8s.autoscaling.v2.MetricIdentifierArgs(name=autoscaling.DCGM_GPU_UTIL),
                            target=k8s.autoscaling.v2.MetricTargetArgs(
                                type="AverageValue", average_value=f"{a.target:g}"
                            ),
                        ),
                    )
                ],
            ),
            opts=child,
        )
    return k8s.apiextensions.CustomResource(
        f"{name}-scaledobject",
        api_version="keda.sh/v1alpha1",
        kind="ScaledObject",
        metadata=meta,
        spec=scaled_object_spec(a, target, low, high, prometheus_url, lambda n: units(d, n)),
        opts=child,
    )


def scaled_object_spec(
    a: autoscaling.Autoscaling, target: str, low: int, high: int, prometheus_url: str, size=lambda replicas: replicas
) -> dict:
    """The ScaledObject spec (KEDA docs, "ScaledObject specification", "Prometheus" and "Cron" scalers, v2.16).

    Prometheus: `threshold` is the target value per replica (KEDA divides the query's value by it);
    cron: `desiredReplicas` from `start` to `end`. `cooldownPeriod` is the wait after the last active
    trigger before scaling to zero: scale_to_zero_after. `size` turns replicas into pods.
    """
    if a.metric == "schedule":
        triggers = [
            {
                "type": "cron",
                "metadata": {
                    "timezone": w.timezone,
                    "start": w.start,
                    "end": w.end,
                    "desiredReplicas": str(size(w.replicas)),
                },
            }
            for w in a.schedule
        ]
    else:
        triggers = [
            {
                "type": "prometheus",
                "metadata": {"serverAddress": prometheus_url, "query": a.query, "threshold": f"{a.target:g}"},
            }
        ]
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "minReplicaCount": low,
        "maxReplicaCount": high,
        "triggers": triggers,
    }
    if a.scale_to_zero_after:
        spec["cooldownPeriod"] = autoscaling.seconds(a.scale_to_zero_after)
    return spec


def aws_scaling(name: str, d: Decision, group: aws.autoscaling.Group, child: pulumi.ResourceOptions) -> list:
    """The group's target-tracking policy, or its scheduled actions for `schedule`."""
    a = d.workload.spec.deploy.autoscaling
    low, high = bounds(d)
    if a.metric == "schedule":
        out = []
        for i, w in enumerate(a.schedule):
            # The window raises the floor to its replicas; its end puts the floor back to min_replicas.
            for when, cron, size in (("start", w.start, units(d, w.replicas)), ("end", w.end, low)):
                out.append(
                    aws.autoscaling.Schedule(
                        f"{name}-window{i}-{when}",
                        autoscaling_group_name=group.name,
                        scheduled_action_name=f"{d.workload.spec.name}-window{i}-{when}",
                        recurrence=cron,
                        time_zone=w.timezone,
                        min_size=size,
                        max_size=high,
                        desired_capacity=size,
                        opts=child,
                    )
                )
        return out
    return [
        aws.autoscaling.Policy(
            f"{name}-target",
            autoscaling_group_name=group.name,
            policy_type="TargetTrackingScaling",
            # A new instance reports ~0% GPU while it loads the model: its metrics join the group's only once
            # the server is up (EC2 Auto Scaling, "instance warmup"), or the average drops and scales back in.
            estimated_instance_warmup=serving.load_seconds(d),
            target_tracking_configuration=aws.autoscaling.PolicyTargetTrackingConfigurationArgs(
                target_value=a.target, customized_metric_specification=aws_metric(d, group.name)
            ),
            opts=child,
        )
    ]


def aws_metric(d: Decision, group_name: pulumi.Input[str]):
    """The CloudWatch metric target tracking holds at `target`.

    gpu_utilization: the agent's per-instance GPU utilization averaged over the group. A query: the
    pushed total divided by the in-service instances, IF(m2 > 0, m1 / m2, m1), so it is per replica
    and, at zero instances, the raw total still scales the group out (CloudWatch metric math IF,
    "Using metric math", read 2026-11-23; target tracking on metric math: AWS what's new 2023-04-25).
    """
    a = d.workload.spec.deploy.autoscaling
    spec = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationArgs
    if a.metric == "gpu_utilization":
        return spec(
            metric_name=CW_GPU_METRIC,
            namespace=serving.CW_GPU_NAMESPACE,
            statistic="Average",
            metric_dimensions=[
                aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricDimensionArgs(
                    name="AutoScalingGroupName", value=group_name
                )
            ],
        )
    m = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricArgs
    stat = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatArgs
    metric = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatMetricArgs
    dim = aws.autoscaling.PolicyTargetTrackingConfigurationCustomizedMetricSpecificationMetricMetricStatMetricDimensionArgs
    return spec(
        metrics=[
            m(
                id="m1",
                return_data=False,
                metric_stat=stat(
                    stat="Average",
                    metric=metric(
                        namespace=CW_NAMESPACE,
                        metric_name=a.metric,
                        dimensions=[dim(name="Workload", value=d.workload.spec.name)],
                    ),
                ),
            ),
            m(
                id="m2",
                return_data=False,
                metric_stat=stat(
                    stat="Average",
                    metric=metric(
                        namespace="AWS/AutoScaling",
                        metric_name="GroupInServiceInstances",
                        dimensions=[dim(name="AutoScalingGroupName", value=group_name)],
                    ),
                ),
            ),
            m(id="e1", expression="IF(m2 > 0, m1 / m2, m1)", label=f"{a.metric} per replica", return_data=True),
        ]
    )


def gcp_autoscaler(
    name: str, d: Decision, group: gcp.compute.InstanceGroupManager, zone: str, child: pulumi.ResourceOptions
) -> gcp.compute.Autoscaler:
    """A zonal Autoscaler for the group (pulumi-gcp compute.Autoscaler; Compute API autoscalers.insert)."""
    a = d.workload.spec.deploy.autoscaling
    low, high = bounds(d)
    P = gcp.compute  # noqa: N806 - the SDK's long argument class names
    metrics, schedules = None, None
    if a.metric == "gpu_utilization":
        metrics = [P.AutoscalerAutoscalingPolicyMetricArgs(name=GCP_GPU_METRIC, target=a.target, type="GAUGE")]
    elif a.metric == "schedule":
        schedules = [
            P.AutoscalerAutoscalingPolicyScalingScheduleArgs(
                name=f"window{i}",
                schedule=w.start,
                duration_sec=w.minutes * 60,
                min_required_replicas=units(d, w.replicas),
                time_zone=w.timezone,
            )
            for i, w in enumerate(a.schedule)
        ]
    else:
        # A per-group metric: the autoscaler runs value / single_instance_assignment instances (GCP docs,
        # "Scaling based on Cloud Monitoring metrics", per-group metrics), and can then scale to zero.
        metrics = [
            P.AutoscalerAutoscalingPolicyMetricArgs(
                name=f"{GCP_CUSTOM_PREFIX}/{a.metric}",
                single_instance_assignment=a.target,
                filter=f'resource.type = "global" AND metric.labels.workload = "{d.workload.spec.name}"',
            )
        ]
    meta = {**tagging.gcp_labels(d), GCP_MAX_REPLICAS: str(d.autoscaling.max_replicas)}
    return P.Autoscaler(
        f"{name}-autoscaler",
        zone=zone,
        target=group.id,
        description="gpusizer " + " ".join(f"{k}={v}" for k, v in sorted(meta.items())),
        autoscaling_policy=P.AutoscalerAutoscalingPolicyArgs(
            min_replicas=low,
            max_replicas=high,
            # The VM's initialization period: the autoscaler ignores a new VM's metric until the server has
            # loaded the model (GCP autoscaler coolDownPeriodSec), as the autohealing initial delay does.
            cooldown_period=serving.load_seconds(d),
            mode="ON",
            metrics=metrics,
            scaling_schedules=schedules,
        ),
        opts=child,
    )
