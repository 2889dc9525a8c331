"""What the dashboard's pages render, as data (no Streamlit): the Overview's, Pareto's, Crossfit's,
Transfer's and Calibration's tables (`tables`), the decision a crossfit run supports
(`decision`), the Action map (`action_map`), and the Live query page's demo questions whose arm
moves with the weights (`demo_questions`), and how far a router's margins in utility units can be
trusted on its held-out queries (`reliability`)."""
