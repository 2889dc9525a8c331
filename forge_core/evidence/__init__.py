"""From a question and an arm to a scored answer: every retriever (BM25 `retrieval`, dense and
hybrid `dense_retrieval`, the HTTP `http_retriever`, their configurations `retrievers` and the
opened backends `retriever_backends`), the passage vectors (`passage_vectors`) and embedders
(`embedders`) dense retrieval reads, how much evidence a support form takes (`settings`), Summary
and Raw support (`support`), prompts (`prompts`), final-answer extraction (`answers`), F1/EM
scoring (`scoring`), the one path every caller takes (`answering`), and the checks that ask a
host the way every answer is asked: one call (`host_check`) and each thinking depth
(`depth_check`)."""
