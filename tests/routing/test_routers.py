"""Router architecture: exact parameter counts, factorization, uniform thinking head, registry."""

from __future__ import annotations

import math

import pytest
import torch

from forge_core.routing.routers import ROUTERS, FactorizedRouter, FlatRouter, Router, build_router, parameter_count


@pytest.mark.parametrize(
    ("input_dim", "n_arms", "expected"),
    [
        (789, 6, 269_397),  # the paper's "about 269K": 768-d BGE + 21 features, 6 arms
        (789, 3, 269_124),
        (789, 12, 269_943),
        (405, 6, 171_093),  # 384-d MiniLM + 21 features (Full)
        (394, 6, 168_277),  # 384-d MiniLM + 10 features (Lite)
    ],
)
def test_factorized_parameter_counts(input_dim: int, n_arms: int, expected: int) -> None:
    # trunk d*256+256 + 256*256+256, support head 256*3+3, embedding 3*16, thinking 272*T+T
    n_thinking = n_arms // 3
    trunk = input_dim * 256 + 256 + 256 * 256 + 256
    by_hand = trunk + 256 * 3 + 3 + 3 * 16 + 272 * n_thinking + n_thinking
    assert by_hand == expected
    assert parameter_count(build_router("factorized", input_dim, n_arms)) == expected


@pytest.mark.parametrize(("input_dim", "n_arms", "expected"), [(789, 6, 269_574), (405, 12, 172_812)])
def test_flat_parameter_counts(input_dim: int, n_arms: int, expected: int) -> None:
    assert parameter_count(build_router("flat", input_dim, n_arms)) == expected


@pytest.mark.parametrize("kind", sorted(ROUTERS))
@pytest.mark.parametrize("n_arms", [3, 6, 12])
def test_log_probs_are_a_distribution_over_the_alphabet(kind: str, n_arms: int) -> None:
    torch.manual_seed(0)
    router = build_router(kind, 16, n_arms).eval()
    x = torch.randn(5, 16)
    log_probs = router.log_probs(x)
    assert log_probs.shape == (5, n_arms)
    torch.testing.assert_close(log_probs.exp().sum(dim=-1), torch.ones(5), rtol=0, atol=1e-6)
    support = router.support_log_probs(x)
    assert support.shape == (5, 3)
    # support-major order: the support marginal sums each block of n_thinking arms
    marginal = torch.logsumexp(log_probs.view(5, 3, n_arms // 3), dim=-1)
    torch.testing.assert_close(marginal, support, rtol=0, atol=1e-6)
    torch.testing.assert_close(router(x), log_probs, rtol=0, atol=0)


def test_factorized_log_prob_is_support_plus_conditional_thinking() -> None:
    torch.manual_seed(1)
    router = FactorizedRouter(8, n_thinking=2).eval()
    x = torch.randn(3, 8)
    h = router.encode(x)
    log_pi_s = torch.log_softmax(router.support_head(h), dim=-1)
    for support in range(3):
        e = router.support_embedding.weight[support].expand(3, -1)
        log_pi_t = torch.log_softmax(router.thinking_head(torch.cat([h, e], dim=-1)), dim=-1)
        for thinking in range(2):
            expected = log_pi_s[:, support] + log_pi_t[:, thinking]
            torch.testing.assert_close(router.log_probs(x)[:, support * 2 + thinking], expected)


@pytest.mark.parametrize("kind", sorted(ROUTERS))
@pytest.mark.parametrize("n_arms", [6, 12])
def test_reset_makes_the_thinking_conditional_exactly_uniform(kind: str, n_arms: int) -> None:
    torch.manual_seed(2)
    router = build_router(kind, 16, n_arms).eval()
    router.reset_thinking_head_uniform()
    x = torch.randn(4, 16)
    n_thinking = n_arms // 3
    conditional = router.log_probs(x).view(4, 3, n_thinking) - router.support_log_probs(x).unsqueeze(-1)
    expected = torch.full_like(conditional, -math.log(n_thinking))
    torch.testing.assert_close(conditional, expected, rtol=0, atol=1e-6)
    if kind == "factorized":
        assert torch.count_nonzero(router.thinking_head.weight) == 0
        assert torch.count_nonzero(router.thinking_head.bias) == 0


def test_registry_builds_from_spec_and_rejects_unknowns() -> None:
    router = build_router("factorized", 20, 12, hidden=32, dropout=0.0, support_embedding_dim=4)
    assert isinstance(router, FactorizedRouter) and isinstance(router, Router)
    assert router.spec() == {
        "kind": "factorized", "input_dim": 20, "n_arms": 12, "hidden": 32, "dropout": 0.0,
        "support_embedding_dim": 4,
    }
    rebuilt = build_router(**router.spec())
    assert parameter_count(rebuilt) == parameter_count(router)
    flat = build_router(**FlatRouter(20, 6).spec())
    assert isinstance(flat, FlatRouter) and flat.n_arms == 6 and flat.n_thinking == 2
    with pytest.raises(ValueError, match="unknown router"):
        build_router("mixture", 20, 6)
    for kind in ROUTERS:
        with pytest.raises(ValueError, match="3, 6 or 12"):
            build_router(kind, 20, 7)


def test_wrong_feature_width_is_a_clear_error() -> None:
    router = build_router("factorized", 16, 6)
    with pytest.raises(ValueError, match=r"\[B, 16\]"):
        router.log_probs(torch.zeros(2, 17))
