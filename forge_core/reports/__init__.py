"""What the dashboard's pages render, as data (no Streamlit): the Overview's, Pareto's, Crossfit's,
Transfer's and Calibration's tables (`tables`), the decision a crossfit run supports
(`decision`), the Action map (`action_map`), and the Live query page's demo questions whose arm
moves with the weights (`demo_questions`), the Queries page's per-query table (`query_explorer`), the
Action map arrays that travel with the demo export (`map_cache`), the demo store loaded in one step
with the benchmarks it needs (`demo_store`), the slow first views computed when the outcomes arrive
rather than on a page's first view (`view_cache`) by a background process whose progress the pages
read (`background_views`), the traffic log of `forge serve` read and summarized
for the Traffic page and `forge traffic` (`traffic`), and how far a router's margins in utility units
can be trusted on its held-out queries (`reliability`), and the Overview's stored evidence measurements
per retriever (`evidence`)."""
