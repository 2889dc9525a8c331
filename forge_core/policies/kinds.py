"""What a policy is (`Policy.kind`), stored with its results and used to group it in reports and
charts. Plain strings in a module without heavy imports, so reports and decisions read them
without loading the policies (and torch)."""

FIXED_ARM_KIND = "fixed arm"  # always the same arm
BASELINE_KIND = "baseline"  # a published routing baseline, or the linear floor `ridge_utility`
ROUTER_KIND = "router"  # a FORGE router (a checkpoint, a router trained per fold, or its dev fallback)
ORACLE_KIND = "oracle"  # the per-query utility oracle: a reference, not deployable
