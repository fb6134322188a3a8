"""The gpusizer policy pack: `pulumi preview --policy-pack policies`. Builds the pack, nothing else."""

import os

from pulumi_policy import EnforcementLevel, PolicyPack

from gpusizer.catalog import paths
from gpusizer.policies import pack

# The pack judges with the catalog it ships (its dated snapshot): the programs it judges can write the refresh
# cache (gpusizer catalog refresh, or the cache module), so it never reads it.
os.environ[paths.CACHE_SWITCH] = "off"

PolicyPack(name=pack.NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=pack.policies())
