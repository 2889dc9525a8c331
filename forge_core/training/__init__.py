"""Training routers: their hyperparameters and the training request, both torch-free (`settings`,
`request`), Stage 1 KL distillation (`stage1`), Stage 2 GRPO and its variants (`stage2`), the driver
that trains from the store and saves checkpoints (`trainer`) and torch on one thread (`threads`).
The Train page's view of the checkpoints is a report (`forge_core.reports.checkpoint_views`)."""
