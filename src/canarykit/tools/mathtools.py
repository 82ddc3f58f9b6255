"""The math server: a safe arithmetic evaluator, exact unit conversion and descriptive statistics.

``calculate`` parses the expression with :mod:`ast` and walks a whitelist of node types (it
never calls ``eval``); sizes are bounded so ``9**9**9`` is refused instead of hanging.
``convert_units`` uses :class:`decimal.Decimal` factors, so 5 mi is exactly 8.04672 km.
"""

from __future__ import annotations

import ast
import math
import re
import statistics
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Any, Final

from ._common import ToolError, tidy

MAX_EXPRESSION_CHARS: Final = 500
MAX_MAGNITUDE: Final = 1e100
MAX_NODES: Final = 200

_FUNCS: Final[dict[str, tuple[Callable[..., float], int, int]]] = {
    # name: (function, min args, max args)
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (round, 1, 2),
    "min": (min, 1, 50),
    "max": (max, 1, 50),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "exp": (math.exp, 1, 1),
    "log": (math.log, 1, 2),
    "log10": (math.log10, 1, 1),
    "log2": (math.log2, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "pow": (pow, 2, 2),
}
_CONSTS: Final[dict[str, float]] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _check(x: float) -> float:
    if isinstance(x, float) and not math.isfinite(x):
        raise ToolError("the result is not a finite number")
    if abs(x) > MAX_MAGNITUDE:
        raise ToolError(f"intermediate result exceeds the supported magnitude (1e100): {float(x):.3e}")
    return x


def _power(base: float, exp: float) -> float:
    if base == 0 and exp < 0:
        raise ToolError("division by zero (0 raised to a negative power)")
    if abs(exp) > 10_000:
        raise ToolError(f"exponent {exp} is too large (limit 10000)")
    if abs(base) > 1 and exp > 0 and exp * math.log10(abs(base)) > 100:
        raise ToolError("result of the power is too large (limit 1e100)")
    if base < 0 and not float(exp).is_integer():
        raise ToolError("a negative number cannot be raised to a fractional power")
    return _check(base**exp)


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"unsupported literal {node.value!r}: only numbers are allowed")
        return _check(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.BitXor):
            raise ToolError("'^' is not a power operator here; write powers as a ** b")
        left = _eval(node.left)
        right = _eval(node.right)
        op = node.op
        if isinstance(op, ast.Add):
            return _check(left + right)
        if isinstance(op, ast.Sub):
            return _check(left - right)
        if isinstance(op, ast.Mult):
            return _check(left * right)
        if isinstance(op, ast.Div | ast.FloorDiv | ast.Mod):
            if right == 0:
                raise ToolError("division by zero")
            if isinstance(op, ast.Div):
                return _check(left / right)
            return _check(left // right if isinstance(op, ast.FloorDiv) else left % right)
        if isinstance(op, ast.Pow):
            return _power(left, right)
        raise ToolError(f"unsupported operator {type(op).__name__}")
    if isinstance(node, ast.Name):
        if node.id in _CONSTS:
            return _CONSTS[node.id]
        raise ToolError(f"unknown name {node.id!r}; constants: {', '.join(sorted(_CONSTS))}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
            shown = ast.unparse(node.func)
            raise ToolError(f"unknown function {shown!r}; allowed: {', '.join(sorted(_FUNCS))}")
        if node.keywords:
            raise ToolError("keyword arguments are not supported")
        fn, lo, hi = _FUNCS[node.func.id]
        if not lo <= len(node.args) <= hi:
            raise ToolError(f"{node.func.id}() takes {lo}-{hi} arguments, got {len(node.args)}")
        args = [_eval(a) for a in node.args]
        if node.func.id == "pow":
            return _power(args[0], args[1])
        if node.func.id == "round" and len(args) == 2:
            args[1] = int(args[1])
        try:
            return _check(fn(*args))
        except (ValueError, OverflowError) as exc:
            raise ToolError(f"{node.func.id}() math error: {exc}") from exc
    raise ToolError(f"unsupported syntax: {type(node).__name__}")


def calculate(expression: str) -> dict[str, Any]:
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("−", "-")
    if not text:
        raise ToolError("expression must not be empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    text = text.replace(",", "") if _looks_grouped(text) else text
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"could not parse expression: {exc.msg}") from exc
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError(f"expression is too complex (more than {MAX_NODES} syntax nodes)")
    value = _eval(tree)
    return {"expression": expression, "result": tidy(float(value)) if isinstance(value, float) else value}


def _looks_grouped(text: str) -> bool:
    """True when commas are thousands separators (``1,250.50``) rather than argument separators."""
    return "(" not in text and re.search(r"\d,\d{3}(?!\d)", text) is not None


# ---------------------------------------------------------------- unit conversion

_D = Decimal
_LINEAR: Final[dict[str, dict[str, Decimal]]] = {
    # category: unit -> size of the unit in the category's base unit
    "length": {"m": _D(1), "km": _D(1000), "cm": _D("0.01"), "mm": _D("0.001"), "um": _D("0.000001"),
               "mi": _D("1609.344"), "yd": _D("0.9144"), "ft": _D("0.3048"), "in": _D("0.0254"),
               "nmi": _D(1852)},
    "mass": {"kg": _D(1), "g": _D("0.001"), "mg": _D("0.000001"), "t": _D(1000),
             "lb": _D("0.45359237"), "oz": _D("0.028349523125"), "st": _D("6.35029318")},
    "volume": {"l": _D(1), "ml": _D("0.001"), "m3": _D(1000), "cm3": _D("0.001"),
               "gal": _D("3.785411784"), "qt": _D("0.946352946"), "pt": _D("0.473176473"),
               "cup": _D("0.2365882365"), "fl_oz": _D("0.0295735295625"), "imp_gal": _D("4.54609"),
               "tbsp": _D("0.01478676478125"), "tsp": _D("0.00492892159375")},
    "speed": {"m/s": _D(1), "km/h": _D(1000) / _D(3600), "mph": _D("1609.344") / _D(3600),
              "knot": _D(1852) / _D(3600), "ft/s": _D("0.3048")},
    "area": {"m2": _D(1), "km2": _D(1_000_000), "cm2": _D("0.0001"), "ha": _D(10_000),
             "acre": _D("4046.8564224"), "ft2": _D("0.09290304"), "mi2": _D("2589988.110336"),
             "in2": _D("0.00064516"), "yd2": _D("0.83612736")},
    "time": {"s": _D(1), "ms": _D("0.001"), "min": _D(60), "h": _D(3600), "day": _D(86400),
             "week": _D(604800), "year": _D(31557600)},
    "data": {"bit": _D(1) / _D(8), "B": _D(1), "kB": _D(1000), "MB": _D(10**6), "GB": _D(10**9),
             "TB": _D(10**12), "KiB": _D(1024), "MiB": _D(1024**2), "GiB": _D(1024**3),
             "TiB": _D(1024**4)},
}
_TEMPERATURE: Final[tuple[str, ...]] = ("C", "F", "K")

_ALIASES: Final[dict[str, str]] = {
    # length
    "meter": "m", "meters": "m", "metre": "m", "metres": "m", "kilometer": "km", "kilometers": "km",
    "kilometre": "km", "kilometres": "km", "centimeter": "cm", "centimeters": "cm", "centimetre": "cm",
    "centimetres": "cm", "millimeter": "mm", "millimeters": "mm", "millimetre": "mm", "millimetres": "mm",
    "µm": "um", "micrometer": "um", "micrometre": "um", "mile": "mi", "miles": "mi", "yard": "yd",
    "yards": "yd", "foot": "ft", "feet": "ft", "inch": "in", "inches": "in", "nautical mile": "nmi",
    "nautical miles": "nmi",
    # mass
    "kilogram": "kg", "kilograms": "kg", "gram": "g", "grams": "g", "milligram": "mg",
    "milligrams": "mg", "tonne": "t", "tonnes": "t", "metric ton": "t", "pound": "lb", "pounds": "lb",
    "lbs": "lb", "ounce": "oz", "ounces": "oz", "stone": "st",
    # volume
    "liter": "l", "liters": "l", "litre": "l", "litres": "l", "milliliter": "ml", "milliliters": "ml",
    "millilitre": "ml", "millilitres": "ml", "m³": "m3", "cubic meter": "m3", "cubic metre": "m3",
    "cm³": "cm3", "cc": "cm3", "gallon": "gal", "gallons": "gal", "us gallon": "gal", "quart": "qt",
    "quarts": "qt", "pint": "pt", "pints": "pt", "cups": "cup", "fl oz": "fl_oz",
    "fluid ounce": "fl_oz", "fluid ounces": "fl_oz", "imperial gallon": "imp_gal",
    "tablespoon": "tbsp", "tablespoons": "tbsp", "teaspoon": "tsp", "teaspoons": "tsp",
    # speed
    "mps": "m/s", "meters per second": "m/s", "kph": "km/h", "kmh": "km/h", "km/hr": "km/h",
    "kilometers per hour": "km/h", "kilometres per hour": "km/h", "miles per hour": "mph",
    "knots": "knot", "kn": "knot", "kt": "knot", "fps": "ft/s",
    # area
    "m^2": "m2", "m²": "m2", "sq m": "m2", "square meters": "m2", "square metres": "m2",
    "km^2": "km2", "km²": "km2", "sq km": "km2", "square kilometers": "km2", "square kilometres": "km2",
    "cm^2": "cm2", "cm²": "cm2", "hectare": "ha", "hectares": "ha", "acres": "acre",
    "ft^2": "ft2", "ft²": "ft2", "sq ft": "ft2", "square feet": "ft2", "mi^2": "mi2", "mi²": "mi2",
    "sq mi": "mi2", "square miles": "mi2", "in^2": "in2", "in²": "in2", "sq in": "in2",
    "yd^2": "yd2", "yd²": "yd2", "sq yd": "yd2",
    # time
    "sec": "s", "second": "s", "seconds": "s", "millisecond": "ms", "milliseconds": "ms",
    "minute": "min", "minutes": "min", "hr": "h", "hour": "h", "hours": "h", "days": "day",
    "d": "day", "weeks": "week", "wk": "week", "years": "year", "yr": "year",
    # data
    "bits": "bit", "byte": "B", "bytes": "B", "kb": "kB", "mb": "MB", "gb": "GB", "tb": "TB",
    "kib": "KiB", "mib": "MiB", "gib": "GiB", "tib": "TiB", "kilobyte": "kB", "kilobytes": "kB",
    "megabyte": "MB", "megabytes": "MB", "gigabyte": "GB", "gigabytes": "GB", "terabyte": "TB",
    "terabytes": "TB",
    # temperature
    "c": "C", "°c": "C", "celsius": "C", "degc": "C", "f": "F", "°f": "F", "fahrenheit": "F",
    "degf": "F", "k": "K", "kelvin": "K",
}

_CATEGORY: Final[dict[str, str]] = {u: cat for cat, units in _LINEAR.items() for u in units} | {
    t: "temperature" for t in _TEMPERATURE
}
_LOWER: Final[dict[str, str]] = {u.lower(): u for u in _CATEGORY if u.lower() not in ("mb", "b")}


def _unit(raw: str, field: str) -> str:
    text = " ".join(raw.strip().split())
    if text in _CATEGORY:
        return text
    low = text.lower()
    if low in _ALIASES:
        return _ALIASES[low]
    if low in _LOWER:
        return _LOWER[low]
    raise ToolError(
        f"unknown unit {raw!r} for {field}; supported units: "
        + "; ".join(f"{cat}: {', '.join(units)}" for cat, units in _LINEAR.items())
        + "; temperature: C, F, K"
    )


def _to_kelvin(v: Decimal, unit: str) -> Decimal:
    if unit == "C":
        return v + _D("273.15")
    if unit == "F":
        return (v - 32) * 5 / 9 + _D("273.15")
    return v


def _from_kelvin(k: Decimal, unit: str) -> Decimal:
    if unit == "C":
        return k - _D("273.15")
    if unit == "F":
        return (k - _D("273.15")) * 9 / 5 + 32
    return k


def convert_units(value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
    if not math.isfinite(value):
        raise ToolError("value must be a finite number")
    src = _unit(from_unit, "from_unit")
    dst = _unit(to_unit, "to_unit")
    cat_src, cat_dst = _CATEGORY[src], _CATEGORY[dst]
    if cat_src != cat_dst:
        raise ToolError(f"cannot convert {cat_src} ({src}) to {cat_dst} ({dst})")
    with localcontext() as ctx:
        ctx.prec = 40
        v = _D(repr(float(value))) if isinstance(value, float) else _D(value)
        if cat_src == "temperature":
            kelvin = _to_kelvin(v, src)
            if kelvin < 0:
                raise ToolError(f"{value} {src} is below absolute zero")
            out = _from_kelvin(kelvin, dst)
        else:
            out = v * _LINEAR[cat_src][src] / _LINEAR[cat_src][dst]
        result = tidy(float(out))
    return {
        "value": value,
        "from_unit": src,
        "to_unit": dst,
        "category": cat_src,
        "result": result,
    }


def compute_statistics(values: list[float]) -> dict[str, Any]:
    if not values:
        raise ToolError("values must contain at least one number")
    if any(not math.isfinite(v) for v in values):
        raise ToolError("values must all be finite numbers")
    data = [float(v) for v in values]
    n = len(data)
    stdev = statistics.stdev(data) if n > 1 else None
    return {
        "count": n,
        "sum": tidy(math.fsum(data)),
        "mean": tidy(statistics.fmean(data)),
        "median": tidy(statistics.median(data)),
        "min": tidy(min(data)),
        "max": tidy(max(data)),
        "range": tidy(max(data) - min(data)),
        "stdev": None if stdev is None else tidy(stdev),
        "population_stdev": tidy(statistics.pstdev(data)),
        "stdev_note": "stdev uses n-1 (Bessel's correction); population_stdev uses n",
    }
