"""The gpusizer policy pack: `pulumi preview --policy-pack policies`. Builds the pack, nothing else."""

from pulumi_policy import EnforcementLevel, PolicyPack

from gpusizer.policies import pack

PolicyPack(name=pack.NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=pack.policies())
