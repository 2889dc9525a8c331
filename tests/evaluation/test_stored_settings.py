"""A crossfit run's stored settings read back as `CrossfitSettings` (`settings_from_dict`), the
runs stored before a setting was recorded included."""

from __future__ import annotations

from forge_core.evaluation.crossfit import CrossfitSettings
from forge_core.evaluation.fold_decisions import settings_from_dict
from forge_core.routing.conditioning import CostConditioning


def test_settings_read_back_as_stored() -> None:
    settings = CrossfitSettings(lambda_in=0.6, lambda_out=0.6, stage=2, split_seed=1,
                                conditioning=CostConditioning(draws=3))
    assert settings_from_dict(settings.to_dict()) == settings


def test_a_run_stored_before_conditioning_was_recorded_reads_the_default_and_none_stays_none() -> None:
    stored = CrossfitSettings(stage=2).to_dict()
    del stored["conditioning"]
    assert settings_from_dict(stored).conditioning == CostConditioning()
    assert settings_from_dict(stored | {"conditioning": None}).conditioning is None
