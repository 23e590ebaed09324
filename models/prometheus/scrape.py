"""One scraped sample's labels as Prometheus stores them: target labels, then metric relabeling.

prometheus/prometheus v3 scrape/scrape.go `mutateSampleLabels`: with `honor_labels: false` a label the
target exposes that the scrape also sets (job, instance, namespace, pod, ...) is kept as
`exported_<name>` and the scrape's value wins; then `metric_relabel_configs` run
(model/relabel/relabel.go `Process`), whose regexes are anchored at both ends. A sample relabeling
drops is not stored; `sample_limit` and `label_limit` count what is left.
Only the actions the platform writes are modelled (`keep`, `drop`, `labelkeep`, `labeldrop`); any other
raises, so an unmodelled rule never passes silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any


def scraped(exposed: Mapping[str, str], target: Mapping[str, str], honor_labels: bool = False) -> dict[str, str]:
    """The sample's labels after the scrape attaches the target's."""
    labels = dict(exposed)
    for name, value in target.items():
        if name in labels and not honor_labels:
            labels[f"exported_{name}"] = labels.pop(name)
        if honor_labels and name in labels:
            continue
        labels[name] = value
    return labels


def relabel(labels: Mapping[str, str], configs: Sequence[Mapping[str, Any]]) -> dict[str, str] | None:
    """`labels` after `configs` (prometheus-operator's camelCase fields), or None when a rule drops the sample."""
    result = dict(labels)
    for config in configs:
        action = config.get("action", "replace").lower()
        pattern = re.compile(f"^(?:{config.get('regex', '(.*)')})$")
        if action in ("keep", "drop"):
            value = config.get("separator", ";").join(result.get(s, "") for s in config.get("sourceLabels", ()))
            if bool(pattern.match(value)) != (action == "keep"):
                return None
        elif action in ("labelkeep", "labeldrop"):
            result = {k: v for k, v in result.items() if bool(pattern.match(k)) == (action == "labelkeep")}
        else:
            raise ValueError(f"relabel action {action} is not modelled")
    return result
