"""Training routers: their hyperparameters and the training request, both torch-free (`settings`,
`request`), Stage 1 KL distillation (`stage1`), Stage 2 GRPO and its variants (`stage2`), the driver
that trains from the store and saves checkpoints (`trainer`), torch on one thread (`threads`), and
what the Train page shows of them (`checkpoint_views`)."""
