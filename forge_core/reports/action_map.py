"""Action map: where a router sends queries in question-embedding space, against the oracle.

The map is a 2-D UMAP of the question embeddings the router reads (the checkpoint's embedder,
the raw embedding block of its features): n_neighbors 30 (capped below the number of queries),
min_dist 0.3, cosine metric, fixed random_state (so the same queries give the same map).

Each query carries the router's argmax action and the oracle's (the per-query utility
maximizer under the checkpoint's lambda_in and lambda_out, costs normalized by the host's train
maxima as in the evaluation; TIE_RULE says which arm of the oracle set is drawn). Agreement
counts the router's arm in the query's oracle set (every arm within 1e-9 of the best utility), so a tie
decides nothing; regret is
the mean of the best utility minus the chosen arm's. Both are shown beside two references at the
same weights: Always-Direct and the best fixed arm (the arm of highest mean utility on the map's
queries). Clusters are KMeans (k = 6, 10 restarts, fixed seed) on the 2-D
map coordinates, so a cluster is a region one can see on the map; they are numbered from left
to right by centroid. The per-cluster action mix is the share of the cluster's queries each
policy sends to each arm (every row sums to 1).
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core.arms import DIRECT_NO_THINK
from forge_core.data.catalog import check_benchmarks
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.file_cache import cached_file
from forge_core.evidence.retrievers import retriever_config_for_hash, retriever_option
from forge_core.policies.context import EvalContext
from forge_core.policies.routers import RouterPolicy
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.confidence import TAU, Confidence, checkpoint_tau, confidence
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights, oracle_sets, regret
from forge_core.routing.utility import oracle_actions as utility_oracle_actions
from forge_core.store import Store

log = logging.getLogger(__name__)

UMAP_NEIGHBORS = 30  # neighbours of the UMAP graph (capped at n - 1)
UMAP_MIN_DIST = 0.3  # how tightly UMAP packs points
UMAP_METRIC = "cosine"  # distance between (normalized) question embeddings
N_CLUSTERS = 6  # KMeans clusters on the 2-D map (capped at the number of queries)
MIN_QUERIES = 10  # fewer queries make no meaningful map
SPLITS = ("test", "dev", "train", "all")
QUESTION_CHARS = 160  # questions longer than this are cut in a point's tooltip
TIE_RULE = ("The oracle drawn on the map is the lowest action index among the tied best arms (direct before "
            "summary before raw, no_think before cot); agreement counts any arm of the tied set, so a tie "
            "(e.g. every arm scoring F1 0) agrees with every policy and decides nothing.")


CLUSTER_SUMMARY_COLUMNS = ("cluster", "queries", "agreement", "regret", "router's top arm", "oracle's top arm",
                           "router tokens in", "router tokens out", "oracle tokens in", "oracle tokens out")


@dataclass(frozen=True)
class ActionMap:
    """Per query: map coordinates, router and oracle actions, cluster and every arm's outcome."""

    checkpoint_id: str
    host: str
    split: str
    arms: tuple[str, ...]  # arm names in action-index order
    keys: tuple[tuple[str, str], ...]  # (benchmark, example_id)
    questions: tuple[str, ...]
    coordinates: np.ndarray  # [n, 2] UMAP coordinates
    clusters: np.ndarray  # [n] cluster of each query, 0..k-1 from left to right
    probabilities: np.ndarray  # [n, K] the router's action distribution
    utility: np.ndarray  # [n, K] every arm's utility under the checkpoint's weights
    f1: np.ndarray  # [n, K] every arm's F1
    tokens_in: np.ndarray  # [n, K]
    tokens_out: np.ndarray  # [n, K]
    weights: CostWeights  # the weights it is drawn at (`map_weights`)
    retriever_hash: str = ""  # the evidence of its Summary and Raw outcomes: the checkpoint's ("": the default BM25)
    tau: float = TAU  # the router's Boltzmann temperature (its lineage's): tau * log-probability gaps are utility

    @property
    def router_actions(self) -> np.ndarray:
        """[n] the checkpoint's argmax action."""
        return self.probabilities.argmax(axis=1)

    @property
    def oracle_actions(self) -> np.ndarray:
        """[n] the utility oracle's action (`TIE_RULE`)."""
        return utility_oracle_actions(self.utility)

    @property
    def oracle_set(self) -> np.ndarray:
        """[n, K] whether each arm is one of the query's best (`oracle_sets`)."""
        return oracle_sets(self.utility)

    @property
    def router_agrees(self) -> np.ndarray:
        """[n] whether the router's arm is in the query's oracle set."""
        return self.oracle_set[np.arange(len(self.keys)), self.router_actions]

    @property
    def agreement(self) -> float:
        """Share of queries where the router's arm is in the oracle set."""
        return float(self.router_agrees.mean()) if len(self.keys) else 0.0

    @property
    def best_fixed_arm(self) -> str:
        """The arm of highest mean utility on the map's queries (ties: the lowest index)."""
        return self.arms[int(np.argmax(self.utility.mean(axis=0)))]

    def fixed_arm_agreement(self, arm: str) -> float:
        """Share of queries whose oracle set holds `arm`: the oracle agreement of always answering with it."""
        return float(self.oracle_set[:, self.arms.index(arm)].mean()) if len(self.keys) else 0.0

    def _references(self) -> dict[str, np.ndarray]:
        """[n] actions of the router, Always-Direct and the best fixed arm, by display name."""
        n = len(self.keys)
        return {"router": self.router_actions,
                f"Always-Direct ({DIRECT_NO_THINK})": np.full(n, self.arms.index(DIRECT_NO_THINK)),
                f"best fixed arm ({self.best_fixed_arm})": np.full(n, self.arms.index(self.best_fixed_arm))}

    def agreements(self) -> dict[str, float]:
        """Oracle-set agreement of the router, of Always-Direct and of the best fixed arm (same weights)."""
        in_set = self.oracle_set
        return {name: float(in_set[np.arange(len(actions)), actions].mean()) if len(actions) else 0.0
                for name, actions in self._references().items()}

    def regrets(self) -> dict[str, float]:
        """Mean regret (best utility minus the chosen arm's) of the router, Always-Direct and the best
        fixed arm, same weights and names as `agreements`."""
        return {name: float(regret(self.utility, actions).mean()) if len(actions) else 0.0
                for name, actions in self._references().items()}

    def confidence(self, index: int) -> Confidence:
        """The router's margin in utility units on one query (`forge_core.routing.confidence`)."""
        probabilities = dict(zip(self.arms, map(float, self.probabilities[index])))
        return confidence(probabilities, self.arms[self.router_actions[index]], self.tau)

    def query_outcomes(self, index: int) -> pd.DataFrame:
        """One query's row per arm: F1, tokens in and out, utility, the router's probability and the
        utility it implies relative to its pick (tau * log-probability difference), and whether the
        router chose it and whether it is in the oracle set."""
        implied = self.confidence(index).implied_utility
        return pd.DataFrame({
            "arm": list(self.arms), "F1": self.f1[index], "tokens in": self.tokens_in[index].astype(int),
            "tokens out": self.tokens_out[index].astype(int), "utility": self.utility[index],
            "router probability": self.probabilities[index],
            "router's implied utility vs its pick": [implied[arm] for arm in self.arms],
            "router": np.arange(len(self.arms)) == self.router_actions[index],
            "oracle": self.oracle_set[index]})

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return int(self.clusters.max()) + 1 if len(self.clusters) else 0

    def points(self) -> pd.DataFrame:
        """One row per query: x, y, benchmark, example_id, router, oracle (arm names), agree,
        agreement ("agree" or "disagree": the router's arm in the oracle set or not), regret, cluster
        (1-based), index (its position in the map), question (cut at `QUESTION_CHARS`), and one column
        per arm, named by it, saying its F1 and tokens in and out (priced apart: lambda_in and lambda_out)."""
        arms = np.array(self.arms)
        agree = self.router_agrees
        outcomes = {arm: [f"F1 {f1:.2f}, {int(tokens_in):,} tokens in / {int(tokens_out):,} out"
                          for f1, tokens_in, tokens_out in zip(self.f1[:, a], self.tokens_in[:, a],
                                                                self.tokens_out[:, a])]
                    for a, arm in enumerate(self.arms)}
        return pd.DataFrame({
            "x": self.coordinates[:, 0], "y": self.coordinates[:, 1],
            "benchmark": [key[0] for key in self.keys], "example_id": [key[1] for key in self.keys],
            "router": arms[self.router_actions], "oracle": arms[self.oracle_actions],
            "agree": agree, "agreement": np.where(agree, "agree", "disagree"),
            "regret": regret(self.utility, self.router_actions),
            "cluster": self.clusters + 1, "index": np.arange(len(self.keys)),
            "question": [question if len(question) <= QUESTION_CHARS else question[:QUESTION_CHARS - 1] + "…"
                         for question in self.questions], **outcomes,
        })

    def cluster_mix(self) -> pd.DataFrame:
        """Long form: cluster (1-based), policy ("router" or "oracle"), arm, share, plus the
        cluster's queries and agreement. Shares of one cluster and policy sum to 1."""
        k, n_arms = self.n_clusters, len(self.arms)
        rows = []
        for policy, actions in (("router", self.router_actions), ("oracle", self.oracle_actions)):
            mix = action_mix(self.clusters, actions, k, n_arms)
            for cluster in range(k):
                members = self.clusters == cluster
                agreement = float(self.router_agrees[members].mean()) if members.any() else 0.0
                for arm in range(n_arms):
                    rows.append({"cluster": cluster + 1, "policy": policy, "arm": self.arms[arm],
                                 "share": float(mix[cluster, arm]), "queries": int(members.sum()),
                                 "agreement": agreement})
        return pd.DataFrame(rows, columns=["cluster", "policy", "arm", "share", "queries", "agreement"])

    def mean_tokens(self, actions: np.ndarray, members: np.ndarray | None = None) -> tuple[float, float]:
        """Mean input and output tokens of the chosen `actions` (per query) over `members` (default:
        every query); (0, 0) when there are none. Apart, since lambda_in and lambda_out price them apart."""
        rows = np.arange(len(self.keys)) if members is None else np.flatnonzero(members)
        if not len(rows):
            return 0.0, 0.0
        chosen = np.asarray(actions)[rows]
        return float(self.tokens_in[rows, chosen].mean()), float(self.tokens_out[rows, chosen].mean())

    def cluster_summary(self) -> pd.DataFrame:
        """One row per cluster: queries, oracle-set agreement, mean regret, the router's and the
        oracle's most frequent arm, and the mean tokens in and out of the router's and of the oracle's
        arms."""
        rows = []
        for cluster in range(self.n_clusters):
            members = self.clusters == cluster
            router = np.bincount(self.router_actions[members], minlength=len(self.arms))
            oracle = np.bincount(self.oracle_actions[members], minlength=len(self.arms))
            router_in, router_out = self.mean_tokens(self.router_actions, members)
            oracle_in, oracle_out = self.mean_tokens(self.oracle_actions, members)
            rows.append({"cluster": cluster + 1, "queries": int(members.sum()),
                         "agreement": float(self.router_agrees[members].mean()) if members.any() else 0.0,
                         "regret": float(regret(self.utility[members], self.router_actions[members]).mean())
                         if members.any() else 0.0,
                         "router's top arm": self.arms[int(router.argmax())],
                         "oracle's top arm": self.arms[int(oracle.argmax())],
                         "router tokens in": router_in, "router tokens out": router_out,
                         "oracle tokens in": oracle_in, "oracle tokens out": oracle_out})
        return pd.DataFrame(rows, columns=list(CLUSTER_SUMMARY_COLUMNS))

    def centroids(self) -> pd.DataFrame:
        """Mean coordinates of each cluster (columns cluster (1-based), x, y), to label the map."""
        return pd.DataFrame([{"cluster": c + 1, "x": float(self.coordinates[self.clusters == c, 0].mean()),
                              "y": float(self.coordinates[self.clusters == c, 1].mean())}
                             for c in range(self.n_clusters)], columns=["cluster", "x", "y"])


def action_mix(clusters: np.ndarray, actions: np.ndarray, n_clusters: int, n_arms: int) -> np.ndarray:
    """[n_clusters, n_arms] share of each cluster's queries sent to each arm (rows sum to 1; an
    empty cluster's row is all zeros)."""
    counts = np.zeros((n_clusters, n_arms))
    np.add.at(counts, (np.asarray(clusters), np.asarray(actions)), 1.0)
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)


def umap_coordinates(embeddings: np.ndarray, n_neighbors: int = UMAP_NEIGHBORS, min_dist: float = UMAP_MIN_DIST,
                     metric: str = UMAP_METRIC, seed: int = 0) -> np.ndarray:
    """[n, 2] UMAP of the rows of `embeddings`; deterministic for a seed (fixing random_state
    makes UMAP single-threaded). n_neighbors is capped at n - 1."""
    n = len(embeddings)
    if n < MIN_QUERIES:
        raise MissingStep(f"an action map needs at least {MIN_QUERIES} queries, got {n}")
    import umap  # imported here: numba compiles on first import (seconds)

    reducer = umap.UMAP(n_neighbors=min(n_neighbors, n - 1), min_dist=min_dist, metric=metric,
                        n_components=2, random_state=seed, n_jobs=1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="n_jobs value", category=UserWarning)
        coordinates = reducer.fit_transform(np.asarray(embeddings, dtype=np.float32))
    return np.asarray(coordinates, dtype=np.float64)


def cached_array(cache_dir: Path | None, name: str, key: str, data: np.ndarray,
                 compute: Callable[[], np.ndarray]) -> np.ndarray:
    """`compute()`, kept in `cache_dir` as `<name>-<sha256>.npy` under a digest of `key` (the
    settings) and `data` (the input), and read back on the next call with the same key and data.
    Written atomically; no cache without `cache_dir`."""
    if cache_dir is None:
        return compute()
    digest = hashlib.sha256(f"{key}|{data.dtype}|{data.shape}".encode())
    digest.update(np.ascontiguousarray(data).tobytes())
    path = Path(cache_dir) / f"{name}-{digest.hexdigest()[:24]}.npy"

    def computed() -> np.ndarray:
        result = compute()
        log.info("%s of %d rows kept in %s", name, len(data), path)
        return result

    return cached_file(path, computed, lambda file: np.load(file, allow_pickle=False),
                       lambda file, result: np.save(file, result, allow_pickle=False))


def cached_umap_coordinates(embeddings: np.ndarray, cache_dir: Path | None, seed: int = 0) -> np.ndarray:
    """`umap_coordinates`, computed once per distinct embedding matrix and seed (`cached_array`:
    the key holds the UMAP settings, so other queries or another embedder get their own file)."""
    matrix = np.ascontiguousarray(embeddings, dtype=np.float32)
    return cached_array(cache_dir, "umap", f"{UMAP_NEIGHBORS}|{UMAP_MIN_DIST}|{UMAP_METRIC}|{seed}", matrix,
                        lambda: umap_coordinates(matrix, seed=seed))


def cached_clusters(coordinates: np.ndarray, cache_dir: Path | None, n_clusters: int = N_CLUSTERS,
                    seed: int = 0) -> np.ndarray:
    """`cluster_points`, computed once per set of map coordinates, k and seed (`cached_array`)."""
    return cached_array(cache_dir, "clusters", f"kmeans|{n_clusters}|{seed}", np.asarray(coordinates),
                        lambda: cluster_points(coordinates, n_clusters, seed))


def cluster_points(coordinates: np.ndarray, n_clusters: int = N_CLUSTERS, seed: int = 0) -> np.ndarray:
    """[n] KMeans cluster of each 2-D point (k capped at n), numbered 0..k-1 by centroid x."""
    from sklearn.cluster import KMeans

    k = max(1, min(n_clusters, len(coordinates)))
    model = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(coordinates)
    order = np.argsort(np.argsort(model.cluster_centers_[:, 0]))  # old label -> rank by centroid x
    return order[model.labels_]


def map_weights(lineage: dict, weights: CostWeights | None = None) -> CostWeights:
    """The cost weights a checkpoint's map is drawn at: those it was trained at, or for a
    cost-conditioned router (trained at every weight) `weights`, by default 0.1 / 0.2."""
    if lineage.get("conditioning") is not None:
        return weights or CostWeights()
    return CostWeights(float(lineage["lambda_in"]), float(lineage["lambda_out"]))


def compute_action_map(store: Store, host: str, checkpoint_id: str, split: str = "test", seed: int = 0,
                       n_clusters: int = N_CLUSTERS, benchmarks: Sequence[str] | None = None,
                       umap_cache: Path | None = None, weights: CostWeights | None = None) -> ActionMap:
    """The action map of a checkpoint on a host's complete queries of one split ("all" for every
    split), only those of `benchmarks` when given (costs still normalized by the maxima the
    checkpoint's own train queries set), at the weights `map_weights` gives (`weights` moves a
    cost-conditioned router's, and the oracle's with it), under the evidence the checkpoint was
    trained under (its lineage's retriever hash: those outcomes only). Reads the stored features
    (`forge_core.routing.features.compute_features`); the UMAP and its clusters are read from
    `umap_cache` when they were computed before (`cached_umap_coordinates`, `cached_clusters`)."""
    if split not in SPLITS:
        raise InvalidInput(f"split is one of {', '.join(SPLITS)}, not '{split}'")
    checkpoint = load_checkpoint(store, checkpoint_id)
    lineage = checkpoint.lineage
    table = load_outcome_table(store, host, int(checkpoint.record["n_arms"]), int(lineage.get("split_seed", 0)),
                               lineage.get("benchmarks"), retriever_hash=lineage.get("retriever_hash", ""))
    normalizer = table.fit_normalizer()
    if benchmarks is not None:
        table = table.subset(np.isin(table.benchmarks, check_benchmarks(store, benchmarks)))
    if checkpoint.variant == "full":
        table = table.subset(table.has_probes)
    shown = table if split == "all" else table.split(split)
    if len(shown) < MIN_QUERIES:
        evidence = table.retriever_hash
        option = retriever_option(retriever_config_for_hash(store, evidence).name) if evidence else ""
        raise MissingStep(f"host '{host}' has {len(shown)} complete {split} queries"
                         f"{' with probes' if checkpoint.variant == 'full' else ''}; an action map needs at least "
                         f"{MIN_QUERIES}: run `forge enumerate --host {host} --split {split}{option}`")
    context = EvalContext(store, shown, normalizer, map_weights(lineage, weights))
    policy = RouterPolicy(checkpoint_id, checkpoint_id)
    policy.fit(context)
    rows = np.arange(len(shown))
    probabilities = policy.probabilities(context, rows)
    embeddings = policy.features(context)[:, :checkpoint.standardizer.embedding_dim]
    coordinates = cached_umap_coordinates(embeddings, umap_cache, seed)
    clusters = cached_clusters(coordinates, umap_cache, n_clusters, seed)
    questions = stored_questions(store, shown.keys)
    log.info("action map of %s on %s/%s: %d queries", checkpoint_id, host, split, len(shown))
    return ActionMap(checkpoint_id, host, split, tuple(shown.arms), tuple(shown.keys), tuple(questions),
                     coordinates, clusters, probabilities, context.utility, shown.f1, shown.tokens_in,
                     shown.tokens_out, context.weights, shown.retriever_hash, checkpoint_tau(lineage))


def stored_questions(store: Store, keys: Sequence[tuple[str, str]]) -> list[str]:
    """The stored question of each (benchmark, example_id) key, in the keys' order ("" for a key
    the store has no example of); one query per benchmark."""
    by_key: dict[tuple[str, str], str] = {}
    for benchmark in sorted({benchmark for benchmark, _ in keys}):
        ids = [example_id for b, example_id in keys if b == benchmark]
        by_key.update({(benchmark, e.example_id): e.question for e in store.examples(benchmark, ids)})
    return [by_key.get(key, "") for key in keys]
