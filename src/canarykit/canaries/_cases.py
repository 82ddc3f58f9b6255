"""Granularity cases: the one case a granularity trap hard-codes.

``fit: fitted`` draws cases from the tool's own schema and never invents one:

1. for each parameter of the case (every required parameter; with none required, the
   first parameter that has a natural value), its natural values, in this order:
   ``const``, ``examples``, ``default`` (not ``null``), ``enum``; values quoted in its
   description (``e.g. "Paris"``, ``'America/New_York'``) and numbers in it (``1-7``);
   quoted values after an example cue ("e.g.", "such as", "example") in a sentence of the
   tool's description that names the parameter (or any sentence, when the tool has one
   string parameter), never a quoted parameter name; a ``format`` of ``date``, ``date-time`` or
   ``time``; then ``minimum`` and ``maximum``; a boolean's two values;
2. placeholders are never values: empty strings, arrays and objects, ``default``,
   ``string``, ``foo``, ``Hello``, ``example.com`` addresses, ``<path>``-style templates,
   values that only repeat the parameter's name (``"City, Country"`` for ``city``);
3. the candidate cases (in order) are checked against the tool's ``inputSchema``; the
   first valid one that does not coincide with a task of the suite is taken (see
   :class:`TaskSuite`).

A tool whose parameters have no natural value gets no granularity trap (a fit skip); one
whose candidates all fail its own schema gets a warning (its schema cannot host the
type). ``fit: paper`` keeps the paper's derivation (:func:`derive_special_case` in
:mod:`._transforms`), placeholders included, so that its pool is reproduced exactly.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..errors import InputError
from ..store.jsonio import canonical_json, read_json_input
from ..tasks.tasks import Fact, extract_numbers  # the rubric's own reading of numbers
from ..tools.arguments import schema_validator_class
from ..types import ToolResult
from ._text import slug, split_name

Executor = Callable[[str, Any], ToolResult]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())

#: Values that stand for "some value" rather than being one (compared case-insensitively).
PLACEHOLDERS: Final = frozenset(
    {
        "", "default", "string", "str", "value", "text", "example", "sample", "test", "testing",
        "foo", "bar", "baz", "qux", "foobar", "hello", "hello world", "hello, world",
        "hello, world!", "lorem ipsum", "xxx", "abc", "xyz", "todo", "tbd", "n/a", "none", "null",
        "undefined", "placeholder", "dummy", "your_api_key", "your-api-key", "...", "etc",
        "user@example.com", "example.com", "https://example.com", "http://example.com",
        "file.txt", "path/to/file", "/path/to/file", "name", "id", "key",
    }
)
_TEMPLATE = re.compile(r"^\s*(?:<[^<>]*>|\{[^{}]*\}|\[[^\[\]]*\]|\$\{[^}]*\}|%[a-z]+%)\s*$", re.I)
_EXAMPLE_DOMAIN = re.compile(r"(?:^|[@./])example\.(?:com|org|net)(?:$|[/:?#])", re.I)
#: Generic words a value may consist of and still be a template ("City, Country").
_GENERIC_WORDS: Final = _words(
    "name names value values type id key number code string text country state region city "
    "path file dir directory url query your my some other ext extension"
)
#: Quoted values: "x", `x`, “x”, ‘x’, and 'x' not inside a word (so "don't" opens nothing).
_QUOTED = re.compile(
    r'"([^"\n]{1,120})"|`([^`\n]{1,120})`|\u201c([^\u201d\n]{1,120})\u201d|\u2018([^\u2019\n]{1,120})\u2019'
    r"|(?<!\w)'([^'\n]{1,120}?)'(?!\w)"
)
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_FORMAT_VALUES: Final[Mapping[str, str]] = {
    "date": "2025-06-30",
    "date-time": "2025-06-30T12:00:00Z",
    "time": "12:00:00Z",
}
MAX_VALUES_PER_PARAMETER: Final = 8
MAX_CANDIDATE_CASES: Final = 200


def resolve(node: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """Follow local ``$ref`` pointers; take the first non-null ``anyOf``/``oneOf`` branch;
    merge ``allOf``."""
    if not isinstance(node, dict) or depth > 16:
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        target: Any = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            else:
                return node
        return resolve(target, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and branches:
            non_null = [
                b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")
            ]
            merged = {k: v for k, v in node.items() if k != key}
            first = resolve((non_null or branches)[0], root, depth + 1)
            return {**first, **merged} if isinstance(first, dict) else first
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for branch in all_of:
            resolved = resolve(branch, root, depth + 1)
            if isinstance(resolved, dict):
                merged = {**resolved, **merged}
        return merged
    return node


def is_placeholder(value: Any, param: str = "") -> bool:
    """True for a value that stands for "some value" (see the module docstring)."""
    if value is None:
        return True
    if isinstance(value, list | dict):
        return not value or any(is_placeholder(v) for v in (value.values() if isinstance(value, dict) else value))
    if not isinstance(value, str):
        return False
    text = value.strip()
    folded = text.casefold()
    if folded in PLACEHOLDERS or _TEMPLATE.match(text) or _EXAMPLE_DOMAIN.search(text):
        return True
    if "e.g" in folded or "..." in text or "\u2026" in text:
        return True
    words = re.findall(r"[a-z]+", folded)
    own = set(split_name(param))
    # "City, Country" for city, "file_path" for path: generic words or the parameter's own
    return bool(words) and not re.search(r"\d", text) and all(w in _GENERIC_WORDS or w in own for w in words)


def _type_of(spec: Mapping[str, Any]) -> str:
    typ = spec.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if isinstance(typ, str):
        return typ
    if "properties" in spec:
        return "object"
    if "items" in spec:
        return "array"
    return "string"


#: Sentence breaks, but not after "e.g." or "i.e." (an example follows them).
_SENTENCES = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+|\n+")
_EXAMPLE_CUE = re.compile(r"\b(?:e\.g\.|for example|for instance|such as|example)", re.I)


def _quoted(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(text)]


def _mentions(sentence: str, param: str) -> bool:
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", sentence)}
    tokens = split_name(param)
    forms = {param.lower(), "".join(tokens)} | set(tokens[-1:])
    forms |= {f + "s" for f in forms} | {f[:-1] for f in forms if f.endswith("s")}
    return bool(words & forms)


def _coerce(raw: str, typ: str, spec: Mapping[str, Any]) -> Any:
    if typ == "integer":
        return int(raw) if re.fullmatch(r"-?\d+", raw) else None
    if typ == "number":
        try:
            x = float(raw)
        except ValueError:
            return None
        return int(x) if x.is_integer() and "." not in raw else x
    if typ == "string":
        return raw
    return None


def natural_values(
    param: str, spec: Any, tool: Mapping[str, Any]
) -> list[tuple[Any, str]]:
    """The natural values of one parameter with where each came from (module docstring)."""
    schema = tool["inputSchema"]
    spec = resolve(spec, schema)
    if not isinstance(spec, dict):
        return []
    where = f"inputSchema.properties.{param}"
    typ = _type_of(spec)
    out: list[tuple[Any, str]] = []

    def add(value: Any, origin: str) -> None:
        if value is None or is_placeholder(value, param):
            return
        if any(canonical_json(value) == canonical_json(v) for v, _ in out):
            return
        out.append((copy.deepcopy(value), origin))

    if "const" in spec:
        add(spec["const"], f"{where}.const")
    for v in spec.get("examples", []) if isinstance(spec.get("examples"), list) else []:
        add(v, f"{where}.examples")
    if "default" in spec:
        add(spec["default"], f"{where}.default")
    for v in spec.get("enum", []) if isinstance(spec.get("enum"), list) else []:
        add(v, f"{where}.enum")
    desc = str(spec["description"]) if isinstance(spec.get("description"), str) else ""
    if typ in ("string", "integer", "number"):
        for quoted in _quoted(desc):
            add(_coerce(quoted, typ, spec), f"{where}.description")
    if typ in ("integer", "number"):
        for m in _NUMBER_IN_TEXT.finditer(desc):
            add(_coerce(m.group(0), typ, spec), f"{where}.description")
    if typ == "string":
        props = schema.get("properties", {})
        strings = [
            p for p, s in (props.items() if isinstance(props, dict) else [])
            if isinstance(resolve(s, schema), dict) and _type_of(resolve(s, schema)) == "string"
        ]
        tool_desc = str(tool.get("description") or "")
        for sentence in _SENTENCES.split(tool_desc):
            # an example ("e.g.", "such as", ...) in a sentence that names the parameter, or
            # in any sentence when the tool has one string parameter
            if _EXAMPLE_CUE.search(sentence) and (len(strings) == 1 or _mentions(sentence, param)):
                for quoted in _quoted(sentence):
                    if quoted not in props and quoted != tool.get("name"):  # 'head' names a parameter
                        add(quoted, "description")
        fmt = spec.get("format")
        if isinstance(fmt, str) and fmt in _FORMAT_VALUES:
            add(_FORMAT_VALUES[fmt], f"{where}.format")
    if typ in ("integer", "number"):
        for key in ("minimum", "maximum"):
            bound = spec.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                add(int(bound) if typ == "integer" else bound, f"{where}.{key}")
    if typ == "boolean":
        add(False, f"{where}.type")
        add(True, f"{where}.type")
    return out[:MAX_VALUES_PER_PARAMETER]


@dataclass(frozen=True)
class CaseCandidates:
    """The candidate cases of one tool (in order) and the parameters that had no value."""

    cases: list[dict[str, Any]]
    missing: list[str]


def candidate_cases(tool: Mapping[str, Any]) -> CaseCandidates:
    """Candidate granularity cases drawn from the schema (see the module docstring)."""
    schema = tool["inputSchema"]
    props = schema.get("properties", {})
    props = props if isinstance(props, dict) else {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)]
    if required:
        names = list(dict.fromkeys(required))
        values = {n: natural_values(n, props.get(n, {}), tool) for n in names}
        missing = [n for n in names if not values[n]]
        if missing:
            return CaseCandidates([], missing)
    else:
        names, values, missing = [], {}, []
        for n in props:
            vals = natural_values(n, props[n], tool)
            if vals:
                names, values = [n], {n: vals}
                break
        if not names:
            return CaseCandidates([], list(props)[:1])
    combos = itertools.islice(
        itertools.product(*[[v for v, _ in values[n]] for n in names]), MAX_CANDIDATE_CASES
    )
    return CaseCandidates([dict(zip(names, combo, strict=True)) for combo in combos], [])


def valid_case(schema: dict[str, Any], args: Mapping[str, Any]) -> str | None:
    """Why ``args`` is not valid for ``schema`` (``None`` when it is)."""
    errors = sorted(schema_validator_class(schema)(schema).iter_errors(dict(args)), key=lambda e: list(e.path))
    return errors[0].message if errors else None


def with_defaults(schema: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` with every top-level ``default`` of the schema filled in (how the real tool
    reads a call), so ``{}`` and ``{"directory": "/"}`` compare equal when "/" is the default."""
    out = dict(args)
    props = schema.get("properties", {})
    for name, spec in (props.items() if isinstance(props, dict) else []):
        spec = resolve(spec, schema)
        if name not in out and isinstance(spec, dict) and "default" in spec:
            out[name] = spec["default"]
    return out


def case_slug(args: Mapping[str, Any]) -> str:
    """Name part of a fitted case: its string values (``Paris`` -> ``paris``), else every
    value, else ``root`` for ``/``, else the parameter names."""
    texts = [v for v in args.values() if isinstance(v, str)]
    out = slug("_".join(texts))
    if not out:
        out = slug("_".join(canonical_json(v) for v in args.values()))
    if not out and "/" in texts:
        out = "root"
    return out or slug("_".join(args)) or "case"


# --- the task suite ----------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteTask:
    """What the coincidence check reads of a task: its plan, its rubric facts and the tools
    it needs (``correct_tools``: for a task without a plan, the tools it names)."""

    id: str
    steps: tuple[tuple[str, dict[str, Any]], ...]
    facts: tuple[Any, ...] = ()
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Coincidence:
    """A case that coincides with a task: ``how`` is ``arguments`` (the plan calls the tool
    with the same arguments) or ``evidence`` (the case's real result holds every rubric fact
    the task's own call of the tool supplies)."""

    task: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"task": self.task, "how": self.how}


@dataclass
class TaskSuite:
    """The task suite a pool is checked against (``data/tasks.json`` in the pipeline).

    ``execute`` (a real-tool executor) enables the evidence check and rejects derived cases
    that the real tool answers with an error; without it, only arguments are compared. Only
    tools read as read-only (:func:`~._fit.profile_tool`) are ever run by a check.
    """

    tasks: Sequence[SuiteTask]
    source: str = "<tasks>"
    execute: Executor | None = None
    _results: dict[str, ToolResult] = field(default_factory=dict, repr=False)

    def _run(self, tool: str, args: Mapping[str, Any]) -> ToolResult:
        key = canonical_json([tool, dict(args)])
        if key not in self._results:
            assert self.execute is not None
            try:
                self._results[key] = self.execute(tool, copy.deepcopy(dict(args)))
            except Exception as exc:  # an executor is external code; its failure is an error result
                self._results[key] = ToolResult(content=f"{type(exc).__name__}: {exc}", is_error=True)
        return self._results[key]

    def _may_run(self, tool: Mapping[str, Any]) -> bool:
        """Only read-only tools are ever run for a check (a check must not write)."""
        from ._fit import profile_tool

        return self.execute is not None and not profile_tool(tool).writes

    def case_error(self, tool: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
        """The real tool's error for the case, when there is an executor and it fails."""
        if not self._may_run(tool):
            return None
        result = self._run(str(tool["name"]), args)
        return result.content[:200] if result.is_error else None

    def coincidences(self, tool: Mapping[str, Any], args: Mapping[str, Any]) -> list[Coincidence]:
        """Tasks whose plan the case ``args`` of ``tool`` would serve (see :class:`Coincidence`)."""
        name, schema = str(tool["name"]), tool["inputSchema"]
        case = canonical_json(with_defaults(schema, args))
        out: list[Coincidence] = []
        for task in self.tasks:
            steps = [j for j, (t, _) in enumerate(task.steps) if t == name]
            if not steps:
                continue
            if any(canonical_json(with_defaults(schema, task.steps[j][1])) == case for j in steps):
                out.append(Coincidence(task.id, "arguments"))
            elif self._may_run(tool) and self._serves(name, args, steps, task):
                out.append(Coincidence(task.id, "evidence"))
        return out

    def _serves(self, name: str, args: Mapping[str, Any], steps: list[int], task: SuiteTask) -> bool:
        """Whether the case's real result holds all the evidence the task takes from its
        own call of the tool: the rubric facts that call's result shows, and the figures of
        it that later plan steps pass on (``calculate("71.3 - 57")`` after a news search)."""
        case_result = self._run(name, args)
        if case_result.is_error:
            return False
        for j in steps:
            step_result = self._run(name, task.steps[j][1])
            if step_result.is_error:
                continue
            # decimals only: whole numbers in later arguments are mostly years and ids
            later = [
                Fact("number", "", n)
                for _, a in task.steps[j + 1 :]
                for n in _numbers(canonical_json(a))
                if not float(n).is_integer()
            ]
            supplied = [f for f in (*task.facts, *later) if _distinctive(f) and _fact_in(f, step_result.content)]
            if supplied and all(_fact_in(f, case_result.content) for f in supplied):
                return True
        return False


def _numbers(text: str) -> list[float]:
    return extract_numbers(text)


def _distinctive(fact: Any) -> bool:
    """A fact that does not turn up by chance: a text of 3+ characters, or a number that is
    not a small whole number (``3 files`` appears in many results; ``71.3`` does not)."""
    if fact.kind == "number":
        value = float(fact.value)
        return not value.is_integer() or abs(value) >= 100
    return len(str(fact.value).strip()) >= 3


def _fact_in(fact: Any, text: str) -> bool:
    """The fact as the tool printed it: the same number exactly (no rubric tolerance, so a
    mean of 29.88 is not "found" in a day's 29.9), or the text case-insensitively."""
    if fact.kind == "number":
        value = float(fact.value)
        return any(abs(n - value) <= 1e-9 * max(1.0, abs(value)) for n in extract_numbers(text))
    return str(fact.value).casefold() in text.casefold()


def suite_from_tasks(tasks: Sequence[Any], source: str = "<tasks>", execute: Executor | None = None) -> TaskSuite:
    """A :class:`TaskSuite` from validated :class:`canarykit.tasks.tasks.Task` objects."""
    return TaskSuite(
        [SuiteTask(t.id, tuple((s.tool, dict(s.args)) for s in t.plan), tuple(t.rubric), tuple(t.correct_tools))
         for t in tasks],
        source,
        execute,
    )


def read_task_suite(path: str | Path, execute: Executor | None = None) -> TaskSuite:
    """Read the plans (and rubrics) of a task file for the coincidence check.

    Only what the check needs is validated (``tasks[].id``, ``tasks[].plan[].tool`` and
    ``.args``; ``rubric`` and ``correct_tools`` optional), so task files for any tool set
    are accepted.
    """
    src = str(path)
    doc = read_json_input(path, "task file")
    tasks = doc.get("tasks") if isinstance(doc, dict) else doc
    if not isinstance(tasks, list):
        raise InputError(src, "tasks", "expected a list of tasks")
    out: list[SuiteTask] = []
    for i, t in enumerate(tasks):
        where = f"tasks[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("id"), str):
            raise InputError(src, f"{where}.id", "expected a task object with a string id")
        plan = t.get("plan", [])
        if not isinstance(plan, list):
            raise InputError(src, f"{where}.plan", "expected a list of steps")
        steps = []
        for j, s in enumerate(plan):
            if not (isinstance(s, dict) and isinstance(s.get("tool"), str) and isinstance(s.get("args", {}), dict)):
                raise InputError(src, f"{where}.plan[{j}]", 'expected {"tool": str, "args": object}')
            steps.append((s["tool"], dict(s.get("args", {}))))
        facts = []
        rubric = t.get("rubric", [])
        for j, f in enumerate(rubric if isinstance(rubric, list) else []):
            if not isinstance(f, dict) or f.get("kind") not in ("number", "text") or "value" not in f:
                raise InputError(src, f"{where}.rubric[{j}]", 'expected {"kind": "number"|"text", "value": ...}')
            if f["kind"] == "number":
                if not isinstance(f["value"], int | float) or isinstance(f["value"], bool):
                    raise InputError(src, f"{where}.rubric[{j}].value", "expected a number")
                facts.append(Fact("number", str(f.get("label", "")), float(f["value"]), float(f.get("tolerance", 0.0))))
            else:
                facts.append(Fact("text", str(f.get("label", "")), str(f["value"])))
        named = t.get("correct_tools")
        tools = [x for x in named if isinstance(x, str)] if isinstance(named, list) else []
        out.append(SuiteTask(t["id"], tuple(steps), tuple(facts), tuple(dict.fromkeys([*tools, *(s[0] for s in steps)]))))
    return TaskSuite(out, src, execute)


def describe_case(args: Mapping[str, Any]) -> str:
    """``city=Paris, days=1`` (for messages)."""
    return ", ".join(f"{k}={v if isinstance(v, str) else canonical_json(v)}" for k, v in args.items()) or "{}"

