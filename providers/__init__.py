"""Provider adapters: one module per API family, pure converters beside a thin IO class.

Public surface (everything else is an implementation module):
``create_provider``, ``Provider``, ``Capabilities``, ``known_providers``, ``ProviderInfo``,
``RetryPolicy``, ``call_with_retry``, ``AdaptiveLimiter``, ``LimiterPool``, ``CapabilityReport``,
``probe_capabilities``.
"""

from providers.base import Capabilities, Provider
from providers.capabilities import CapabilityReport, probe_capabilities
from providers.limits import AdaptiveLimiter, LimiterPool
from providers.registry import ProviderInfo, create_provider, known_providers
from providers.retry import RetryPolicy, call_with_retry

__all__ = [
    "AdaptiveLimiter",
    "Capabilities",
    "CapabilityReport",
    "LimiterPool",
    "Provider",
    "ProviderInfo",
    "RetryPolicy",
    "call_with_retry",
    "create_provider",
    "known_providers",
    "probe_capabilities",
]
