"""`forge serve`: an OpenAI-compatible HTTP server that routes every question with a trained router
and answers it on a host (`app`), with Prometheus counters (`metrics`)."""
