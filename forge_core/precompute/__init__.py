"""What is computed before a page asks for it: the slow first views of a store, computed when its
outcomes arrive rather than on a page's first view (`view_cache`), by a background process whose
progress the pages read (`background_views`); the Action map arrays that travel with the demo
export (`map_cache`); and the demo store loaded in one step with the benchmarks it needs and those
arrays (`demo_store`)."""
