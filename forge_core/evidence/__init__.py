"""From a question and an arm to a scored answer: BM25 retrieval (`retrieval`), Summary and Raw
support (`support`), prompts (`prompts`), final-answer extraction (`answers`), F1/EM scoring
(`scoring`) and the one path every caller takes (`answering`)."""
