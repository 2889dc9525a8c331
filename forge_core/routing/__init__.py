"""What routers learn from and how they decide: the utility objective (`utility`), the outcome
table (`outcome_table`), features (`features`), router networks (`routers`), checkpoints
(`checkpoints`) and routing a new question live (`live`)."""
