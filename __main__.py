"""gpu-platform: load the validated stack config, build the platform, export what operators need."""

import pulumi

from components.platform import GpuPlatform
from components.stack_config import read_stack_config
from config import ConfigError, load_platform_config

try:
    platform_config = load_platform_config(read_stack_config())
except ConfigError as err:
    # One line per mistake, no traceback: `pulumi up` prints a RunError's message as it is.
    raise pulumi.RunError(f"invalid stack config ({len(err.problems)} problems):\n{err}") from None

platform = GpuPlatform(platform_config)

pulumi.export("clusterName", platform.cluster.name)
pulumi.export("clusterEndpoint", platform.cluster.endpoint)
pulumi.export("oidcIssuer", platform.cluster.oidc_issuer)
pulumi.export("kubeconfig", platform.cluster.kubeconfig)
# The principal EKS made the bootstrap admin: what `gpu-platform:cluster.creator` is set to after the first deploy.
pulumi.export("clusterCreator", platform.cluster.creator)
pulumi.export("vpcId", platform.network.vpc_id)
pulumi.export("publicSubnetIds", platform.network.public_subnet_ids)
pulumi.export("privateSubnetIds", platform.network.private_subnet_ids)
pulumi.export("nodeSecurityGroupId", platform.cluster.security_group_id)
