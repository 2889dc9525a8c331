"""Training routers: their hyperparameters, torch-free (`settings`), Stage 1 KL distillation
(`stage1`), Stage 2 GRPO and its variants (`stage2`), the driver that trains from the store and
saves checkpoints (`trainer`), and what the Train page shows of them (`checkpoint_views`)."""
