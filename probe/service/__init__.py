"""probe as a service: the HTTP API (``app``), run workers (``runtime``), persistent cron schedules
(``scheduler``), drift alerts (``alerts``) and the leases that keep several processes on one
database from doing the same work twice (``leases``).

Submodules are imported directly (``from probe.service.scheduler import ...``) so that the CLI's
``probe schedule`` does not pay for importing the web stack.
"""
