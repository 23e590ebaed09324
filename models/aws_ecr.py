"""Amazon ECR as the kubelet and a registry client meet it: private registry hosts and login tokens.

- A private registry is `<account>.dkr.ecr.<region>.amazonaws.com` (`.amazonaws.com.cn` in China), its
  FIPS endpoint `<account>.dkr.ecr-fips.<region>.amazonaws.com`, its dual-stack one
  `<account>.dkr-ecr.<region>.on.aws` (Amazon ECR User Guide, "Amazon ECR private registry" and
  "Amazon ECR endpoints"). Public ECR is `public.ecr.aws`, with no account in the host.
- GetAuthorizationToken returns one token for the caller's registry, valid for 12 hours (ECR API
  Reference, GetAuthorizationToken; external-secrets v2.9.0 config/crds/bases/
  generators.external-secrets.io_ecrauthorizationtokens.yaml repeats it). The token carries the
  caller's identity: every later BatchGetImage or GetDownloadUrlForLayer is allowed or refused by that
  identity's permissions on the repository, so one token pulls only what its role may pull.
"""

from __future__ import annotations

import re

AUTHORIZATION_TOKEN_LIFETIME_SECONDS = 12 * 3600

# The host of any account's private registry, by the three endpoint forms above: RE2, as CEL's `matches`
# reads it, and Python's `re` alike; `[.]` for a dot, so the pattern needs no escaping inside a CEL string.
PRIVATE_REGISTRY_HOST = (
    "^[0-9]{12}[.](dkr[.]ecr|dkr[.]ecr-fips|dkr-ecr)[.][a-z0-9-]+[.](amazonaws[.]com|amazonaws[.]com[.]cn|on[.]aws)$"
)


def in_private_registry(image: str) -> bool:
    """Whether `image` (`<registry>/<repository>[:tag][@digest]`) names a private ECR registry, as the admission
    rule reads it: the first path component is the registry when the reference has a `/`."""
    return "/" in image and re.match(PRIVATE_REGISTRY_HOST, image.split("/", 1)[0]) is not None
