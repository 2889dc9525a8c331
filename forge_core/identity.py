"""Ids a user can reproduce: a hash of a canonical, versioned description of what a result
depends on (checkpoints, crossfit and Fresh Online runs).

The description is JSON with sorted keys and fixed separators, tagged with what it identifies and
the version of that description; floats are written as Python's shortest repr, the same on every
machine. Values measured from data (feature means, trained weights) never enter it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(identity: Mapping[str, Any]) -> str:
    """The canonical text of a JSON-ready mapping: sorted keys, no spaces, no NaN."""
    return json.dumps(identity, sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_hash(kind: str, version: int, identity: Mapping[str, Any]) -> str:
    """The sha256 (hex) of `identity` tagged with its `kind` and description `version`."""
    text = canonical_json({"kind": kind, "version": version, "identity": dict(identity)})
    return hashlib.sha256(text.encode()).hexdigest()


def without_defaults(values: Mapping[str, Any], defaults: Mapping[str, Any],
                     renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`values` under today's names (`renamed` maps an older name to today's) without the entries
    equal to today's default: a field added later at the default it stands for, or a field renamed,
    leaves the description as it was."""
    renamed = renamed or {}
    current = {renamed.get(key, key): value for key, value in values.items()}
    return {key: value for key, value in current.items() if key not in defaults or value != defaults[key]}
