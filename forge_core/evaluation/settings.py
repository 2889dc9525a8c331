"""The protocols' knobs, torch-free: the defaults the evaluation requests (`crossfit`, `calibration`,
`proxy_audit`, `fresh_online`) share with the `forge` command line, which reads them from here
without importing the protocols (they import torch): each default is written once.
"""

from __future__ import annotations

CROSSFIT_FOLDS = 5  # folds of a crossfit (stratified by benchmark): crossfit runs, calibration, the reward audit
CROSSFIT_STAGE2_STEPS = 1000  # Stage-2 steps per fold: 5 folds x 3 routers stay minutes, not hours
CALIBRATION_RATIO = 2.0  # lambda_out / lambda_in along the ray calibration searches
CALIBRATION_VARIANT = "lite"  # the calibrated conditioned router's features: Lite needs no probe call per query
DEFAULT_PER_BENCHMARK = 10  # Fresh Online's queries per benchmark: every call is a real one, so keep runs short
