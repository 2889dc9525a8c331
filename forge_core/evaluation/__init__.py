"""The evaluation protocols: what an evaluation runs on and the one step that writes before it
(`setup`), the Cached protocol with sweeps and repeats (`cached`), cross-fitting with routers
trained per fold (`crossfit`; one fold fitted and scored: `fold_rows`; the folds as Ray tasks:
`crossfit_ray`), the Fresh Online protocol (`fresh_online`), transfer across benchmarks
(`transfer`; what it is asked, torch-free: `transfer_request`), the calibration of the
cost-conditioned routers (`calibration`), the decision at any
cost weights (`decide`; the rule's choices and tie-breaks written once: `deploy_rule`) from one
recipe's runs (`recipe`: how routers are trained; `recipe_choice`:
the recipe the runs measure best) or from out-of-fold decisions made at those weights by a crossfit
run's retrained fold routers (`fold_decisions`), the deployment manifest a decision is served from
(`manifest`), the proxy-reward audit (`proxy_audit`, asked for by an `audit_request`), each policy's
out-of-fold decisions against the oracle set (regret, tie-aware agreement, cot share, Stage 2 minus
Stage 1: `oracle_measures`), the cost-matched mix of fixed arms each policy is measured against at its own
tokens (`mix`), what a guarded router did out of fold (`guard_measures`),
each policy in the routing papers' units (`peer_units`), retrievers' evidence measured
before any host call
(`evidence_compare`), a host's arms under each retriever side by side (`evidence_arms`), and results
computed once and kept in a file (`file_cache`), and the protocols' knobs and `EvaluationSettings`,
which the command line reads without importing the protocols (`settings`). The policies they
evaluate are in `forge_core.policies`; what the pages show of them in `forge_core.reports`."""
