"""Training on a proxy reward: recorded in the lineage, while gold keeps checkpoint ids unchanged."""

from __future__ import annotations

import pytest

from forge_core.errors import InvalidInput, MissingStep
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config
from forge_core.training.trainer import train_router

from support.stores import copy_store


def test_gold_training_keeps_the_lineage_and_id_of_before(trained_store, tmp_path) -> None:
    shared, checkpoint_id = trained_store
    store = copy_store(shared, tmp_path)
    lineage = load_checkpoint(store, checkpoint_id).lineage
    assert "reward" not in lineage and "stage2_reward" not in lineage
    again = train_router(store, TrainRequest(host="synthetic-host", variant="lite", reward="gold",
                                             stage1=Stage1Config(max_epochs=5)))
    assert again == checkpoint_id


def test_consensus_training_records_its_reward(trained_store, tmp_path) -> None:
    shared, gold_id = trained_store
    store = copy_store(shared, tmp_path)
    request = TrainRequest(host="synthetic-host", variant="lite", reward="consensus", stage1=Stage1Config(max_epochs=5))
    request.check(store)
    checkpoint_id = train_router(store, request)
    assert checkpoint_id != gold_id
    checkpoint = load_checkpoint(store, checkpoint_id)
    assert checkpoint.lineage["reward"] == "consensus"
    # its dev metric is the proxy's, never reported as F1
    assert "dev_f1" not in checkpoint.record["metrics"]
    assert 0.0 <= checkpoint.record["metrics"]["dev_proxy_reward"] <= 1.0
    assert "dev_f1" in load_checkpoint(store, gold_id).record["metrics"]


def test_proxy_rewards_are_refused_where_they_cannot_be_used(trained_store, tmp_path) -> None:
    store = copy_store(trained_store[0], tmp_path)
    with pytest.raises(MissingStep, match="forge rewards judge"):
        TrainRequest(host="synthetic-host", variant="lite", reward="judge").check(store)
    with pytest.raises(InvalidInput):
        TrainRequest(reward="oracle")
    with pytest.raises(InvalidInput):
        TrainRequest(stage=2, rewards="live", stage2_reward="consensus")
