"""A user's own question file for the tests: twelve capital-city questions, and a JSON-lines writer."""

from __future__ import annotations

import json
from pathlib import Path

CITIES = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Germany", "Berlin"),
          ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Poland", "Warsaw"), ("Greece", "Athens"),
          ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Ireland", "Dublin")]


def city_records() -> list[dict]:
    """Twelve capital-city questions, each with its own passage, ids given."""
    return [{"id": f"cap-{index}", "question": f"What is the capital of {country}?", "answers": [city],
             "contexts": [{"title": country, "text": f"{city} is the capital and largest city of {country}."}]}
            for index, (country, city) in enumerate(CITIES)]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path
