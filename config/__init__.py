"""The stack config: parsed, validated as a whole, and derived once. No Pulumi imports here.

    raw stack config ──> load_platform_config() ──> PlatformConfig (or ConfigError, every problem listed)
"""

from .errors import ConfigError
from .platform import CONFIG_NAMESPACE, SECTIONS, PlatformConfig, load_platform_config

__all__ = ["CONFIG_NAMESPACE", "SECTIONS", "ConfigError", "PlatformConfig", "load_platform_config"]
