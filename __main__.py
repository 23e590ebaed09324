"""gpu-platform: load the validated stack config, build the platform, export what operators need."""

import pulumi

from components import stack_config
from components.lib.account import account_zone_ids
from components.platform import GpuPlatform
from config import ConfigError, load_platform_config
from config.placeholders import placeholder_problems
from config.regions import eks_zone_problems

try:
    platform_config = load_platform_config(stack_config.read_stack_config())
except ConfigError as err:
    # One line per mistake, no traceback: `pulumi up` prints a RunError's message as it is.
    raise pulumi.RunError(f"invalid stack config ({len(err.problems)} problems):\n{err}") from None

# The shipped stacks' example snapshot and bucket render offline; a real deploy refuses them before
# anything is created, since each would fail only late into `pulumi up` (config/placeholders.py).
if not stack_config.runs_under_mocks():
    refused = placeholder_problems(platform_config)
    if refused:
        raise pulumi.RunError(f"example values a real deploy cannot use ({len(refused)}):\n" + "\n".join(refused))

# EKS refuses some zones by ID, and zone names map to IDs per account: asked of the account, before anything exists.
refused_zones = eks_zone_problems(
    platform_config.region, platform_config.network.availability_zones, account_zone_ids()
)
if refused_zones:
    raise pulumi.RunError(f"zones EKS refuses in this account ({len(refused_zones)}):\n" + "\n".join(refused_zones))

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
# A fleet manager reads its workers' endpoint and CA through a StackReference (components/fleet.py).
if platform_config.fleet.role == "worker":
    pulumi.export("clusterCertificateAuthority", platform.cluster.certificate_authority)
