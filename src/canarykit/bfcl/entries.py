"""BFCL's multi-turn benchmark read as canarykit tools and tasks (``environment.kind: bfcl``).

Everything comes from the installed ``bfcl-eval`` package (``make install-bfcl``: pinned,
without its heavy dependencies), read as data: the entries of each multi-turn category
(``BFCL_v4_<category>.json``), their ground truth (``possible_answer/``) and the function docs
of each class (``multi_turn_func_doc/``). Only the modules the multi-turn classes and checker
import are loaded (their source, and ``mpmath``); nothing of BFCL's model handlers.

**Tools.** Each function doc of a class an entry involves is one tool, in the form BFCL gives
a function-calling model: the description with BFCL's Python hint, the parameters cast to
JSON Schema types with BFCL's own table (``GORILLA_TO_OPENAPI``: ``dict`` -> ``object``,
``float`` -> ``number`` with its "float type" note, ...), ``server`` the class. The MCP
annotations are measured, not guessed (:func:`measure_annotations`): a function is read-only
(``readOnlyHint: true``) when no call of it in any ground truth BFCL ships changed its
instance (every attribute, private ones included: ``cd`` moves the working directory, so it
writes), destructive when a call removed part of the public state (``rm``, ``mv``); a
function no ground truth calls keeps the MCP default (it may write). ``openWorldHint`` is
``false`` for the classes that model the user's own machine or a pure computation
(:data:`CLOSED_WORLDS`), so the fit rules offer no "cached copy" of a file system the agent
just changed.

**Tasks.** Each entry is one task (:func:`entry_task`): its first user message is the prompt,
the others are follow-ups fed one by one (an empty turn of ``multi_turn_miss_func``, where
BFCL adds the held-back functions, says what BFCL says then, and ``tools_from`` holds those
functions back until it); its tools are the functions of its classes; its plan is the ground
truth, parsed call by call (positional arguments named from the method's signature), each
step tagged with its user turn; it declares all six canary types (BFCL declares none, so
``declared`` offers every type that fits each tool the plan calls); its ``setup`` holds the
entry's id, category, classes, initial_config and the ground truth as BFCL wrote it, which the
checker (:mod:`canarykit.judging`, judge ``bfcl``) compares against. An entry whose ground
truth cannot be read or does not fit its function's schema is skipped, with the reason
(:class:`Skipped`), never silently.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import importlib
import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from ..errors import ConfigError, InputError, did_you_mean
from ..types import CANARY_TYPES

__all__ = [
    "CLOSED_WORLDS", "INSTALL_HINT", "PINNED_VERSION", "Entry", "Skipped", "TaskSuite", "bfcl_version", "call_string",
    "categories", "check_categories", "entry_task", "load_entries", "measure_annotations", "parse_call", "require_bfcl",
    "task_suite", "tool_definitions",
]

#: The version ``make install-bfcl`` installs (the code reads whatever is installed).
PINNED_VERSION: Final = "2026.3.23"
INSTALL_HINT: Final = "install it with `make install-bfcl` (bfcl-eval, pinned, without its heavy dependencies)"
#: Classes whose world is the user's own machine or a pure computation: openWorldHint false.
CLOSED_WORLDS: Final = frozenset({"GorillaFileSystem", "MathAPI", "VehicleControlAPI"})
#: What BFCL appends to every function description it gives a Python function-calling model.
PYTHON_HINT: Final = " Note that the provided function is in Python 3 syntax."


def require_bfcl(source: str = "params.yaml", key: str = "environment.kind") -> Any:
    """The ``bfcl_eval`` package, or a :class:`ConfigError` that says how to install it."""
    try:
        import bfcl_eval
    except ImportError:
        raise ConfigError(source, key, f"bfcl needs the bfcl-eval package, which is not installed: {INSTALL_HINT}") from None
    return bfcl_eval


def bfcl_version() -> str:
    """The installed ``bfcl-eval`` version."""
    return metadata.version("bfcl-eval")


def _data() -> Path:
    return Path(require_bfcl().__file__).parent / "data"


@functools.cache
def _constants() -> tuple[str, tuple[str, ...], dict[str, str], dict[str, str], dict[str, str], str]:
    require_bfcl()
    from bfcl_eval.constants.category_mapping import MULTI_TURN_CATEGORY, VERSION_PREFIX
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    from bfcl_eval.constants.executable_backend_config import (
        CLASS_FILE_PATH_MAPPING,
        MULTI_TURN_FUNC_DOC_FILE_MAPPING,
    )
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    return (VERSION_PREFIX, tuple(MULTI_TURN_CATEGORY), dict(CLASS_FILE_PATH_MAPPING),
            dict(MULTI_TURN_FUNC_DOC_FILE_MAPPING), dict(GORILLA_TO_OPENAPI), DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)


def categories() -> tuple[str, ...]:
    """The multi-turn categories the installed BFCL ships (``MULTI_TURN_CATEGORY``)."""
    return _constants()[1]


def check_categories(names: Sequence[str], source: str = "params.yaml") -> None:
    """Refuse a category BFCL does not ship, or one whose classes need a network or a model
    (the web search and memory classes); the error names ``environment.categories[i]``."""
    shipped = categories()
    if not names:
        raise ConfigError(source, "environment.categories", f"name at least one of {list(shipped)}")
    for i, name in enumerate(names):
        if name not in shipped:
            raise ConfigError(source, f"environment.categories[{i}]", f"{name!r} is not a multi-turn category of bfcl-eval "
                              f"{bfcl_version()}{did_you_mean(name, shipped)}; expected some of {list(shipped)}")
        for entry in load_entries(name):
            for cls in entry.classes:
                problem = _class_problem(cls)
                if problem is not None:
                    raise ConfigError(source, f"environment.categories[{i}]", f"{name!r}: entry {entry.id} needs {cls}, "
                                      f"which canarykit does not run: {problem}")


def _class_problem(cls: str) -> str | None:
    """Why a class cannot run offline in-process (None: it can)."""
    modules = _constants()[2]
    if cls not in modules:
        return "bfcl-eval has no module for it"
    if cls.startswith(("WebSearch", "MemoryAPI")):
        return "it reaches the network or loads a model"
    try:
        importlib.import_module(modules[cls])
    except ImportError as exc:
        return f"its module does not import ({exc}); {INSTALL_HINT}"
    return None


@dataclass(frozen=True)
class Entry:
    """One BFCL multi-turn entry and its ground truth, as BFCL ships them."""

    id: str
    category: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    initial_config: dict[str, Any]
    classes: tuple[str, ...]
    ground_truth: tuple[tuple[str, ...], ...]
    missed: dict[str, tuple[str, ...]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise InputError(str(path), f"line {i}", f"not JSON: {exc}") from None
    return out


@functools.cache
def load_entries(category: str) -> tuple[Entry, ...]:
    """The entries of one multi-turn category with their ground truth, in BFCL's order."""
    prefix = _constants()[0]
    data = _data()
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(data / "possible_answer" / f"{prefix}_{category}.json")}
    out = []
    for e in _jsonl(data / f"{prefix}_{category}.json"):
        if e["id"] not in answers:
            raise InputError(str(data / "possible_answer" / f"{prefix}_{category}.json"), e["id"], "no ground truth")
        out.append(Entry(
            id=str(e["id"]), category=category, turns=tuple(tuple(t) for t in e["question"]),
            initial_config=e.get("initial_config") or {}, classes=tuple(e["involved_classes"]),
            ground_truth=tuple(tuple(t) for t in answers[e["id"]]),
            missed={str(k): tuple(v) for k, v in (e.get("missed_function") or {}).items()},
        ))
    return tuple(out)


@functools.cache
def function_docs(cls: str) -> tuple[dict[str, Any], ...]:
    """BFCL's function docs of a class."""
    return tuple(_jsonl(_data() / "multi_turn_func_doc" / _constants()[3][cls]))


@functools.cache
def bfcl_class(cls: str) -> type:
    """The class itself (its module imported: stdlib and mpmath only)."""
    return getattr(importlib.import_module(_constants()[2][cls]), cls)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- tools


def _cast(properties: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's cast of parameter types to JSON Schema (its ``_cast_to_openai_type``, with its
    table), on a copy."""
    table = _constants()[4]
    out: dict[str, Any] = {}
    for key, spec in properties.items():
        spec = dict(spec)
        typ = spec.get("type")
        if typ is None:
            spec["type"] = "string"
        else:
            if typ == "float":
                spec["format"] = "float"
                spec["description"] = str(spec.get("description", "")) + " This is a float type value."
            spec["type"] = table.get(typ, "string")
        if spec["type"] in ("array", "object"):
            if "properties" in spec:
                spec["properties"] = _cast(spec["properties"])
            elif isinstance(spec.get("items"), Mapping):
                items = dict(spec["items"])
                items["type"] = table.get(str(items.get("type")), "string")
                if items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast(items["properties"])
                spec["items"] = items
        out[key] = spec
    return out


def input_schema(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A function doc's parameters as a JSON Schema object."""
    params = doc.get("parameters") or {}
    schema: dict[str, Any] = {"type": "object", "properties": _cast(params.get("properties") or {})}
    if params.get("required"):
        schema["required"] = list(params["required"])
    return schema


def tool_definitions(classes: Iterable[str], annotations: Mapping[str, Mapping[str, bool]] | None = None) -> list[dict[str, Any]]:
    """The tools of ``classes`` (class order, then BFCL's function order), each with its
    annotations when given (:func:`annotations_for`)."""
    out = []
    for cls in classes:
        for doc in function_docs(cls):
            name = str(doc["name"])
            tool: dict[str, Any] = {"name": name, "description": str(doc["description"]) + PYTHON_HINT,
                                    "inputSchema": input_schema(doc)}
            if annotations is not None:
                tool["annotations"] = dict(annotations[name])
            out.append({**tool, "server": cls})
    return out


# --------------------------------------------------------------------------- ground truth calls


def _method(cls: str, name: str) -> Any:
    fn = getattr(bfcl_class(cls), name, None)
    if fn is None or name.startswith("_") or not callable(fn):
        raise ValueError(f"{cls} has no function {name!r}")
    return fn


def parse_call(text: str, owner: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call (``cd(folder='document')``, ``sort('report.pdf')``) as (function,
    keyword arguments): literal values only, positional arguments named from the signature of
    the method of the class that owns it (``owner``: function -> class)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    name = node.func.id
    if name not in owner:
        raise ValueError(f"{name!r} is not a function of the entry's classes")
    params = [p for p in inspect.signature(_method(owner[name], name)).parameters.values() if p.name != "self"]
    args: dict[str, Any] = {}
    for i, arg in enumerate(node.args):
        if i >= len(params):
            raise ValueError(f"{text!r}: more positional arguments than {name} takes")
        args[params[i].name] = ast.literal_eval(arg)
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"{text!r}: **arguments are not literal")
        args[kw.arg] = ast.literal_eval(kw.value)
    return name, json.loads(json.dumps(args))  # the JSON a model would send (tuples become lists)


def call_string(name: str, args: Mapping[str, Any]) -> str:
    """A call as BFCL writes a function-calling model's call for its checker
    (``convert_to_function_call``: keyword arguments, values as Python literals)."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"


# --------------------------------------------------------------------------- annotations


def _leaves(value: Any, path: str, out: dict[str, Any], seen: dict[int, str]) -> None:
    """The state under ``value`` flattened to path -> leaf: objects by their attributes, an
    object met again (a tree's parent link, a working-directory pointer) as a reference to
    where it was first met, a random generator by its state."""
    if isinstance(value, dict) or (hasattr(value, "__dict__") and not isinstance(value, type)
                                   and not hasattr(value, "randint")):
        if id(value) in seen:
            out[path] = ("ref", seen[id(value)])
            return
        seen[id(value)] = path
        items = value.items() if isinstance(value, dict) else vars(value).items()
        for k, v in items:
            _leaves(v, f"{path}/{k}", out, seen)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _leaves(v, f"{path}[{i}]", out, seen)
    elif hasattr(value, "getstate") and hasattr(value, "randint"):
        out[path] = repr(value.getstate())
    else:
        out[path] = value


def state_leaves(instance: Any, *, public: bool = False) -> dict[str, Any]:
    """An instance's state as path -> leaf (``public``: BFCL's checked attributes only)."""
    out: dict[str, Any] = {}
    seen: dict[int, str] = {}
    for k, v in vars(instance).items():
        if not (public and k.startswith("_")):
            _leaves(v, k, out, seen)
    return out


def new_instance(cls: str, initial_config: Mapping[str, Any], long_context: bool = False) -> Any:
    """A class instance at an entry's starting state (as BFCL's executor makes it)."""
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    instance = bfcl_class(cls)()
    if cls not in STATELESS_CLASSES:
        instance._load_scenario(copy.deepcopy(dict(initial_config.get(cls) or {})), long_context=long_context)
    return instance


@functools.cache
def measure_annotations() -> dict[str, dict[str, bool]]:
    """Per function, its measured MCP hints (module docstring): every ground-truth call of
    every category the installed BFCL ships, replayed on its entry's classes, the instance's
    state compared before and after each call."""
    writes: dict[str, bool] = {}
    destructive: dict[str, bool] = {}
    for category in categories():
        for entry in load_entries(category):
            if any(_class_problem(c) is not None for c in entry.classes):
                continue
            instances = {c: new_instance(c, entry.initial_config) for c in entry.classes}
            owner = _owners(entry.classes)
            for text in (t for turn in entry.ground_truth for t in turn):
                try:
                    name, args = parse_call(text, owner)
                except (ValueError, SyntaxError):
                    continue
                instance = instances[owner[name]]
                before, public = state_leaves(instance), state_leaves(instance, public=True)
                with contextlib.suppress(Exception):  # a failing call is still a call: its state is compared
                    getattr(instance, name)(**args)
                after = state_leaves(instance)
                writes[name] = writes.get(name, False) or after != before
                gone = set(public) - set(state_leaves(instance, public=True))
                destructive[name] = destructive.get(name, False) or bool(gone)
    return {name: {"readOnlyHint": not w, "destructiveHint": bool(destructive.get(name)) and w}
            for name, w in sorted(writes.items())}


def _owners(classes: Iterable[str]) -> dict[str, str]:
    return {str(d["name"]): cls for cls in classes for d in function_docs(cls)}


def annotations_for(classes: Iterable[str]) -> dict[str, dict[str, bool]]:
    """The hints of every function of ``classes``: measured (:func:`measure_annotations`),
    the world from :data:`CLOSED_WORLDS`; a function no ground truth calls declares
    ``readOnlyHint: false`` (it may write)."""
    measured = measure_annotations()
    out = {}
    for cls in classes:
        for d in function_docs(cls):
            hints = dict(measured.get(str(d["name"]), {"readOnlyHint": False, "destructiveHint": False}))
            hints["openWorldHint"] = cls not in CLOSED_WORLDS
            out[str(d["name"])] = hints
    return out


# --------------------------------------------------------------------------- tasks


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    import jsonschema

    schema = json.loads(schema_json)
    return jsonschema.validators.validator_for(schema)(schema)


@dataclass(frozen=True)
class Skipped:
    """An entry not run, and why."""

    id: str
    category: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "category": self.category, "reason": self.reason}


def _difficulty(n_calls: int) -> str:
    return "easy" if n_calls <= 1 else "medium" if n_calls == 2 else "hard"


def entry_task(entry: Entry, schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The task-file object of one entry (module docstring); ``ValueError`` says why the entry
    cannot be a task. ``schemas``: tool name -> input schema (checks the ground truth)."""
    owner = _owners(entry.classes)
    held = {name: int(turn) for turn, names in entry.missed.items() for name in names}
    messages = []
    for i, turn in enumerate(entry.turns):
        if not turn:
            if str(i) not in entry.missed:
                raise ValueError(f"user turn {i} is empty and adds no function")
            messages.append(_constants()[5])
            continue
        if len(turn) != 1 or turn[0].get("role") != "user" or not str(turn[0].get("content") or "").strip():
            raise ValueError(f"user turn {i} is not one user message")
        messages.append(str(turn[0]["content"]))
    if len(entry.ground_truth) != len(messages):
        raise ValueError(f"{len(messages)} user turns but ground truth for {len(entry.ground_truth)}")
    plan = []
    for k, calls in enumerate(entry.ground_truth):
        for text in calls:
            try:
                name, args = parse_call(text, owner)
            except (ValueError, SyntaxError) as exc:
                raise ValueError(f"ground truth {text!r} cannot be read: {exc}") from None
            err = next(iter(_validator(json.dumps(schemas[name], sort_keys=True)).iter_errors(args)), None)
            if err is not None:
                raise ValueError(f"ground truth {text!r} does not fit {name}'s schema: {err.message}")
            if k < held.get(name, 0):
                raise ValueError(f"ground truth {text!r} of user turn {k} calls {name}, which BFCL holds back "
                                 f"until user turn {held[name]}")
            plan.append({"tool": name, "args": args, **({"turn": k} if k else {})})
    if not plan:
        raise ValueError("the ground truth calls no function")
    task: dict[str, Any] = {
        "id": entry.id, "difficulty": _difficulty(len(plan)), "prompt": messages[0],
        "correct_tools": list(dict.fromkeys(s["tool"] for s in plan)), "declared_types": list(CANARY_TYPES),
        "plan": plan, "tools": list(owner),
        "setup": {"bfcl": {"id": entry.id, "category": entry.category, "involved_classes": list(entry.classes),
                           "initial_config": entry.initial_config, "ground_truth": [list(t) for t in entry.ground_truth],
                           "long_context": "long_context" in entry.category}},
    }
    if messages[1:]:
        task["follow_ups"] = messages[1:]
    if held:
        task["tools_from"] = held
    return task


@dataclass(frozen=True)
class TaskSuite:
    """The entries of some categories as canarykit tools (without their annotations:
    :meth:`annotated_tools` measures them) and a task document, with the entries skipped and why."""

    categories: tuple[str, ...]
    tools: list[dict[str, Any]]
    document: dict[str, Any]
    skipped: tuple[Skipped, ...]
    entries: int

    def annotated_tools(self) -> list[dict[str, Any]]:
        """The tools with their MCP hints (:func:`annotations_for`; seconds: it replays every
        ground truth BFCL ships)."""
        classes = list(dict.fromkeys(str(t["server"]) for t in self.tools))
        return tool_definitions(classes, annotations_for(classes))

    def summary(self) -> dict[str, Any]:
        """What the tools document says of the suite (``bfcl`` key)."""
        return {"version": bfcl_version(), "categories": list(self.categories), "entries": self.entries,
                "tasks": len(self.document["tasks"]), "skipped": [s.to_dict() for s in self.skipped],
                "classes": list(dict.fromkeys(str(t["server"]) for t in self.tools))}


@functools.cache
def _suite(names: tuple[str, ...]) -> TaskSuite:
    entries = [e for c in names for e in load_entries(c)]
    classes = list(dict.fromkeys(c for e in entries for c in e.classes))
    tools = tool_definitions(classes)
    schemas = {str(t["name"]): t["inputSchema"] for t in tools}
    tasks, skipped = [], []
    for e in entries:
        try:
            tasks.append(entry_task(e, schemas))
        except ValueError as exc:
            skipped.append(Skipped(e.id, e.category, str(exc)))
    return TaskSuite(names, tools, {"version": "1", "tasks": tasks}, tuple(skipped), len(entries))


def task_suite(names: Sequence[str], source: str = "params.yaml") -> TaskSuite:
    """The tools and tasks of ``environment.categories`` (checked: :func:`check_categories`)."""
    check_categories(names, source)
    return copy.deepcopy(_suite(tuple(dict.fromkeys(names))))
