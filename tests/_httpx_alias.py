"""Early pytest plugin: make ``import httpx`` resolve to ``httpx2`` before anything imports it.

The official SDKs run on httpx2; respx patches the module imported as ``httpx``. Aliasing first
lets respx see every SDK request. Loaded with ``-p tests._httpx_alias`` (see pyproject.toml).
"""

import httpx2

httpx2.alias_httpx()
