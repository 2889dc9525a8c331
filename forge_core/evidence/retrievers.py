"""Named retriever configurations, like hosts: `bm25` built in (the default), the rest in the store.

Kinds:
- `bm25`: Okapi BM25 over the benchmark's corpus (`forge_core.evidence.retrieval`), today's evidence;
- `dense`: cosine top-k over the embedder's passage vectors (`forge_core.evidence.dense`);
- `hybrid`: reciprocal-rank fusion of the BM25 and dense rankings, `1 / (fusion_k + rank)` summed;
- `http`: a user's service (`forge_core.evidence.http_retriever`): POST `{"query", "k"}`, reply
  `[{"title", "text", "score"}]`, with a timeout, retries and a key read from an environment variable.

A host uses bm25 unless `forge retriever use NAME --host HOST` set another (`host_default_retriever`):
every command's `--retriever` and every page's Retriever select default to it.

Each has the evidence settings of `SupportSettings` (passages, Raw's words a passage, Summary's
word budget). A configuration's hash (`retriever_hash`) is "" for the default BM25 retriever with
the default settings, so every outcome, feature and checkpoint stored before retrievers existed
keeps its key; any other configuration has a short hash of what decides its evidence (never its
name, timeout, retries or key variable).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from forge_core.config import builtin_or_stored
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.settings import RAW_WORDS_PER_PASSAGE, SUMMARY_WORD_BUDGET, SUPPORT_TOP_K, SupportSettings
from forge_core.store import Store

DEFAULT_RETRIEVER = "bm25"
KINDS = ("bm25", "dense", "hybrid", "http")
DEFAULT_FUSION_K = 60  # the reciprocal-rank-fusion constant of Cormack et al. (2009)
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class RetrieverConfig:
    """A named retriever: its kind, evidence settings and, per kind, its own options."""

    name: str
    kind: str = "bm25"
    k: int = SUPPORT_TOP_K  # passages Summary and Raw draw on
    raw_words: int = RAW_WORDS_PER_PASSAGE
    summary_words: int = SUMMARY_WORD_BUDGET
    fusion_k: int = DEFAULT_FUSION_K  # hybrid only
    embedder: str = ""  # dense and hybrid: the embedder's name (`forge_core.evidence.embedders.embedder_name`)
    url: str = ""  # http only
    timeout_s: float = DEFAULT_TIMEOUT_S  # http only: per attempt
    retries: int = DEFAULT_RETRIES  # http only: attempts after the first
    api_key_env: str = ""  # http only: the environment variable holding the key (sent as a Bearer token)

    @property
    def settings(self) -> SupportSettings:
        """The evidence settings of Summary and Raw under this retriever."""
        return SupportSettings(self.k, self.raw_words, self.summary_words)


BUILTIN_RETRIEVERS: dict[str, RetrieverConfig] = {DEFAULT_RETRIEVER: RetrieverConfig(DEFAULT_RETRIEVER)}


def identity(config: RetrieverConfig) -> dict:
    """What decides a retriever's evidence: its kind and settings, and per kind its embedder,
    fusion constant or URL."""
    key: dict = {"kind": config.kind, "k": config.k, "raw_words": config.raw_words,
                 "summary_words": config.summary_words}
    if config.kind in ("dense", "hybrid"):
        key["embedder"] = config.embedder
    if config.kind == "hybrid":
        key["fusion_k"] = config.fusion_k
    if config.kind == "http":
        key["url"] = config.url
    return key


def retriever_hash(config: RetrieverConfig) -> str:
    """"" for the default BM25 evidence (so existing keys and ids stay as they are), else a
    12-character hash of `identity`."""
    key = identity(config)
    if key == identity(BUILTIN_RETRIEVERS[DEFAULT_RETRIEVER]):
        return ""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def outcome_retriever_hash(arm: str, config_hash: str) -> str:
    """The retriever hash an outcome of `arm` is stored under: the configuration's for Summary and
    Raw, "" for Direct arms, which use no evidence (one Direct outcome serves every retriever)."""
    return "" if arm.startswith("direct:") else config_hash


def retriever_option(retriever: str) -> str:
    """The ` --retriever NAME` a suggested command needs to name a retriever other than the default
    bm25 ("" for bm25, whose commands need no option)."""
    return "" if retriever == DEFAULT_RETRIEVER else f" --retriever {retriever}"


def retriever_phrase(retriever: str) -> str:
    """The ` under retriever 'NAME'` a message needs to name a retriever other than the default
    bm25 ("" for bm25)."""
    return "" if retriever == DEFAULT_RETRIEVER else f" under retriever '{retriever}'"


def check_router_retriever(checkpoint_id: str, lineage: dict, config: RetrieverConfig) -> None:
    """Refuse, in one line, a router whose training evidence (its lineage's `retriever_hash`) is not
    the retriever's (routers trained before retrievers existed were trained under the default BM25
    evidence)."""
    trained_under = lineage.get("retriever_hash", "")
    if retriever_hash(config) != trained_under:
        trained = f"retriever configuration {trained_under}" if trained_under else "the default bm25 evidence"
        raise InvalidInput(f"router {checkpoint_id} was trained under {trained}; it cannot route with "
                           f"retriever '{config.name}' (train one under it, or answer with --arm)")


def check_retriever_config(config: RetrieverConfig) -> None:
    """Refuse a configuration FORGE cannot use, in one line."""
    if config.kind not in KINDS:
        raise InvalidInput(f"retriever kind must be one of {', '.join(KINDS)}, not '{config.kind}'")
    config.settings  # noqa: B018 -- building the settings refuses a bad k or word count
    if config.kind in ("dense", "hybrid") and not config.embedder:
        raise InvalidInput(f"retriever '{config.name}' ({config.kind}) needs the name of its embedder")
    if config.kind == "hybrid" and config.fusion_k < 1:
        raise InvalidInput(f"retriever '{config.name}': --fusion-k must be at least 1")
    if config.kind == "http":
        if not config.url.startswith(("http://", "https://")):
            raise InvalidInput(f"retriever '{config.name}' needs --url starting with http:// or https://")
        if not config.timeout_s > 0 or config.retries < 0:
            raise InvalidInput(f"retriever '{config.name}': --timeout must be positive and --retries 0 or more")
    elif config.url or config.api_key_env:
        raise InvalidInput(f"retriever '{config.name}': --url and --api-key-env go with --kind http")


def get_retriever_config(store: Store, name: str) -> RetrieverConfig:
    """A built-in or stored retriever configuration by name, with a clear error when unknown."""
    return builtin_or_stored("retriever", name, BUILTIN_RETRIEVERS, store.retriever_config, store.retriever_names,
                             lambda stored: RetrieverConfig(**stored))


def retriever_config_for_hash(store: Store, config_hash: str) -> RetrieverConfig:
    """The first configured retriever (built-in first, then by name) whose configuration hash is
    `config_hash`; refuses in one line when none is configured any more."""
    for config in list_retriever_configs(store):
        if retriever_hash(config) == config_hash:
            return config
    raise InvalidInput(f"no configured retriever has configuration hash {config_hash}: add it again with "
                       "`forge retriever add` (same kind and settings)")


def retriever_name_for_hash(store: Store, config_hash: str) -> str:
    """A name to suggest in commands for the retriever of configuration hash `config_hash`: bm25 for
    "", else the first configured retriever with that hash (built-in first, then by name), else the
    hash itself (no configured retriever has it any more)."""
    if not config_hash:
        return DEFAULT_RETRIEVER
    return next((config.name for config in list_retriever_configs(store) if retriever_hash(config) == config_hash),
                config_hash)


def evaluated_retriever_hash(store: Store, host: str, retriever: str) -> str:
    """The configuration hash of the retriever an evaluation reads the host's outcomes under ("":
    the default BM25); refuses, in one line, an unknown retriever or one the host has no Summary or
    Raw outcome under (outcomes under different evidence are never mixed)."""
    config_hash = retriever_hash(get_retriever_config(store, retriever))
    if config_hash and config_hash not in store.evidence_hashes_with_outcomes(host):
        raise MissingStep(f"no outcomes for host '{host}' under retriever '{retriever}': run "
                          f"`forge enumerate --host {host} --retriever {retriever}` first")
    return config_hash


def retrievers_with_outcomes(store: Store, host: str) -> list[str]:
    """Names of the retrievers an evaluation of the host can read: the default bm25 first, then
    each configured retriever the host has Summary or Raw outcomes under, by name."""
    hashes = store.evidence_hashes_with_outcomes(host)
    return [DEFAULT_RETRIEVER, *(config.name for config in list_retriever_configs(store)
                                 if config.name != DEFAULT_RETRIEVER and retriever_hash(config) in hashes)]


def list_retriever_configs(store: Store) -> list[RetrieverConfig]:
    """The built-in retriever first, then the stored ones by name."""
    return [*BUILTIN_RETRIEVERS.values(), *(get_retriever_config(store, n) for n in store.retriever_names())]


def save_retriever_config(store: Store, config: RetrieverConfig) -> None:
    """Add or replace a stored retriever configuration (built-in names are reserved)."""
    if config.name in BUILTIN_RETRIEVERS:
        raise InvalidInput(f"'{config.name}' is the built-in retriever; choose another name")
    if not config.name.strip():
        raise InvalidInput("a retriever needs a name")
    check_retriever_config(config)
    store.save_retriever_config(config.name, dataclasses.asdict(config))


def host_default_retriever(store: Store, host: str) -> str:
    """The retriever `host`'s commands and pages use unless told otherwise: the one `forge retriever
    use` set, else the default bm25."""
    return store.default_retrievers().get(host, DEFAULT_RETRIEVER)


def hosts_defaulting_to(store: Store) -> dict[str, list[str]]:
    """retriever name -> the hosts `forge retriever use` made it the default of, sorted (bm25's
    list holds only hosts set back explicitly: every other host uses it too)."""
    users: dict[str, list[str]] = {}
    for host, name in sorted(store.default_retrievers().items()):
        users.setdefault(name, []).append(host)
    return users


def set_host_default_retriever(store: Store, host: str, name: str) -> None:
    """Make the configured retriever `name` `host`'s default (bm25: back to the built-in default)."""
    get_retriever_config(store, name)  # refuses an unknown name
    store.set_default_retriever(host, None if name == DEFAULT_RETRIEVER else name)


def remove_retriever(store: Store, name: str) -> None:
    """Remove a stored retriever configuration (the built-in one cannot be removed, nor one that is
    some host's default)."""
    users = hosts_defaulting_to(store).get(name)
    if users:
        raise InvalidInput(f"retriever '{name}' is the default of host {', '.join(users)}: `forge retriever use bm25 "
                           f"--host {users[0]}` first")
    if not store.delete_retriever_config(name):
        raise InvalidInput(f"no stored retriever named '{name}'")
