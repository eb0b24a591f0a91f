"""build_report: groups, status counting, pooled variants, nulls, the JSON shape."""

from __future__ import annotations

import json

import numpy as np
import pytest

from probe.analysis import POOLED, build_report, calibration_metrics
from probe.record import Record, Sampling
from probe.storage import RunInfo

from .conftest import MODEL, make_record, overconfident_records, run_info

ISSUE_FIELDS = {"model", "source", "variant", "n", "n_ok", "status_counts", "accuracy", "accuracy_ci", "ece",
                "ece_ci", "ece_mass", "signed_ece", "mce", "ace", "rms_ce", "brier", "nll", "auroc", "auroc_ci",
                "selective_accuracy_50", "aurc", "bins_width", "bins_mass"}
BIN_FIELDS = {"lo", "hi", "n", "mean_confidence", "accuracy", "accuracy_ci", "sparse"}


def test_groups_per_variant_and_pooled_with_status_counts(overconfident_run: tuple[RunInfo, list[Record]]) -> None:
    info, records = overconfident_run
    rep = build_report(info, records, resamples=200)
    assert [(g.source, g.variant) for g in rep.groups] == [("token", "expert"), ("token", "plain"),
                                                         ("token", POOLED)]
    expert, plain, pooled = rep.groups
    for g, variant in ((expert, "expert"), (plain, "plain")):
        mine = [r for r in records if r.variant == variant]
        errors = sum(r.status != "ok" for r in mine)
        assert g.n == len(mine) and g.n_ok == len(mine) - errors
        assert g.status_counts == {"error:rate_limit": errors, "ok": len(mine) - errors}
        ok = [r for r in mine if r.status == "ok"]
        m = calibration_metrics([r.confidence for r in ok], [r.correct for r in ok])  # type: ignore[misc]
        assert g.ece == g.ece_width == m.width.ece and g.ece_mass == m.mass.ece and g.auroc == m.auroc
        assert g.accuracy_ci is not None and g.accuracy_ci[0] <= g.accuracy <= g.accuracy_ci[1]  # type: ignore[operator]
    assert pooled.pooled and pooled.n == expert.n + plain.n and pooled.n_ok == expert.n_ok + plain.n_ok
    assert pooled.status_counts["error:rate_limit"] == sum(r.status != "ok" for r in records)
    assert pooled.items == len({r.item_id for r in records if r.status == "ok"})
    assert rep.run_id == info.run_id and rep.suites == ["synthetic"] and rep.bins == 10


def test_errors_are_excluded_never_graded_wrong() -> None:
    recs = [make_record("r", 0, 0.9, True), make_record("r", 1, 0.8, True),
            make_record("r", 2, None, None, status="error:timeout"),
            make_record("r", 3, None, None, status="parse_error"),
            make_record("r", 4, None, None, status="unavailable:provider_has_none")]
    g = build_report(run_info("r"), recs, resamples=50).group(MODEL, "token", "plain")
    assert (g.n, g.n_ok) == (5, 2)
    assert g.accuracy == 1.0  # the three failures did not count as wrong answers
    assert g.auroc is None and g.auroc_ci is None  # all scored answers right: undefined, not made up
    assert g.status_counts == {"error:timeout": 1, "ok": 2, "parse_error": 1, "unavailable:provider_has_none": 1}


def test_group_without_scored_records_has_nulls() -> None:
    recs = [make_record("r", i, None, None, status="unavailable:model_refused", source="ptrue") for i in range(3)]
    g = build_report(run_info("r"), recs).group(MODEL, "ptrue", "plain")
    assert g.n == 3 and g.n_ok == 0
    assert g.accuracy is None and g.ece is None and g.ece_ci is None and g.brier is None and g.auroc is None
    assert g.bins_width == [] and g.bins_mass == []


def test_verbal_forms_are_separate_groups_and_sources_are_ordered() -> None:
    recs = [make_record("r", i, 0.8, i % 2 == 0, variant="plain:numeric", source="verbal") for i in range(4)]
    recs += [make_record("r", i, 0.6, i % 3 == 0, variant="plain:linguistic", source="verbal") for i in range(4)]
    recs += [make_record("r", i, 0.7, True, source="token") for i in range(2)]
    rep = build_report(run_info("r"), recs, resamples=50)
    assert [(g.source, g.variant) for g in rep.groups] == [
        ("token", "plain"), ("token", POOLED),
        ("verbal", "plain:linguistic"), ("verbal", "plain:numeric"), ("verbal", POOLED)]


def test_ok_records_without_confidence_are_counted_and_warned() -> None:
    recs = [make_record("r", 0, 0.9, True), make_record("r", 1, None, True)]
    rep = build_report(run_info("r"), recs, resamples=50)
    g = rep.group(MODEL, "token", "plain")
    assert (g.n, g.n_ok, g.n_ok_unscored) == (2, 1, 1)
    assert any("lack a confidence" in w for w in rep.warnings)


def test_mixed_sampling_is_warned() -> None:
    recs = [make_record("r", 0, 0.9, True, sampling=Sampling(temperature=0.0)),
            make_record("r", 1, 0.8, False, sampling=Sampling(temperature=1.0))]
    rep = build_report(run_info("r"), recs, resamples=50)
    assert any("sampling" in w for w in rep.warnings)


def test_mass_binning_drives_the_primary_errors(overconfident_run: tuple[RunInfo, list[Record]]) -> None:
    info, records = overconfident_run
    width = build_report(info, records, resamples=100, bins=15).group(MODEL, "token")
    mass = build_report(info, records, resamples=100, bins=15, binning="mass").group(MODEL, "token")
    assert mass.ece == mass.ece_mass == width.ece_mass and width.ece == width.ece_width == mass.ece_width
    assert mass.ece_ci == mass.ece_mass_ci and width.ece_ci == width.ece_width_ci
    assert len(mass.bins_width) == len(mass.bins_mass) == 15
    assert mass.mce != width.mce


def test_json_has_the_issue_shape_and_no_nan(overconfident_run: tuple[RunInfo, list[Record]]) -> None:
    info, records = overconfident_run
    records = [*records, *overconfident_records(info.run_id, 5, seed=3)]
    rep = build_report(info, records, resamples=100)
    data = json.loads(json.dumps(rep.model_dump(mode="json"), allow_nan=False))
    assert {"run_id", "suites", "bins", "groups"} <= data.keys()
    g = data["groups"][0]
    assert g.keys() >= ISSUE_FIELDS
    assert BIN_FIELDS == set(g["bins_width"][0]) == set(g["bins_mass"][0])
    assert isinstance(g["accuracy_ci"], list) and len(g["accuracy_ci"]) == 2
    assert "nll" in data["definitions"] and "1e-12" in data["definitions"]["nll"]


def test_bootstrap_streams_are_seeded_per_group(overconfident_run: tuple[RunInfo, list[Record]]) -> None:
    info, records = overconfident_run
    a = build_report(info, records, resamples=100, seed=1)
    b = build_report(info, records, resamples=100, seed=1)
    c = build_report(info, records, resamples=100, seed=2)
    assert a.groups[0].ece_ci == b.groups[0].ece_ci != c.groups[0].ece_ci


def test_records_of_another_run_are_refused() -> None:
    with pytest.raises(ValueError, match="other runs"):
        build_report(run_info("r"), [make_record("x", 0, 0.5, True)])


def test_empty_run() -> None:
    rep = build_report(run_info("r"), [])
    assert rep.groups == [] and rep.warnings == ["the run has no records yet"]
    assert np.isfinite(rep.level)
