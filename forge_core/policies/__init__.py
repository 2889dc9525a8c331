"""What a routing policy is and what it costs: the policy interface (`base`), what a policy sees and
its accounting of host calls (`context`), the policy kinds (`kinds`), the baselines (`baselines`),
the training-free gates from the literature: TARG, DART and a log-probability ladder (`gates`),
the FORGE routers and their dev fallback (`routers`), a router guarded by a held-out margin
threshold for a stated risk, its fallback the best fixed arm or the cost-matched mix (`guard`), a
mix of fixed arms drawn by the question's hash (`arm_mix`, what `forge serve --mix` answers with),
the convex hull of the fixed arms' (tokens, F1) points and the best mix within a budget
(`mix_hull`), the cost-conditioned routers (`conditioned`), the one registry of policy names
(`registry`), a new query answered live (`live_query`), and the scoring of a policy's decisions:
quality, cost and utility (`outcomes`), retrieval's gold recall (`grounding`) and the support
verdicts of answers (`support_rates`)."""
