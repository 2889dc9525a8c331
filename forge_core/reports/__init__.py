"""What the dashboard's pages and the reporting commands render, as data (no Streamlit): the
Overview's, Pareto's, Crossfit's, Transfer's and Calibration's tables (`tables`), the Pareto
page's mix of fixed arms (`mix_view`), a checkpoint's guard for the Live query (`checkpoint_guard`), the decision a
crossfit run supports (`decision`), the training-free gates on a run's drafted queries (`gates`),
the Action map (`action_map`), the Live query page's demo
questions whose arm moves with the weights (`demo_questions`), the Queries page's per-query table
(`query_explorer`), the stored checkpoints as the Train, Pareto and Queries pages list them
(`checkpoint_views`), the traffic log of `forge serve` summarized for the Traffic page and
`forge traffic` (`traffic`), how far a router's margins in utility units can be trusted on its
held-out queries (`reliability`), and the Overview's stored evidence measurements per retriever
(`evidence`). What is computed ahead of a page lives in `forge_core.precompute`."""
