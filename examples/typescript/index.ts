// gpusizer from TypeScript: plan a 70B service first, and provision it only if it fits the budget;
// an 8B chat service is provisioned either way. `pulumi package add ../../provider` generates the
// SDK imported here (README.md beside this file).
import * as pulumi from "@pulumi/pulumi";
import * as gpusizer from "@pulumi/gpusizer";

const config = new pulumi.Config();
const budget = config.getNumber("maxMonthlyUsd") ?? 20000;

const chat = new gpusizer.GpuWorkload("ts-chat", {
    spec: {
        name: "ts-chat",
        model: { name: "llama-3.1-8b" },
        precision: "bf16",
        inference: { contextLength: 4096, batchSize: 4 },
        placement: { providers: ["aws"], regions: ["us-east-1"], purchase: "any" },
    },
    deploy: { capacityFailover: true, failoverTypes: 3 },
    stack: { awsRegion: "us-east-1" },
});

export const chatInstanceType = chat.instanceType;
export const chatGpu = pulumi.interpolate`${chat.gpuCount} x ${chat.gpu}`;
export const chatMonthlyUsd = chat.monthlyUsd;
export const chatDecision = chat.decisionJson.apply(text => JSON.parse(text).choice);

// The plan function decides nothing by itself: the program reads it and chooses. (This literal has no
// enum field, so one declaration fits both the function's and the component's spec types.)
const bigSpec = {
    name: "ts-70b",
    model: { name: "llama-3.1-70b" },
    inference: { contextLength: 8192, batchSize: 8 },
    placement: { regions: ["us-east-1"] },
};

export const big = gpusizer.plan({ spec: bigSpec }).then(plan => {
    if (!plan.feasible || (plan.monthlyUsd ?? Infinity) > budget) {
        return { deployed: false, why: plan.feasible ? `${plan.monthlyUsd} $/month is over ${budget}` : "infeasible" };
    }
    const workload = new gpusizer.GpuWorkload("ts-70b", { spec: bigSpec, stack: { awsRegion: "us-east-1" } });
    return { deployed: true, instanceType: plan.instanceType, monthlyUsd: plan.monthlyUsd, urn: workload.urn };
});
