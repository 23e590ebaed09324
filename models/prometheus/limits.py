"""A scrape's limits: which value each scrape runs with, and what makes the scrape fail.

prometheus-operator v0.93.0 (the chart's appVersion is v0.93.1) pkg/prometheus/promcfg.go:
- `getLimit`: a monitor's own limit (`sampleLimit`, `labelLimit`, `labelNameLengthLimit`,
  `labelValueLengthLimit`, `targetLimit`, `keepDroppedTargets`) is written to its scrape job, capped at
  the Prometheus resource's `enforced*` counterpart when that is set; a monitor with none writes none,
  and for Prometheus >= 2.45 the job then inherits the global value.
- `appendScrapeLimits` / `appendGlobalLimits`: the global section carries the resource's own default
  (`spec.sampleLimit`, ...) capped at the enforced value, or else the enforced value itself. So an
  `enforced*` field bounds every scrape job Prometheus runs, the chart's and the kubelet's included.
- `getLowerByteSize`: the same for `bodySizeLimit` and `enforcedBodySizeLimit`, compared as base-2 byte
  sizes (alecthomas/units `ParseBase2Bytes`: `KB` and `KiB` are both 1024).

prometheus/prometheus v3 scrape/scrape.go:
- `readResponse`: reads at most `body_size_limit` bytes of the body, after gzip decompression, and
  fails the scrape when it read that many (`n >= bodySizeLimit`); 0 is no limit. Prometheus never holds
  more than the limit of one response.
- `verifyLabelLimits`: after metric relabeling, a sample with more labels than `label_limit` (`__name__`
  counts), a label name longer than `label_name_length_limit` or a value longer than
  `label_value_length_limit` (the metric's name is the value of `__name__`) fails the whole scrape.
- `follow_redirects` (prometheus/common config.HTTPClientConfig) defaults to true: unset, the scrape
  follows the target's 3xx to wherever it points.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# prometheus-operator's ByteSize pattern (crd-podmonitors.yaml `bodySizeLimit`), units as ParseBase2Bytes reads them.
_BYTE_SIZE = re.compile(r"^(?P<number>([0-9]*[.])?[0-9]+)(?P<unit>(K|M|G|T|P|E)i?)?B$")
_POWERS = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def byte_size(value: str) -> int:
    """`4MiB` -> 4194304; `0` is no limit."""
    if value == "0":
        return 0
    match = _BYTE_SIZE.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not a prometheus-operator ByteSize such as '4MiB'")
    unit = (match["unit"] or " ")[0]
    return int(float(match["number"]) * 1024 ** _POWERS.get(unit, 0))


def scrape_limit(own: int | None, enforced: int | None, default: int | None = None) -> int:
    """The limit a monitor's scrape job runs with (0: none), for Prometheus >= 2.45.

    `own` is the monitor's field, `enforced` the Prometheus resource's `enforced*` field, `default` its
    non-enforced global default (`spec.sampleLimit`, ...)."""
    if own:
        return min(own, enforced) if enforced else own
    if default:
        return min(default, enforced) if enforced else default
    return enforced or 0


def body_size_limit(own: str | None, enforced: str | None) -> int:
    """The body size, in bytes, a monitor's scrape job reads at most (0: no limit)."""
    mine = byte_size(own) if own else 0
    cap = byte_size(enforced) if enforced else 0
    if not cap:
        return mine
    return min(mine, cap) if mine else cap


@dataclass(frozen=True)
class Limits:
    """What one scrape job runs with; 0 is no limit."""

    body_bytes: int = 0
    samples: int = 0
    labels: int = 0
    label_name_length: int = 0
    label_value_length: int = 0


def scrape_failure(body_bytes: int, samples: Iterable[Mapping[str, str]], limits: Limits) -> str | None:
    """Why a scrape of a `body_bytes` response whose samples, after relabeling, are `samples` fails; None if it does not."""
    if limits.body_bytes and body_bytes >= limits.body_bytes:
        return "body_size_limit exceeded"
    kept = list(samples)
    if limits.samples and len(kept) > limits.samples:
        return "sample_limit exceeded"
    for labels in kept:
        if limits.labels and len(labels) > limits.labels:
            return "label_limit exceeded"
        for name, value in labels.items():
            if limits.label_name_length and len(name) > limits.label_name_length:
                return "label_name_length_limit exceeded"
            if limits.label_value_length and len(value) > limits.label_value_length:
                return "label_value_length_limit exceeded"
    return None
