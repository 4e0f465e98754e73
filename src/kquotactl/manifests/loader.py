"""Quota manifests: YAML/JSON files that declare quotas, loaded with a file:line for every value.

A manifest is::

    prune: ["users/svc-*", "clients/*"]      # optional: what this manifest owns (see :class:`PruneRule`)
    quotas:
      - entity: {user: alice, client-id: "batch job"}
        config: {producer_byte_rate: 10MiB, request_percentage: 50}
        cluster: {consumer_byte_rate: 600MiB}  # optional: cluster-wide budgets (kquotactl.core.budget)
        stages: 4                             # optional: apply --stages lowers these limits in 4 steps
        owner: team-a                         # optional metadata, carried into plans and apply logs
        reason: batch window
        ticket: OPS-12

Loading is pure (text in, :class:`Manifest` out) apart from reading the files. YAML is composed into nodes
(not constructed into plain objects) so that every error names the line of the offending value or key,
duplicate mapping keys are caught (PyYAML silently keeps the last one), and names keep their literal
spelling (``user: 007`` is the user ``007``, not the number 7). Every value goes through the core's key
and value validation (:mod:`kquotactl.core.keys`), every entity through :meth:`Entity.of`.

Public API: :func:`load_manifests` (paths, ``-`` for stdin, directories) and :func:`load_text`; the result's
:meth:`Manifest.records` / :meth:`Manifest.config_map` feed the resolver, planner and backends.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kquotactl.core.budget import check_cluster_key
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Entity, EntityType, Name
from kquotactl.core.errors import QuotaError
from kquotactl.core.keys import KEY_ORDER, Number, check_number, lookup_key
from kquotactl.core.manifest import (
    ENTITY_KEYS,
    ENTRY_KEYS,
    MANIFEST_SUFFIXES,
    META_KEYS,
    PRINCIPAL_KEY,
    TOP_KEYS,
    Manifest,
    ManifestEntry,
    ManifestError,
    PruneRule,
    Source,
    check_prune_pattern,
    entity_path_text,
)
from kquotactl.core.wording import decoded, yaml_problem

if TYPE_CHECKING:
    from kquotactl.core.principals import BrokerPrincipals

_TAG_STR = "tag:yaml.org,2002:str"
_TAG_INT = "tag:yaml.org,2002:int"
_TAG_FLOAT = "tag:yaml.org,2002:float"
_TAG_BOOL = "tag:yaml.org,2002:bool"
_TAG_NULL = "tag:yaml.org,2002:null"
_ENTITY_FIELDS = (*ENTITY_KEYS, PRINCIPAL_KEY)


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files to read: ``-`` is stdin; a directory contributes its ``*.yaml/*.yml/*.json`` (sorted, not recursive)."""
    out: list[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(str(c) for c in path.iterdir() if c.is_file() and c.suffix in MANIFEST_SUFFIXES)
            if not found:
                raise ManifestError([f"{p}: no manifest files (*.yaml, *.yml, *.json) in this directory"])
            out += found
        elif path.exists():
            out.append(p)
        else:
            raise ManifestError([f"{p}: no such file or directory"])
    return out


def load_manifests(
    paths: Sequence[str], stdin_text: str | None = None, principals: BrokerPrincipals | None = None
) -> Manifest:
    """Load and merge manifests; raise :class:`ManifestError` listing every problem (file:line: message).
    ``principals``: the brokers' mapping rules for ``principal:`` entities (None: such entries are refused)."""
    if not paths:
        raise ManifestError(["no manifest given: pass -f FILE (a file, a directory, or - for stdin)"])
    files = expand_paths(paths)
    texts: list[tuple[str, str]] = []
    problems: list[str] = []
    for f in files:
        try:
            if f == "-":
                texts.append(("<stdin>", stdin_text if stdin_text is not None else _stdin_text()))
                continue
            with open(f, "rb") as fh:
                texts.append((f, decoded(fh.read())))
        except OSError as e:
            problems.append(f"{f}: cannot read: {e.strerror or e}")
        except ValueError as e:  # not UTF-8: which byte, where
            problems.append(f"{'<stdin>' if f == '-' else f}: {e}")
    if problems:
        raise ManifestError(problems)
    return load_texts(texts, principals)


def _stdin_text() -> str:
    buffer = getattr(sys.stdin, "buffer", None)
    return decoded(buffer.read()) if buffer is not None else sys.stdin.read()


def load_text(text: str, name: str = "<manifest>", principals: BrokerPrincipals | None = None) -> Manifest:
    return load_texts([(name, text)], principals)


def load_texts(texts: Sequence[tuple[str, str]], principals: BrokerPrincipals | None = None) -> Manifest:
    """Parse and merge (file name, text) pairs into one :class:`Manifest`."""
    manifest = Manifest()
    problems: list[str] = []
    for name, text in texts:
        manifest.files.append(name)
        _Reader(name, manifest, problems, principals).read(text)
    if problems:
        raise ManifestError(problems)
    return manifest


class _Reader:
    """Walks one file's YAML nodes, validating as it goes; problems are collected, not raised."""

    def __init__(
        self, name: str, manifest: Manifest, problems: list[str], principals: BrokerPrincipals | None = None
    ) -> None:
        self.name = name
        self.manifest = manifest
        self.problems = problems
        self.principals = principals

    def src(self, node: Any) -> Source:
        return Source(self.name, node.line + 1)

    def problem(self, node: Any, message: str) -> None:
        self.problems.append(f"{self.src(node) if node is not None else self.name}: {message}")

    def read(self, text: str) -> None:
        import yaml

        try:
            for doc in _compose_all(text, self.entry):
                if doc is not None:
                    self.document(doc)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            where = f"{self.name}:{mark.line + 1}" if mark is not None else self.name
            self.problems.append(f"{where}: invalid YAML: {yaml_problem(e.context, e.problem)}")
        except yaml.YAMLError as e:
            self.problems.append(f"{self.name}: invalid YAML: {str(e).splitlines()[0]}")

    # -- structure ------------------------------------------------------------------------------

    def mapping(self, node: Any, what: str, allowed: Sequence[str] | None) -> dict[str, tuple[Any, Any]] | None:
        """A mapping node as {key: (key node, value node)}; duplicate and unknown keys are problems."""
        if not isinstance(node, _Mapping):
            self.problem(node, f"{what} must be a mapping, not {_kind(node)}")
            return None
        out: dict[str, tuple[Any, Any]] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, _Scalar):
                self.problem(knode, f"{what}: keys must be plain strings")
                continue
            key = knode.value
            if key == "<<":
                self.problem(knode, f"{what}: YAML merge keys (<<) are not supported; write the keys out")
                continue
            if key in out:
                first = self.src(out[key][0])
                self.problem(knode, f"duplicate key {key!r} in {what} (first at {first})")
                continue
            if allowed is not None and key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f" — did you mean {close[0]}?" if close else f" (allowed: {', '.join(allowed)})"
                self.problem(knode, f"unknown key {key!r} in {what}{hint}")
                continue
            out[key] = (knode, vnode)
        return out

    def document(self, doc: Any) -> None:
        if isinstance(doc, _Scalar) and doc.tag == _TAG_NULL:
            return  # an empty document
        top = self.mapping(doc, "the manifest", TOP_KEYS)
        if top is None:
            return
        if "prune" in top:
            self.prune(top["prune"][1])
        if "quotas" in top:
            qnode = top["quotas"][1]
            if isinstance(qnode, _Scalar) and qnode.tag == _TAG_NULL:
                return
            if not isinstance(qnode, _Sequence):
                self.problem(qnode, f"quotas must be a list of entries, not {_kind(qnode)}")
                return
            if qnode.streamed:
                return  # entries were read one by one while parsing
            for item in qnode.value:
                self.entry(item)

    def prune(self, node: Any) -> None:
        if not isinstance(node, _Sequence):
            self.problem(node, f"prune must be a list of entity-path globs, not {_kind(node)}")
            return
        for item in node.value:
            if not isinstance(item, _Scalar) or item.tag != _TAG_STR:
                self.problem(item, "prune patterns must be strings such as users/svc-*")
                continue
            why = check_prune_pattern(item.value)
            if why:
                self.problem(item, why)
                continue
            self.manifest.prune.append(PruneRule(item.value, self.src(item)))

    def entry(self, node: Any) -> None:
        fields = self.mapping(node, "a quotas entry", ENTRY_KEYS)
        if fields is None:
            return
        if "entity" not in fields:
            self.problem(node, "entry has no entity: add entity: {user: NAME} (or client-id, ip)")
            return
        if "config" not in fields and "cluster" not in fields:
            self.problem(node, "entry has no config: add config: {KEY: VALUE} (per broker) or cluster: {KEY: VALUE}")
            return
        entity, principal = self.entity(fields["entity"][1])
        meta: dict[str, str] = {}
        for k in META_KEYS:
            if k in fields:
                text = self.text(fields[k][1], k)
                if text is not None:
                    meta[k] = text
        stages = self.stages(fields["stages"][1]) if "stages" in fields else None
        if entity is None or ("stages" in fields and stages is None):
            return
        config: dict[str, Number] = {}
        key_sources: dict[str, Source] = {}
        if "config" in fields:
            read, key_sources = self.config(fields["config"][1], entity)
            if read is None:
                return
            config = read
        cluster: dict[str, Number] = {}
        if "cluster" in fields:
            read, cluster_sources = self.config(fields["cluster"][1], entity, cluster=True)
            if read is None:
                return
            cluster = read
            both = [k for k in cluster if k in config]
            if both:
                self.problem(
                    fields["cluster"][0],
                    f"{entity_path_text(entity)}: {', '.join(both)} is in both config and cluster (first at "
                    f"{key_sources[both[0]]}): give it per broker or cluster-wide, not both",
                )
                return
            key_sources = {**key_sources, **cluster_sources}
        src = self.src(node)
        first = self.manifest.get(entity)
        if first is not None:
            self.problem(
                fields["entity"][1],
                f"entity {entity_path_text(entity)} is declared twice (first at {first.source}); merge the entries",
            )
            return
        self.manifest.add(
            ManifestEntry(entity, config, src, key_sources, cluster=cluster, stages=stages, principal=principal, **meta)
        )

    def stages(self, node: Any) -> int | None:
        """An entry's ``stages:``: a whole number from 1 to :data:`kquotactl.core.stages.MAX_STAGES`."""
        from kquotactl.core.stages import MAX_STAGES

        value = _scalar_value(node) if isinstance(node, _Scalar) and node.tag == _TAG_INT else None
        if not isinstance(value, int) or not 1 <= value <= MAX_STAGES:
            shown = node.value if isinstance(node, _Scalar) else _kind(node)
            self.problem(node, f"stages must be a whole number from 1 to {MAX_STAGES}, not {shown!r}")
            return None
        return value

    def text(self, node: Any, what: str) -> str | None:
        if not isinstance(node, _Scalar) or node.tag in (_TAG_NULL, _TAG_BOOL):
            self.problem(node, f"{what} must be a string")
            return None
        value: str = node.value  # a scalar's value is its text
        return value

    def entity(self, node: Any) -> tuple[Entity | None, str | None]:
        """The entity, and the principal its user was mapped from (``principal:``), if any."""
        comps = self.mapping(node, "entity", _ENTITY_FIELDS)
        if comps is None:
            return None, None
        if not comps:
            self.problem(node, "entity is empty: give user, client-id and/or ip")
            return None, None
        names: dict[EntityType, Name] = {}
        principal: str | None = None
        for key, (_, vnode) in comps.items():
            if key == PRINCIPAL_KEY:
                if "user" in comps:
                    self.problem(vnode, "give user or principal, not both (principal: is mapped to the user)")
                    return None, None
                mapped = self.principal(vnode)
                if mapped is None:
                    return None, None
                principal, names[EntityType.USER] = mapped
                continue
            name = self.name_of(vnode, key)
            if name is None:
                return None, None
            names[ENTITY_KEYS[key]] = name
        try:
            return Entity.from_components(names), principal
        except QuotaError as e:
            self.problem(node, str(e))
            return None, None

    def principal(self, node: Any) -> tuple[str, str] | None:
        """``principal: CN=...`` / ``principal: svc@REALM`` / ``principal: {ssl|kerberos: TEXT}``: (text, user)."""
        from kquotactl.core.principals import BrokerPrincipals, PrincipalError, PrincipalType

        kind: PrincipalType | None = None
        if isinstance(node, _Mapping):
            inner = self.mapping(node, "principal", ("ssl", "kerberos"))
            if inner is None:
                return None
            if len(inner) != 1:
                self.problem(node, "principal: write {ssl: DN} or {kerberos: NAME@REALM}, one of them")
                return None
            [(key, (_, node))] = inner.items()
            kind = "ssl" if key == "ssl" else "kerberos"
        text = self.scalar_name(node, PRINCIPAL_KEY)
        if text is None:
            return None
        rules = self.principals or BrokerPrincipals.of({}, None)
        try:
            mapping = rules.map(text, kind)
        except PrincipalError as e:
            self.problem(node, str(e))
            return None
        if mapping.user in ("", DEFAULT_MARKER):
            self.problem(node, f"principal {text!r} maps to the user {mapping.user!r}, which no quota can name")
            return None
        return text, mapping.user

    def name_of(self, node: Any, key: str) -> Name | None:
        """``alice`` / ``"<default>"`` (the default) / ``{name: "<default>"}`` (a real name spelled so)."""
        if isinstance(node, _Mapping):
            inner = self.mapping(node, f"the {key} name", ("name",))
            if inner is None:
                return None
            if "name" not in inner:
                self.problem(node, f'{key}: write {{name: NAME}} for a real name (or "<default>" for the default)')
                return None
            vnode = inner["name"][1]
            text = self.scalar_name(vnode, key)
            if text is None:
                return None
            if text == "":
                self.problem(vnode, f'{key} name is empty: write "<default>" for the default {key}')
                return None
            return text
        text = self.scalar_name(node, key)
        if text is None:
            return None
        if text == "":
            self.problem(node, f'{key} name is empty: write "<default>" for the default {key}')
            return None
        return DEFAULT if text == DEFAULT_MARKER else text

    def scalar_name(self, node: Any, key: str) -> str | None:
        if not isinstance(node, _Scalar):
            self.problem(node, f"{key} must be a name (a string), not {_kind(node)}")
            return None
        if node.tag == _TAG_NULL:
            self.problem(node, f'{key} has no name: write "<default>" for the default {key}')
            return None
        if node.tag == _TAG_BOOL:
            self.problem(node, f"{key} name {node.value!r} reads as a boolean in YAML: quote it")
            return None
        name: str = node.value  # the literal spelling, also for names that look like numbers
        return name

    def config(
        self, node: Any, entity: Entity, cluster: bool = False
    ) -> tuple[dict[str, Number] | None, dict[str, Source]]:
        """A ``config:`` (or, ``cluster``, a ``cluster:``) mapping, each key and value validated."""

        what = "cluster" if cluster else "config"
        fields = self.mapping(node, what, None)
        if fields is None:
            return None, {}
        if not fields:
            self.problem(node, f"{what} is empty: give at least one key (to remove an entity, use --prune)")
            return None, {}
        out: dict[str, Number] = {}
        sources: dict[str, Source] = {}
        ok = True
        ordered, last = True, -1  # the keys as written, in the canonical order already (sorted only if not)
        kind = entity.kind
        for k, (knode, vnode) in fields.items():
            try:
                key = lookup_key(k, kind)
                if cluster:
                    check_cluster_key(key)
            except QuotaError as e:
                self.problem(knode, f"{entity_path_text(entity)}: {e}")
                ok = False
                continue
            if not isinstance(vnode, _Scalar) or vnode.tag in (_TAG_NULL, _TAG_BOOL):
                self.problem(vnode, f"invalid value for {k}: must be a number (or a string such as 10MiB)")
                ok = False
                continue
            try:
                out[k] = check_number(key, _scalar_value(vnode), vnode.value)
            except QuotaError as e:
                self.problem(vnode, str(e))
                ok = False
                continue
            sources[k] = self.src(vnode)
            rank = KEY_ORDER[k]
            ordered, last = ordered and rank > last, rank
        if not ok:
            return None, {}
        if not ordered:
            out = dict(sorted(out.items(), key=lambda kv: KEY_ORDER[kv[0]]))
        return out, sources


def _scalar_value(node: Any) -> Any:
    """A scalar's value: numbers as numbers (YAML 1.1 resolution), everything else as its text."""
    if node.tag == _TAG_INT:
        text = node.value.replace("_", "")
        try:
            return int(text, 10)
        except ValueError:
            return node.value  # 0x10, 0o17, 1:30 (sexagesimal) and friends: refused as text by the core
    if node.tag == _TAG_FLOAT:
        low = node.value.lower()
        if low in (".nan", ".inf", "+.inf", "-.inf"):
            return float(low.replace(".", ""))
        try:
            return float(node.value.replace("_", ""))
        except ValueError:
            return node.value
    return node.value


def _kind(node: Any) -> str:
    if isinstance(node, _Mapping):
        return "a mapping"
    if isinstance(node, _Sequence):
        return "a list"
    if node.tag == _TAG_NULL:
        return "empty"
    value = node.value if len(node.value) <= 60 else node.value[:57] + "..."
    return f"the scalar {value!r}"


# an escape only when preceded by an even number of backslashes (``\\\\ud800`` is a backslash, then an escape)
_SURROGATE_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE)


def _json_surrogates(text: str) -> str:
    """JSON writes characters beyond U+FFFF as surrogate pairs (``\\ud83d\\ude00``), which YAML refuses:
    rewrite them as YAML's ``\\U0001f600`` (same line, so line numbers are unchanged)."""
    if "\\u" not in text:
        return text

    def joined(m: re.Match[str]) -> str:
        hi, lo = int(m.group(2), 16), int(m.group(3), 16)
        return f"{m.group(1)}\\U{0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00):08x}"

    return _SURROGATE_PAIR.sub(joined, text)


MAX_NESTING = 32  # a manifest needs 4 levels; deeper documents are refused before they exhaust the stack

# What can open or close a flow collection, and what hides brackets from it: quoted scalars and comments. The
# pattern starts with a character class so the regex engine skips plain text in C; where a quote, '#' or an opening
# bracket really starts something (after a blank, a line's start or a flow indicator) is checked per match.
_FLOW_TOKENS = re.compile(r"""[\[{](?:[^\[\]{}'"#]*[\]}])?|[\]}]|'(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|#[^\n]*""")
_NODE_START_BEFORE = frozenset(" \t\r\n[{,:")
_FLAT_COLLECTION = re.compile(r"""[\[{][^\[\]{}'"#]*[\]}]""")


def _check_flow_nesting(text: str) -> None:
    """Refuse flow collections nested deeper than :data:`MAX_NESTING` before the YAML library sees the text.

    libyaml scans ahead of the parser (up to 1,024 characters per possible key), so deep ``[[[[`` reaches the
    library's own limit, worded its own way and changing between releases, before our composer counts a level:
    this lexical pass gives one message of ours whatever the library. A bracket inside a block plain scalar
    (``user: a[b``) opens nothing. Block nesting costs two columns a level and is counted by the composer.
    """
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    # Flat collections (``{user: svc-1}``: nothing nested, quoted or commented inside) add one level at most: with
    # them cut out (in C), fewer than MAX_NESTING openers left cannot nest too deep. Every entry of a large
    # manifest is written so.
    rest = _FLAT_COLLECTION.sub("", text)
    if rest.count("[") + rest.count("{") < MAX_NESTING:
        return
    import yaml

    depth, pos, opened_at, search = 0, 0, -1, _FLOW_TOKENS.search
    while (m := search(text, pos)) is not None:
        start, c = m.start(), text[m.start()]
        before = text[start - 1] if start else "\n"
        # '[' right after an opening bracket starts a node only if that bracket opened a collection ('a[[' does not)
        starts_node = before in _NODE_START_BEFORE and (before not in "[{" or opened_at == start - 1)
        if c in "[{":
            flat = m.end() - start > 1  # '{user: alice}': opened and closed with nothing nested or quoted inside
            pos = m.end() if flat else start + 1
            if not starts_node:  # 'a[b': part of a plain scalar, opens nothing (its ']' closes one, as below)
                depth = max(depth - 1, 0) if flat else depth
            elif depth == MAX_NESTING:
                line = text.count("\n", 0, start)
                column = start - (text.rfind("\n", 0, start) + 1)
                mark = yaml.error.Mark("<manifest>", start, line, column, None, 0)  # no buffer: no snippet
                message = f"nested deeper than {MAX_NESTING} levels (a manifest needs 4)"
                raise yaml.composer.ComposerError(None, None, message, mark)
            elif not flat:
                depth, opened_at = depth + 1, start
        elif c in "]}":
            pos = start + 1
            depth = max(depth - 1, 0)
        elif c == "#" and not (start == 0 or text[start - 1].isspace()):
            pos = start + 1  # 'a#b' is a plain scalar, not a comment
        elif c in "'\"" and not starts_node:
            pos = start + 1  # "o'brien": an apostrophe inside a plain scalar
        else:
            pos = m.end()  # a quoted scalar or a comment: its brackets open nothing


class _Node:
    """A composed YAML node: only what the reader uses (the tag, the value, the 0-based line of its start).

    ``yaml.Node`` keeps both marks, a style and more for each of the ~100,000 nodes of a large manifest; the
    reader needs none of it, so the composer makes these instead (kind told apart by class)."""

    __slots__ = ("line", "tag", "value")

    def __init__(self, tag: str, value: Any, line: int) -> None:
        self.tag = tag
        self.value = value
        self.line = line


class _Scalar(_Node):
    __slots__ = ()
    value: str


class _Sequence(_Node):
    __slots__ = ("streamed",)
    value: list[Any]

    def __init__(self, tag: str, value: list[Any], line: int) -> None:
        super().__init__(tag, value, line)
        self.streamed = False  # its items were handed to the entry callback, not kept


class _Mapping(_Node):
    __slots__ = ()
    value: list[tuple[Any, Any]]


def _compose_all(text: str, on_entry: Callable[[Any], None] | None = None) -> Iterator[Any]:
    """Compose YAML documents into nodes (tag, value, line) from the C parser's events.

    Like ``yaml.compose_all``, except that the items of the top-level ``quotas`` list are handed to
    ``on_entry`` one at a time and not kept: memory stays proportional to the validated entries, not to
    the YAML node tree.
    """
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = _json_surrogates(text)
    _check_flow_nesting(text)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # undecodable bytes smuggled in as surrogates (stdin under LANG=C)
            line, column = text.count("\n", 0, e.start), e.start - (text.rfind("\n", 0, e.start) + 1)
            mark = yaml.error.Mark("<manifest>", e.start, line, column, None, 0)  # no buffer: no snippet
            raise yaml.scanner.ScannerError(None, None, "bytes that are not valid UTF-8", mark) from None
    loader = loader_cls(text)
    try:
        get_event = loader.get_event
        get_event()  # StreamStart
        composer = _EventComposer(loader, on_entry)
        while type(get_event()) is not yaml.StreamEndEvent:  # a DocumentStart
            doc = composer.node(get_event(), 0, None)
            get_event()  # DocumentEnd
            yield doc
    finally:
        loader.dispose()


_TAG_CACHE = 1024  # resolved scalar tags kept per document stream


class _EventComposer:
    """Nodes from events. Events are told apart by exact type (the C parser makes ``yaml.events`` classes, no
    subclasses), the most frequent first; the scalars of a collection are made in its loop, without a call."""

    def __init__(self, loader: Any, on_entry: Callable[[Any], None] | None) -> None:
        import yaml

        self.loader = loader
        self.on_entry = on_entry
        self.anchors: dict[str, Any] = {}
        # Tags of implicit scalars by (text, implicit flags): the safe resolver has no path resolvers, so a tag
        # depends on nothing else. Mapping keys repeat in every entry; bounded, as most values are unique.
        self.tags: dict[tuple[str, Any], str] = {}
        # A plain scalar whose first character starts no implicit resolver is a string without asking the
        # resolver (names such as svc-1); one of ASCII digits, not starting with 0, is an int (limits). Both
        # shortcuts are held to the resolver's own answers by tests/test_manifest_pure.py.
        resolvers = loader.yaml_implicit_resolvers
        self.resolved_firsts = None if None in resolvers else frozenset(resolvers)
        self.events = (yaml.ScalarEvent, yaml.SequenceEndEvent, yaml.MappingEndEvent)

    def scalar(self, ev: Any) -> _Scalar:
        tag = ev.tag
        value = ev.value
        if tag is None or tag == "!":
            implicit = ev.implicit
            firsts = self.resolved_firsts
            if implicit[0] and value and firsts is not None and value[0] not in firsts:
                tag = _TAG_STR
            elif implicit[0] and value.isdigit() and value.isascii() and (value[0] != "0" or len(value) == 1):
                tag = _TAG_INT
            else:
                tag = self.tags.get((value, implicit))
                if tag is None:
                    import yaml

                    tag = self.loader.resolve(yaml.ScalarNode, value, implicit)
                    if len(self.tags) < _TAG_CACHE:
                        self.tags[value, implicit] = tag
        node = _Scalar(tag, value, ev.start_mark.line)
        if ev.anchor:
            self.anchors[ev.anchor] = node
        return node

    def node(self, ev: Any, depth: int, key: str | None) -> Any:
        """The node that starts with event ``ev`` at nesting ``depth`` (``key``: the mapping key it is the value of)."""
        import yaml

        if depth > MAX_NESTING:  # composing recurses per level: 100,000 nested brackets would exhaust the stack
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_NESTING} levels (a manifest needs 4)", ev.start_mark
            )
        kind = type(ev)
        scalar_event, sequence_end, mapping_end = self.events
        if kind is scalar_event:
            return self.scalar(ev)
        if kind is yaml.AliasEvent:
            if ev.anchor not in self.anchors:
                message = f"found undefined alias {ev.anchor!r}"
                raise yaml.composer.ComposerError(None, None, message, ev.start_mark)
            return self.anchors[ev.anchor]
        get_event, scalar = self.loader.get_event, self.scalar
        inline = depth < MAX_NESTING  # children at depth + 1 are within the limit: scalars need no checking call
        tag = ev.tag
        if kind is yaml.SequenceStartEvent:
            if tag is None or tag == "!":
                tag = self.loader.resolve(yaml.SequenceNode, None, ev.implicit)
            seq = _Sequence(tag, [], ev.start_mark.line)
            if ev.anchor:
                self.anchors[ev.anchor] = seq
            stream = self.on_entry if depth == 1 and key == "quotas" else None
            items = seq.value
            while (ev := get_event()).__class__ is not sequence_end:
                item = scalar(ev) if inline and ev.__class__ is scalar_event else self.node(ev, depth + 1, None)
                if stream is not None:
                    stream(item)
                else:
                    items.append(item)
            seq.streamed = stream is not None
            return seq
        if tag is None or tag == "!":
            tag = self.loader.resolve(yaml.MappingNode, None, ev.implicit)
        node = _Mapping(tag, [], ev.start_mark.line)
        if ev.anchor:
            self.anchors[ev.anchor] = node
        pairs = node.value
        while (ev := get_event()).__class__ is not mapping_end:
            k = scalar(ev) if inline and ev.__class__ is scalar_event else self.node(ev, depth + 1, None)
            ev = get_event()
            if inline and ev.__class__ is scalar_event:
                v: Any = scalar(ev)
            else:
                v = self.node(ev, depth + 1, k.value if type(k) is _Scalar else None)
            pairs.append((k, v))
        return node


def json_schema() -> dict[str, Any]:
    """The manifest's JSON Schema (shipped as ``kquotactl/schema/manifest.schema.json``), for editors and CI."""
    import json
    from importlib.resources import files

    from kquotactl.manifests.schema import SCHEMA_FILE

    schema: dict[str, Any] = json.loads(files("kquotactl").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))
    return schema
