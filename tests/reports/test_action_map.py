"""Action map: agreement and per-cluster mixes with exact numbers, deterministic UMAP coordinates,
and the whole map of a trained checkpoint on the synthetic-outcome store."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.reports.action_map import (
    MIN_QUERIES,
    QUESTION_CHARS,
    action_mix,
    cluster_points,
    compute_action_map,
    umap_coordinates,
)
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.features import assemble_features
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights, oracle_actions, oracle_sets, regret
from forge_core.store import Store

HOST = "synthetic-host"


def test_action_mix_rows_are_shares_that_sum_to_one() -> None:
    clusters = np.array([0, 0, 0, 1, 1, 2])
    actions = np.array([0, 0, 2, 1, 1, 5])
    mix = action_mix(clusters, actions, n_clusters=4, n_arms=6)
    assert np.allclose(mix[0], [2 / 3, 0, 1 / 3, 0, 0, 0])
    assert np.array_equal(mix[1], [0, 1, 0, 0, 0, 0]) and np.array_equal(mix[2], [0, 0, 0, 0, 0, 1])
    assert np.array_equal(mix[3], np.zeros(6))  # an empty cluster
    assert np.allclose(mix[:3].sum(axis=1), 1.0)


def test_umap_is_deterministic_for_a_seed_and_caps_its_neighbours() -> None:
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(40, 16)).astype(np.float32)
    first = umap_coordinates(embeddings, seed=0)
    assert first.shape == (40, 2) and np.isfinite(first).all()
    assert np.array_equal(first, umap_coordinates(embeddings, seed=0))
    assert not np.array_equal(first, umap_coordinates(embeddings, seed=1))
    assert umap_coordinates(embeddings[:12], seed=0).shape == (12, 2)  # n_neighbors 30 capped at 11
    with pytest.raises(ValueError, match=f"at least {MIN_QUERIES} queries"):
        umap_coordinates(embeddings[:MIN_QUERIES - 1])


def test_clusters_are_numbered_left_to_right() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[10.0, 0.0], [-10.0, 5.0], [0.0, -5.0]])
    points = np.concatenate([centre + rng.normal(scale=0.3, size=(20, 2)) for centre in centres])
    labels = cluster_points(points, n_clusters=3, seed=0)
    assert list(labels[[0, 20, 40]]) == [2, 0, 1]
    assert all(len(set(labels[i:i + 20])) == 1 for i in (0, 20, 40))
    assert len(set(cluster_points(points[:4], n_clusters=6))) <= 4  # k capped at the number of points


def test_action_map_of_a_trained_checkpoint(trained_store: tuple[Store, str], tmp_path) -> None:
    store, checkpoint_id = trained_store
    action_map = compute_action_map(store, HOST, checkpoint_id, "test", umap_cache=tmp_path)
    table = load_outcome_table(store, HOST, 6)
    test = table.split("test")
    assert action_map.keys == test.keys and action_map.arms == test.arms

    checkpoint = load_checkpoint(store, checkpoint_id)
    features = checkpoint.standardizer.transform(assemble_features(store, HOST, "lite", test.keys))
    import torch

    with torch.no_grad():
        router = checkpoint.router.log_probs(torch.as_tensor(features)).argmax(dim=1).numpy()
    oracle = oracle_actions(test.utility(table.fit_normalizer(), CostWeights(0.10, 0.20)))
    assert np.array_equal(action_map.router_actions, router)
    assert np.array_equal(action_map.oracle_actions, oracle)
    in_set = oracle_sets(test.utility(table.fit_normalizer(), CostWeights(0.10, 0.20)))
    rows = np.arange(len(test))
    assert action_map.agreement == pytest.approx(float(in_set[rows, router].mean()), abs=0)  # a tie agrees
    assert action_map.agreement >= float((router == oracle).mean())

    assert len(list(tmp_path.glob("umap-*.npy"))) == len(list(tmp_path.glob("clusters-*.npy"))) == 1  # kept
    again = compute_action_map(store, HOST, checkpoint_id, "test")  # no cache: computed afresh, the same map
    assert np.array_equal(action_map.coordinates, again.coordinates)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("forge_core.reports.action_map.umap_coordinates", lambda *a, **k: pytest.fail("recomputed"))
        patch.setattr("forge_core.reports.action_map.cluster_points", lambda *a, **k: pytest.fail("recomputed"))
        cached = compute_action_map(store, HOST, checkpoint_id, "test", umap_cache=tmp_path)
    assert np.array_equal(cached.coordinates, action_map.coordinates)
    assert np.array_equal(cached.clusters, action_map.clusters)

    utility = test.utility(table.fit_normalizer(), CostWeights(0.10, 0.20))
    best = int(np.argmax(utility.mean(axis=0)))
    agreements = action_map.agreements()
    assert agreements["router"] == action_map.agreement
    assert agreements["Always-Direct (direct:no_think)"] == pytest.approx(float(in_set[:, 0].mean()), abs=0)
    assert agreements[f"best fixed arm ({test.arms[best]})"] == pytest.approx(float(in_set[:, best].mean()), abs=0)
    regrets = action_map.regrets()
    assert regrets["router"] == pytest.approx(float(regret(utility, router).mean()))
    best_regret = float((utility.max(axis=1) - utility[:, best]).mean())
    assert regrets[f"best fixed arm ({test.arms[best]})"] == pytest.approx(best_regret)
    outcomes = action_map.query_outcomes(0)
    assert list(outcomes["arm"]) == list(test.arms) and outcomes["router probability"].sum() == pytest.approx(1.0)
    assert outcomes["F1"].tolist() == test.f1[0].tolist() and outcomes["utility"].tolist() == utility[0].tolist()
    assert outcomes.loc[outcomes["router"], "arm"].tolist() == [test.arms[router[0]]]
    implied = outcomes["router's implied utility vs its pick"]
    assert implied.max() <= 1e-12 and implied[outcomes["router"]].tolist() == [0.0]  # the pick is the most probable
    tied_best = [arm for arm, in_oracle_set in zip(test.arms, in_set[0]) if in_oracle_set]
    assert outcomes.loc[outcomes["oracle"], "arm"].tolist() == tied_best
    assert np.array_equal(action_map.clusters, again.clusters) and action_map.n_clusters == 6

    mix = action_map.cluster_mix()
    assert np.allclose(mix.groupby(["cluster", "policy"])["share"].sum(), 1.0)
    summary = action_map.cluster_summary()
    assert summary["queries"].sum() == len(test)
    assert (summary["regret"] >= 0).all()
    members = action_map.clusters == 0
    rows = np.flatnonzero(members)
    assert summary["router tokens in"].iloc[0] == pytest.approx(test.tokens_in[rows, router[rows]].mean())
    assert summary["oracle tokens out"].iloc[0] == pytest.approx(
        test.tokens_out[rows, action_map.oracle_actions[rows]].mean())
    assert action_map.mean_tokens(router) == pytest.approx(
        (test.tokens_in[np.arange(len(test)), router].mean(), test.tokens_out[np.arange(len(test)), router].mean()))
    points = action_map.points()
    first = store.examples(test.keys[0][0], [test.keys[0][1]])[0]
    cut = first.question if len(first.question) <= QUESTION_CHARS else first.question[:QUESTION_CHARS - 1] + "…"
    assert points["question"][0] == cut
    raw = test.arms.index("raw:no_think")
    assert points["raw:no_think"][0] == (f"F1 {test.f1[0, raw]:.2f}, {int(test.tokens_in[0, raw]):,} tokens in / "
                                         f"{int(test.tokens_out[0, raw]):,} out")
    assert set(test.arms) <= set(points.columns)
    assert points["agree"].mean() == action_map.agreement
    assert np.allclose(points["regret"], regret(utility, router))
    assert (points.loc[points["agree"], "regret"] < 1e-9).all()
    assert set(points.loc[points["agree"], "agreement"]) <= {"agree"}
    assert list(points["index"]) == list(range(len(test)))


def test_action_map_refuses_unknown_splits(trained_store: tuple[Store, str]) -> None:
    store, checkpoint_id = trained_store
    with pytest.raises(ValueError, match="split is one of"):
        compute_action_map(store, HOST, checkpoint_id, "validation")
