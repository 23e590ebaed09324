"""EC2's vCPU quotas: which Service Quotas quota an instance's vCPUs count against.

Amazon EC2 User Guide, "On-Demand Instance quotas" and "Spot Instance quotas": running On-Demand instances
count their vCPUs against one quota per group of families ("Running On-Demand G and VT instances",
"Running On-Demand P instances", ...), and running or requested Spot Instances against the Spot quota of
theirs ("All G and VT Spot Instance Requests", "All P Spot Instance Requests"), per account and Region.
Older versions of the guide split the P Spot quota (P4, P3 and P2 apart from P5); it is one quota now.
The codes are the quotas' identifiers in Service Quotas (service code `ec2`), as
`aws service-quotas list-service-quotas --service-code ec2` lists them, and as public quota checkers
(awslabs' aws-quota-checker among them) use them.
"""

from __future__ import annotations

from dataclasses import dataclass

SERVICE_CODE = "ec2"


@dataclass(frozen=True)
class VcpuQuota:
    code: str
    name: str


# (family group, purchase option) -> quota. A family group is the letters an instance family starts with.
ON_DEMAND, SPOT = "on-demand", "spot"
QUOTAS: dict[tuple[str, str], VcpuQuota] = {
    ("G", ON_DEMAND): VcpuQuota("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("P", ON_DEMAND): VcpuQuota("L-417A185B", "Running On-Demand P instances"),
    ("G", SPOT): VcpuQuota("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("P", SPOT): VcpuQuota("L-7212CCBC", "All P Spot Instance Requests"),
}


def family_group(instance_type: str) -> str:
    """`g6e.12xlarge` -> `G` (G and VT share quotas), `p5.48xlarge` -> `P`."""
    family = instance_type.split(".")[0]
    if family.startswith(("g", "vt")):
        return "G"
    if family.startswith("p"):
        return "P"
    raise ValueError(f"{instance_type}: no GPU vCPU quota is modelled for its family {family}")


def vcpu_quota(instance_type: str, purchase_option: str) -> VcpuQuota:
    """The quota `instance_type`'s vCPUs count against when bought `purchase_option` (on-demand or spot)."""
    return QUOTAS[(family_group(instance_type), purchase_option)]
