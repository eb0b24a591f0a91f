"""probe's simulator: an offline OpenAI- and Anthropic-compatible LLM server whose personas have a
known, written-down calibration, with fault injection and request counters.

Use ``running_sim()`` (a background thread; yields the base URL), ``sim_process()`` (a child
process), or ``probe sim serve``; ``suite_truth()`` / ``probe sim truth`` state the ground truth.
See docs/simulator.md.
"""

from probe.sim._app import SimApp, SimConfig
from probe.sim._faults import FAULT_KINDS, FaultPlan, FaultSpecError, Latency, parse_faults, parse_latency
from probe.sim._items import ItemState
from probe.sim._knowledge import Knowledge, Resolved
from probe.sim._personas import PERSONAS, Persona, persona_for_model
from probe.sim._server import (
    DEFAULT_PORT,
    SimProcess,
    build_app,
    load_suites,
    root_url,
    running_sim,
    serve,
    sim_process,
    stats_url,
)
from probe.sim._truth import (
    AgreementTruth,
    ItemTruth,
    SourceTruth,
    consistency_truth,
    item_truth,
    suite_truth,
    suite_variant,
)

__all__ = [
    "DEFAULT_PORT",
    "FAULT_KINDS",
    "PERSONAS",
    "AgreementTruth",
    "FaultPlan",
    "FaultSpecError",
    "ItemState",
    "ItemTruth",
    "Knowledge",
    "Latency",
    "Persona",
    "Resolved",
    "SimApp",
    "SimConfig",
    "SimProcess",
    "SourceTruth",
    "build_app",
    "consistency_truth",
    "item_truth",
    "load_suites",
    "parse_faults",
    "parse_latency",
    "persona_for_model",
    "root_url",
    "running_sim",
    "serve",
    "sim_process",
    "stats_url",
    "suite_truth",
    "suite_variant",
]
