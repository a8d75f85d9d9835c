"""Configuration: the config file's schema and its loading.

`root.py` is the root model (`Config`) with its cross-section checks and the
loader that turns YAML into a `Config` or a `ConfigError` naming the file and line;
`sections.py` holds the sections the router owns (store, replay, world model,
shadow, HTTP, redaction, service, sessions, safety, rehearsal, learned);
`upstream_guard.py` the upstream guard's limits. The
channels' own options live with their backends (`backends.shell.options`,
`backends.browser.options`, `backends.mcp.servers`); this package composes them.

May import: `calls`, `backends` (option types), `policies` (rule parsing),
`shadow` (HTTP canonical forms), `records` (store URLs, secret patterns). This
package's names are the public config API (`simroute.load_config` re-exports them).
"""

from backends.browser.options import BrowserConfig, BrowserLimits
from backends.mcp.servers import RemoteServer, ServerSpec, StdioServer
from backends.options import Strict
from backends.shell.options import ShellConfig, ShellLimits
from router.config.learned import LearnedConfig
from router.config.root import DEFAULT_CONFIG_NAME, Config, ConfigError, load_config, parse_config
from router.config.safety import RehearsalConfig, SafetyConfig
from router.config.sections import (
    HttpConfig,
    NoiseConfig,
    RedactionConfig,
    ReplayConfig,
    ServiceConfig,
    SessionsConfig,
    ShadowConfig,
    StoreConfig,
)
from router.config.upstream_guard import GuardLimits, UpstreamGuardConfig
from router.config.world_model import WorldModelConfig
from router.config.world_state import WorldStateConfig

__all__ = [
    "DEFAULT_CONFIG_NAME",
    "BrowserConfig",
    "BrowserLimits",
    "Config",
    "ConfigError",
    "GuardLimits",
    "HttpConfig",
    "LearnedConfig",
    "NoiseConfig",
    "RedactionConfig",
    "RehearsalConfig",
    "RemoteServer",
    "ReplayConfig",
    "SafetyConfig",
    "ServerSpec",
    "ServiceConfig",
    "SessionsConfig",
    "ShadowConfig",
    "ShellConfig",
    "ShellLimits",
    "StdioServer",
    "StoreConfig",
    "Strict",
    "UpstreamGuardConfig",
    "WorldModelConfig",
    "WorldStateConfig",
    "load_config",
    "parse_config",
]
