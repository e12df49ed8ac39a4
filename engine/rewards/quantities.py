"""Numbers in financial answers: extract them with their scale and unit, and compare them.

"$1,577 million", "1577.00" (when the question asks for USD millions) and "$1.577 billion"
are the same quantity; "1,577" and "15.77" are not. A number without a scale word is
ambiguous about its scale unless the question names one ("in USD millions"), so it may
match a scaled number at any power of a thousand, but never a different number of digits.
`same_quantity` ignores signs ("capex of $1,577 million" and "(1,577)" in a cash-flow
statement describe the same amount: the teacher uses it to find a figure in a document).
The judge is stricter: `agree` compares an answer's figure with the truth's within the
truth's precision, with units, and each Quantity carries the sign it was written with.
"""

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal

SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
    "t": 1e12,
}

_NUMBER = re.compile(
    r"""
    (?P<currency>[$€£¥]|\busd\b|\bus\$|\beur\b|\bgbp\b)?\s?
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?
        |\d{2,3}(?:[\u00a0\u202f\u2009\ ]\d{3})+(?![\d.,])  # "15 000"; not "2 500 mg tablets"
        |\d+(?:\.\d+)?|\.\d+)
    (?:\s?(?P<scale>thousand|million|billion|trillion|mn|mm(?!\s?hg\b)|bn|tn|k|m|b|t)\b)?
    (?:\s?(?P<unit>%|percent\b|per\s?cent\b|percentage\s+points?\b|pp\b|bps\b|basis\s+points?\b))?
    """,
    re.IGNORECASE | re.VERBOSE,
)
# Dates are not quantities: "January 28, 2023" would otherwise add 28 and 2023.
_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,\s*\d{{4}})?\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\.?(?:,?\s*\d{{4}})?\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|(?<![\d/])\d{1,2}/\d{1,2}/\d{4}(?![\d/])",
    re.I,
)
# Period labels are not quantities either: "the 12 months ended", "52 weeks ending".
_PERIOD = re.compile(r"\b\d{1,3}\s+(?:months?|weeks?|days?)\s+end(?:ed|ing)\b", re.I)
# Glued to a word or a label on either side (checked at a position: no slicing, so linear).
_GLUED_BEFORE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.")
_GLUED_AFTER = re.compile(r"(?!x\b)[A-Za-z0-9_]|-[A-Za-z]", re.I)
_SCALE_HINT = re.compile(
    r"(?:\bin\b|\busd\b|\$)\s*(?:usd\s*|us\s*dollars?\s*)?(thousand|million|billion)s?\b", re.I
)
# Float noise only: a figure off in its last digit is a different figure (rounding is below),
# however many digits it has ("37,990" is not 37,987).
RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Quantity:
    """One number as written: its digits, its precision, its scale and its kind."""

    mantissa: float
    decimals: int  # digits after the point; negative for trailing zeros ("1,600" -> -2)
    factor: float | None  # None when no scale was written or implied: it could be any
    kind: str  # "percent", "money" or "plain"
    text: str
    # Written with a minus sign or in parentheses (-1), a plus sign (+1), or neither (0).
    sign: int = 0
    # A unit of measure written after it ("hours", "kg", "°C"), as (dimension, multiplier).
    unit: tuple[str, float] | None = None
    start: int = 0  # where it was written (including a sign or parentheses)
    end: int = 0
    # The currency written with it ("$", "€", "£", "¥"), or "" when none was.
    currency: str = ""

    @property
    def significant_digits(self) -> int:
        digits = re.sub(r"\D", "", self.text)
        digits = digits.lstrip("0")
        if self.decimals <= 0:
            digits = digits.rstrip("0")
        return max(len(digits), 1)


def scale_hint(question: str) -> float | None:
    """The scale a question asks its answer in ("in USD millions" -> 1e6), if any."""
    match = _SCALE_HINT.search(question or "")
    return SCALES[match.group(1).lower()] if match else None


def extract_quantities(text: str, hint: float | None = None) -> list[Quantity]:
    """Every number in `text` that is a quantity (years, dates and labels like FY2023 are not).
    Numbers written as words are not; `words_to_digits` first makes them digits.

    Linear in the length of `text`: every check looks at the characters next to a match."""
    text = _PERIOD.sub(_blank, _DATE.sub(_blank, text or ""))
    found = []
    for match in _NUMBER.finditer(text):
        number = match.group("num")
        currency = match.group("currency")
        scale = (match.group("scale") or "").lower()
        unit = (match.group("unit") or "").lower()
        end = match.end()
        if len(scale) == 1 and not currency and match.group("scale") != "k":
            # "3M" is a company and "5 m" a length; "$5m" is money, and "12.4k" thousands
            # ("300K" may be kelvins).
            scale, unit, end = "", "", match.end("num")
        # Glued to a word or a label: Q2, FY2023, 10-K, 2nd, 3M (but 1.7x is a ratio).
        start = match.start("num")
        if start and text[start - 1] in _GLUED_BEFORE and not currency:
            continue
        measure = _measure(text, end) if not unit and not currency else None
        if not unit and not measure and _GLUED_AFTER.match(text, end):
            continue
        plain_digits = re.sub(r"[,\u00a0\u202f\u2009 ]", "", number)
        if (
            not currency
            and not scale
            and not unit
            and re.fullmatch(r"(19|20)\d\d", plain_digits)
            and "," not in number
        ):
            continue  # a year
        mantissa = float(plain_digits)
        if "." in plain_digits:
            decimals = len(plain_digits.split(".")[1])
        else:
            decimals = -(len(plain_digits) - len(plain_digits.rstrip("0"))) if mantissa else 0
        if unit in {"bps", "basis point", "basis points"}:
            kind, mantissa, decimals = "percent", mantissa / 100, decimals + 2
        elif unit:
            kind = "percent"
        else:
            kind = "money" if currency else "plain"
        factor = SCALES[scale] if scale else None
        if factor is None and kind != "percent" and hint is not None:
            factor = hint
        if kind == "percent":
            factor = 1.0
        begin = match.start("currency") if currency else start
        money = _CURRENCIES.get((currency or "").lower().replace(" ", ""), "")
        if not money and not measure:
            named = _CURRENCY_AFTER.match(text, end)
            if named:
                # "7 million dollars", "7 million euros": money in words.
                said = named.group(1).lower()
                money, kind, end = _CURRENCIES.get(said, ""), "money", named.end()
                if said in _HUNDREDTHS:
                    money, factor = _HUNDREDTHS[said], (factor or 1.0) * 0.01
        sign, first, last = _sign(text, begin, measure[2] if measure else end)
        if factor is None and sign < 0 and text[last - 1 : last] != ")":
            # "(75) million": the scale written after the accounts' parentheses.
            closing = _CLOSING.match(text, end)
            if closing and closing.group("scale"):
                factor = SCALES[closing.group("scale").lower()]
        found.append(
            Quantity(
                mantissa,
                decimals,
                factor,
                kind,
                match.group(0).strip(),
                sign,
                measure[:2] if measure else None,
                first,
                last,
                money,
            )
        )
    return found


# The currencies written before a figure, and in words after one, by their sign.
_CURRENCIES = {
    "$": "$",
    "usd": "$",
    "us$": "$",
    "dollar": "$",
    "dollars": "$",
    "€": "€",
    "eur": "€",
    "euro": "€",
    "euros": "€",
    "£": "£",
    "gbp": "£",
    "sterling": "£",
    "¥": "¥",
    "yen": "¥",
}
_CURRENCY_AFTER = re.compile(
    r"\s+(?:(?:us|u\.s\.|american)\s+)?(dollars?|euros?|sterling|yen|cents?|pence)\b", re.I
)
# A currency's hundredth, said after the figure: "24 cents" is $0.24, "30 pence" £0.30.
_HUNDREDTHS = {"cent": "$", "cents": "$", "pence": "£"}


def _blank(match: re.Match) -> str:
    # Same length, so that positions in the text stay those of the text given.
    return " " * len(match.group(0))


_CLOSING = re.compile(
    r"\s*\)(?:\s*(?P<scale>thousand|million|billion|trillion|mn|mm|bn|tn|k|m|b)\b)?", re.I
)
_CURRENCY_BEFORE = re.compile(r"[$€£¥]\s*$|\b(?:usd|eur|gbp)\s*$", re.I)


def _sign(text: str, start: int, end: int) -> tuple[int, int, int]:
    """The sign written around a number and the span it covers: "-75", "(75)", "$(75)",
    "+12%". A hyphen glued to a word ("carbon-14") is not a minus."""
    first, last = start, end
    while first > 0 and text[first - 1] in "$€£¥":
        first -= 1
    before = text[first - 1] if first > 0 else ""
    if before == "(":
        close = _CLOSING.match(text, end)
        # Accounts write a negative figure in parentheses, "(75) million", "$(3,269)";
        # "Saturn (146)" is an aside.
        if close and (
            first < start or close.group("scale") or _CURRENCY_BEFORE.search(text, 0, first - 1)
        ):
            return -1, first - 1, close.end()
    if before and before in "-−–" and (first < 2 or not text[first - 2].isalnum()):
        return -1, first - 1, last
    if before and before == "+":
        return 1, first - 1, last
    return 0, first, last


# Units of measure: the dimension they measure and their size in that dimension's base, so
# that "1.5 kW" is "1,500 W" but "8 minutes" is not "8 hours". Months and years have no
# fixed number of days, so they are a dimension of their own ("2 years" is "24 months").
_UNITS = {
    **dict.fromkeys(["ns", "nanosecond", "nanoseconds"], ("time", 1e-9)),
    **dict.fromkeys(["µs", "μs", "microsecond", "microseconds"], ("time", 1e-6)),
    **dict.fromkeys(["ms", "msec", "millisecond", "milliseconds"], ("time", 1e-3)),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], ("time", 1.0)),
    **dict.fromkeys(["min", "mins", "minute", "minutes"], ("time", 60.0)),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], ("time", 3600.0)),
    **dict.fromkeys(["day", "days"], ("time", 86400.0)),
    **dict.fromkeys(["week", "weeks", "wk", "wks"], ("time", 604800.0)),
    **dict.fromkeys(["month", "months"], ("month", 1.0)),
    **dict.fromkeys(["year", "years", "yr", "yrs"], ("month", 12.0)),
    **dict.fromkeys(["decade", "decades"], ("month", 120.0)),
    **dict.fromkeys(["century", "centuries"], ("month", 1200.0)),
    **dict.fromkeys(["fortnight", "fortnights"], ("time", 1209600.0)),
    **dict.fromkeys(
        ["mm", "millimeter", "millimeters", "millimetre", "millimetres"], ("length", 1e-3)
    ),
    **dict.fromkeys(
        ["cm", "centimeter", "centimeters", "centimetre", "centimetres"], ("length", 1e-2)
    ),
    **dict.fromkeys(["m", "meter", "meters", "metre", "metres"], ("length", 1.0)),
    **dict.fromkeys(["km", "kilometer", "kilometers", "kilometre", "kilometres"], ("length", 1e3)),
    **dict.fromkeys(["in", "inch", "inches"], ("length", 0.0254)),
    **dict.fromkeys(["ft", "foot", "feet"], ("length", 0.3048)),
    **dict.fromkeys(["mi", "mile", "miles"], ("length", 1609.344)),
    **dict.fromkeys(["nautical mile", "nautical miles", "nmi"], ("length", 1852.0)),
    **dict.fromkeys(["mg", "milligram", "milligrams"], ("mass", 1e-3)),
    **dict.fromkeys(["g", "gram", "grams"], ("mass", 1.0)),
    **dict.fromkeys(["kg", "kilogram", "kilograms"], ("mass", 1e3)),
    **dict.fromkeys(["lb", "lbs", "pound", "pounds"], ("mass", 453.59237)),
    **dict.fromkeys(["oz", "ounce", "ounces"], ("mass", 28.349523125)),
    **dict.fromkeys(
        ["ml", "milliliter", "milliliters", "millilitre", "millilitres"], ("volume", 1e-3)
    ),
    **dict.fromkeys(["l", "liter", "liters", "litre", "litres"], ("volume", 1.0)),
    **dict.fromkeys(["dl", "deciliter", "deciliters", "decilitre", "decilitres"], ("volume", 0.1)),
    **dict.fromkeys(
        ["cc", "cm³", "cm3", "cubic centimetres", "cubic centimeters"], ("volume", 1e-3)
    ),
    **dict.fromkeys(["kl", "kiloliter", "kiloliters", "kilolitre", "kilolitres"], ("volume", 1e3)),
    **dict.fromkeys(["b", "byte", "bytes"], ("data", 1.0)),
    **dict.fromkeys(["kb", "kilobyte", "kilobytes"], ("data", 1e3)),
    **dict.fromkeys(["mb", "megabyte", "megabytes"], ("data", 1e6)),
    **dict.fromkeys(["gb", "gigabyte", "gigabytes"], ("data", 1e9)),
    **dict.fromkeys(["tb", "terabyte", "terabytes"], ("data", 1e12)),
    **dict.fromkeys(["w", "watt", "watts"], ("power", 1.0)),
    **dict.fromkeys(["kw", "kilowatt", "kilowatts"], ("power", 1e3)),
    **dict.fromkeys(["v", "volt", "volts"], ("voltage", 1.0)),
    **dict.fromkeys(["a", "amp", "amps", "ampere", "amperes"], ("current", 1.0)),
    **dict.fromkeys(["mah"], ("charge", 1.0)),
    **dict.fromkeys(["hz", "hertz"], ("frequency", 1.0)),
    **dict.fromkeys(["khz"], ("frequency", 1e3)),
    **dict.fromkeys(["mhz"], ("frequency", 1e6)),
    **dict.fromkeys(["ghz"], ("frequency", 1e9)),
    **dict.fromkeys(["nm", "nanometer", "nanometers", "nanometre", "nanometres"], ("length", 1e-9)),
    **dict.fromkeys(
        ["µm", "μm", "micrometer", "micrometers", "micrometre", "micrometres"], ("length", 1e-6)
    ),
    **dict.fromkeys(["yd", "yard", "yards"], ("length", 0.9144)),
    **dict.fromkeys(["µg", "μg", "mcg", "microgram", "micrograms"], ("mass", 1e-6)),
    **dict.fromkeys(["t", "tonne", "tonnes", "ton", "tons"], ("mass", 1e6)),
    **dict.fromkeys(["ug"], ("mass", 1e-6)),  # "µg" where a keyboard has no µ
    **dict.fromkeys(["gal", "gallon", "gallons"], ("volume", 3.785411784)),
    **dict.fromkeys(
        ["cl", "centiliter", "centiliters", "centilitre", "centilitres"], ("volume", 1e-2)
    ),
    **dict.fromkeys(["pa", "pascal", "pascals"], ("pressure", 1.0)),
    **dict.fromkeys(["kpa", "kilopascal", "kilopascals"], ("pressure", 1e3)),
    **dict.fromkeys(
        ["hpa", "hectopascal", "hectopascals", "mbar", "millibar", "millibars"], ("pressure", 100.0)
    ),
    **dict.fromkeys(["mpa", "megapascal", "megapascals"], ("pressure", 1e6)),
    **dict.fromkeys(["bar", "bars"], ("pressure", 1e5)),
    **dict.fromkeys(["psi"], ("pressure", 6894.757)),
    **dict.fromkeys(["atm"], ("pressure", 101325.0)),
    **dict.fromkeys(["mmhg", "mm hg"], ("pressure", 133.322387415)),
    **dict.fromkeys(["mph"], ("length/time", 0.44704)),
    **dict.fromkeys(["kph", "kmh"], ("length/time", 1 / 3.6)),
    **dict.fromkeys(["knot", "knots"], ("length/time", 1852 / 3600)),
    **dict.fromkeys(["mw", "megawatt", "megawatts"], ("power", 1e6)),
    **dict.fromkeys(["gw", "gigawatt", "gigawatts"], ("power", 1e9)),
    **dict.fromkeys(["wh"], ("energy", 3600.0)),
    **dict.fromkeys(["kwh"], ("energy", 3.6e6)),
    **dict.fromkeys(["j", "joule", "joules"], ("energy", 1.0)),
    **dict.fromkeys(["kj", "kilojoule", "kilojoules"], ("energy", 1e3)),
    **dict.fromkeys(["cal", "calorie", "calories"], ("energy", 4.184)),
    **dict.fromkeys(["kcal", "kilocalorie", "kilocalories"], ("energy", 4184.0)),
    **dict.fromkeys(["mv", "millivolt", "millivolts"], ("voltage", 1e-3)),
    **dict.fromkeys(["kv", "kilovolt", "kilovolts"], ("voltage", 1e3)),
    **dict.fromkeys(["ma", "milliamp", "milliamps"], ("current", 1e-3)),
    **dict.fromkeys(["db", "decibel", "decibels"], ("decibel", 1.0)),
    **dict.fromkeys(["rpm"], ("rotation", 1.0)),
    **dict.fromkeys(["bpm", "beats per minute"], ("beats/time", 1 / 60)),
    **dict.fromkeys(["sv", "sievert", "sieverts"], ("dose", 1.0)),
    **dict.fromkeys(["msv", "millisievert", "millisieverts"], ("dose", 1e-3)),
    **dict.fromkeys(["µsv", "μsv", "usv", "microsievert", "microsieverts"], ("dose", 1e-6)),
    **dict.fromkeys(["µf", "μf", "uf", "microfarad", "microfarads"], ("capacitance", 1e-6)),
    **dict.fromkeys(["nf", "nanofarad", "nanofarads"], ("capacitance", 1e-9)),
    **dict.fromkeys(["pf", "picofarad", "picofarads"], ("capacitance", 1e-12)),
    # Rates of bits are data per second, in bytes: "176 Gbps" is "176 Gbit/s" and "22 GB/s".
    **dict.fromkeys(["kbps"], ("data/time", 125.0)),
    **dict.fromkeys(["mbps"], ("data/time", 1.25e5)),
    **dict.fromkeys(["gbps"], ("data/time", 1.25e8)),
    **dict.fromkeys(["kbit", "kbits", "kilobit", "kilobits"], ("data", 125.0)),
    **dict.fromkeys(["mbit", "mbits", "megabit", "megabits"], ("data", 1.25e5)),
    **dict.fromkeys(["gbit", "gbits", "gigabit", "gigabits"], ("data", 1.25e8)),
    **dict.fromkeys(["ppm"], ("ppm", 1.0)),
    **dict.fromkeys(["ppb"], ("ppm", 1e-3)),
    **dict.fromkeys(["kelvin"], ("kelvin", 1.0)),
    **dict.fromkeys(["°c", "celsius"], ("celsius", 1.0)),
    **dict.fromkeys(["octet", "octets"], ("data", 1.0)),
    **dict.fromkeys(["bit", "bits"], ("data", 0.125)),
    **dict.fromkeys(["µa", "μa", "microamp", "microamps"], ("current", 1e-6)),
    **dict.fromkeys(["ah"], ("charge", 1e3)),
    **dict.fromkeys(["tw", "terawatt", "terawatts"], ("power", 1e12)),
    **dict.fromkeys(["mwh"], ("energy", 3.6e9)),
    **dict.fromkeys(["gwh"], ("energy", 3.6e12)),
    **dict.fromkeys(["twh"], ("energy", 3.6e15)),
    **dict.fromkeys(["ha", "hectare", "hectares"], ("area", 1e4)),
    **dict.fromkeys(["acre", "acres"], ("area", 4046.8564224)),
    **dict.fromkeys(["m²", "m2", "sqm"], ("area", 1.0)),
    **dict.fromkeys(
        [
            "mm²",
            "mm2",
            "sq mm",
            "square mm",
            "square millimetres",
            "square millimeters",
            "square millimetre",
            "square millimeter",
        ],
        ("area", 1e-6),
    ),
    **dict.fromkeys(
        [
            "cm²",
            "cm2",
            "sq cm",
            "square cm",
            "square centimetres",
            "square centimeters",
            "square centimetre",
            "square centimeter",
        ],
        ("area", 1e-4),
    ),
    **dict.fromkeys(
        ["km²", "km2", "square kilometres", "square kilometers", "sq km"], ("area", 1e6)
    ),
    **dict.fromkeys(
        ["m³", "m3", "cubic metres", "cubic meters", "cubic metre", "cubic meter"], ("volume", 1e3)
    ),
    **dict.fromkeys(
        ["in-lb", "inch-pounds", "inch-pound", "in·lb"], ("torque", 0.1129848290276167)
    ),
    **dict.fromkeys(["pounds per square inch"], ("pressure", 6894.757)),
    **dict.fromkeys(["revolutions per minute"], ("rotation", 1.0)),
    **dict.fromkeys(["sq ft", "square feet", "square foot", "ft²"], ("area", 0.09290304)),
    **dict.fromkeys(
        ["square metres", "square meters", "square metre", "square meter"], ("area", 1.0)
    ),
    **dict.fromkeys(
        ["n·m", "n-m", "newton-metre", "newton-metres", "newton-meter", "newton-meters"],
        ("torque", 1.0),
    ),
    **dict.fromkeys(
        ["newton metre", "newton metres", "newton meter", "newton meters"], ("torque", 1.0)
    ),
    **dict.fromkeys(
        ["lb-ft", "lb·ft", "lbf-ft", "lbf·ft", "ft-lb", "ft·lb", "ft-lbs", "ft-lbf", "ft·lbf"],
        ("torque", 1.3558179483314004),
    ),
    **dict.fromkeys(["parts per million", "part per million"], ("ppm", 1.0)),
    **dict.fromkeys(["parts per billion", "part per billion"], ("ppm", 1e-3)),
    **dict.fromkeys(["°f", "fahrenheit"], ("fahrenheit", 1.0)),
}
# Words that are units only when nothing else could be meant: "a", "in", "b", "s" and the
# like are also ordinary words (or labels, "Item 1A"), so they count only set apart and in
# capitals ("1,500 W"), and "in", "mi", "a", "b" never.
_AMBIGUOUS_UNITS = frozenset(
    ["a", "in", "b", "s", "h", "l", "g", "m", "v", "w", "mi", "j", "pa", "ma", "cl", "ha", "t"]
)
# "2 T" of a recipe is tablespoons, "3 T" of a scanner teslas: "t" only after a slash ("g/t").
_NEVER_SPACED = frozenset(["in", "mi", "a", "b", "t"])
# SI symbols written in small letters, set apart: "4 g", "30 s", "2 h", "1.5 l".
_SMALL_SYMBOLS = frozenset(["g", "s", "h", "l", "ha"])
# Units whose letters mean another unit, or none, in other capitals: "mA" is milliamperes
# ("MA" a degree), "nA" nanoamperes ("na" is not a unit), "Nm" newton-metres where "nm" is
# nanometres, "Mt" megatonnes, "Moz" millions of ounces as mines count them (the ounce of
# this table: "5.96 Moz" is "5.96 million ounces"), a food label's "Calories" kilocalories.
_CASED_UNITS = {
    "mA": ("current", 1e-3),
    "nA": ("current", 1e-9),
    "Nm": ("torque", 1.0),
    "NM": ("torque", 1.0),
    "Mt": ("mass", 1e12),
    "Moz": ("mass", 28.349523125e6),
    "koz": ("mass", 28.349523125e3),
    "Calories": ("energy", 4184.0),
    "Calorie": ("energy", 4184.0),
}
_MEASURE = re.compile(
    r"(?P<gap>\s?|-)(?P<unit>°\s?[cf]\b|degrees?\s+(?:celsius|fahrenheit|[cf])\b"
    r"|(?:sq|square)\s+(?:ft|feet|foot|metres?|meters?|(?:kilo|centi|milli)met(?:re|er)s?|[kcm]m)\b"
    r"|cubic\s+met(?:re|er)s\b|parts?\s+per\s+(?:million|billion)\b|pounds\s+per\s+square\s+inch\b"
    r"|mm\s?hg\b|[mc]m²"
    r"|revolutions\s+per\s+minute\b|beats\s+per\s+minute\b|nautical\s+miles?\b|m³"
    r"|cubic\s+centimet(?:re|er)s\b"
    r"|newton[\s-]met(?:re|er)s?\b|[a-z]+[·-][a-z]+\b|[µμ]?[a-z]+[²2]?(?!\w|-[a-z]))"
    r"(?:\s*(?:/|\bper\s+)(?P<per>(?:cubic|square)\s+[a-z]+|[a-z]+(?:[²³23](?!\w)|\b)))?",
    re.I,
)
_UNIT_ENDS = re.compile(r"\s*(?:[.,;:)]|$)")


def _measure(text: str, end: int) -> tuple[str, float, int] | None:
    """The unit written right after a number ending at `end`: dimension, size, and where it
    ends; "m/s" and "metres per second" are a length per time."""
    match = _MEASURE.match(text, end)
    if not match:
        return None
    written = match.group("unit")
    if "-" in written and written.lower() not in _UNITS and match.group("gap") != "-":
        # "14 per-day" is no unit; "N-m" and "lb-ft" are.
        written = written.split("-")[0]
        match = _MEASURE.match(text[: match.start("unit") + len(written)], end)
        if not match:
            return None
    if match.group("gap") == "-" and (match.group("per") or "-" in written):
        return None  # "10-K/A": a label
    word = re.sub(r"\s+", " ", written.lower())
    if word.startswith("degree"):
        word = "°" + word.split()[-1][0]
    elif word.startswith("°"):
        word = word.replace(" ", "")
    unit = _CASED_UNITS.get(written) or _UNITS.get(word)
    if written == "A" and match.group("gap") == " " and _UNIT_ENDS.match(text, match.end("unit")):
        unit = _UNITS["a"]  # "32 A" ends a statement: amperes, not an article
    elif written in _CASED_UNITS:
        pass
    elif unit is None or (
        word in _AMBIGUOUS_UNITS
        and match.group("gap")
        and word != "m"
        and (not written.isupper() or word in _NEVER_SPACED)
        and not (word in _SMALL_SYMBOLS and written.islower())
    ):
        return None  # "3 in" is not inches, but "1,500 W" is watts
    if len(word) == 1 and not match.group("gap") and not match.group("per"):
        return None  # "5m" is five million as often as five metres; "Item 1A" is a label
    per = " ".join((match.group("per") or "").lower().split())
    if per:
        per_unit = _UNITS.get(per)
        if per_unit is None:
            return (unit[0], unit[1], match.end("unit"))
        return (f"{unit[0]}/{per_unit[0]}", unit[1] / per_unit[1], match.end())
    return (unit[0], unit[1], match.end())


def padding_dropped(figure: Quantity) -> Quantity:
    """A figure with the zeros that end its decimals read as a format's ("$5.00" as $5):
    for an approximate truth, or one the question asks rounded."""
    return replace(figure, decimals=min(figure.decimals, _precision(figure)))


_PER_AT_END = re.compile(r"(?:/|\bper\s+)([a-z]+)\s*$", re.I)


def over_period(figure: Quantity, written: str) -> tuple[Quantity, str] | None:
    """A figure written as a measure per period ("4,000 mg per day", "1.2 g/day") as the
    measure alone, with the period's name: for a truth that counts the same period in
    other words ("4 g" of a daily dose). None when its unit is no measure per period."""
    if not figure.unit or "/" not in figure.unit[0]:
        return None
    per = _PER_AT_END.search(written, figure.start, figure.end)
    period = _UNITS.get(per.group(1).lower()) if per else None
    if period is None or period[0] not in ("time", "month"):
        return None
    measure = figure.unit[0].split("/")[0]
    return replace(figure, unit=(measure, figure.unit[1] * period[1])), per.group(1)


def unit_after(text: str, end: int) -> tuple[str, float] | None:
    """The unit of measure written at `end` (after a number), as (dimension, size)."""
    measure = _measure(text, end)
    return measure[:2] if measure else None


# Words that name what a unit measures: "the output current" is in amperes whether or not
# an answer writes them.
_MEASURED = {
    "current": "current",
    "voltage": "voltage",
    "torque": "torque",
    "pressure": "pressure",
    "wattage": "power",
    "frequency": "frequency",
    "area": "area",
}


def unit_of(word: str) -> tuple[str, float] | None:
    """A unit's (dimension, multiplier) by its name ("years": ("month", 12.0)), or None."""
    return _UNITS.get((word or "").lower())


def unit_named(word: str) -> str | None:
    """The dimension a word of a question names as a unit ("seconds", "kilograms", "psi"),
    or None; short symbols that are also words ("in", "a", "m") name none."""
    if (word or "").lower() in _MEASURED:
        return _MEASURED[word.lower()]
    unit = _UNITS.get((word or "").lower())
    if unit is None or len(word) < 2 or word.lower() in _AMBIGUOUS_UNITS:
        return None
    return unit[0]


_DOZEN = re.compile(r"\b(?:(?P<half>half\s+a)|a|one)\s+dozen\b", re.I)
_ONES = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    w: 10 * i
    for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
    if i >= 2
}
_NUMBER_WORD = "|".join([*_ONES, *_TENS, "hundred", "thousand"])
_WORDS_NUMBER = re.compile(
    rf"(?<![\w-])(?:{_NUMBER_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_NUMBER_WORD}))*(?!\w)", re.I
)
_SCALE_ONLY = re.compile(r"(?:hundred|thousand)(?:\s+(?:hundred|thousand))*", re.I)
_DIGIT_BEFORE = re.compile(r"\d\s*$")
# "one" is as often a pronoun ("one of the segments", "the one that fell") as a count.
_NOT_A_COUNT = re.compile(r"^one$", re.I)
_PRONOUN_AFTER = re.compile(r"\s+(?:of|another|that|which|who)\b", re.I)
_PRONOUN_BEFORE = re.compile(
    r"\b(?:the|each|any|no|every|this|that|which|only|(?:a|the)\s+(?:first|second|third|next|last"
    r"|new|other|separate))\s+$",
    re.I,
)  # "a second one costs £450": the ordinal counts, the "one" stands for what it counts


# Fractions in words: "three quarters", "two-thirds of members", "one tenth of the price",
# "half a minute", "an hour and a half". A lone "a quarter" or "a third" is as often a
# period or a rank ("a quarter", "a third party"), so it is a fraction only before "of".
_FRACTIONS = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fifth": 0.2, "tenth": 0.1}
_FRACTION_COUNTS = {
    w: i for i, w in enumerate("_ one two three four five six seven eight nine".split()) if i
}
_FRACTION = re.compile(
    r"\b(?:(?:(?P<count>two|three|four|nine)[\s-]+(?P<plural>halves|thirds|quarters|fifths|tenths)"
    # "six quarters" is a year and a half of results, "six tenths" a fraction
    r"|(?P<count_of>five|six|seven|eight)[\s-]+(?P<plural_of>fifths|tenths))"
    r"(?=\s+of\b|\s*[.,;)]|\s*$)"
    # "a quarter" of a share, not of a year ("once a quarter", "every quarter")
    r"|(?<!once )(?<!every )(?<!per )(?<!each )(?<!and )a\s+(?P<a>half|third|quarter|fifth|tenth)"
    r"(?=\s+of\b|\s*[.,;)]|\s*$)"
    r"|one[\s-]+(?P<one>half|third|quarter|fifth|tenth)(?=\s+of\b|\s*[.,;)]|\s*$)"
    r"|(?<!and a )half(?:\s+an?\b(?=\s+\w)|(?=\s+(?:of|the)\b)"
    r"|(?=\s+(?:hour|day|week|month|year|minute|second|decibel|dozen)s?\b)))",
    re.I,
)
# "a full day", "within a week", "takes an hour": one of the unit, where no rate is meant
# ("twice a day", "$40 a day" count per day).
_ONE_UNIT = re.compile(
    r"\b(?:a|an)\s+(?:full\s+|whole\s+)?"
    r"(?=(?:day|week|month|year|hour|minute|fortnight|decade|century)\b)",
    re.I,
)
_ALONE = re.compile(r"\w+[\s.]*")
_ONE_UNIT_AFTER = re.compile(
    r"(?:^|\b(?:within|after|about|takes|lasts|for|in|over|up\s+to|than|least))\s*$", re.I
)
# How often, how long or how many times, in one word or idiom: "biennially" is every 2
# years, a "quarter-hour" 15 minutes, "time and a half" (of a pay rate) 1.5 times.
_PERIOD_WORDS = {
    "time and a half": "1.5 times",
    "biennially": "every 2 years",
    "triennially": "every 3 years",
    "quarter-hour": "15 minutes",
    "quarter-hourly": "every 15 minutes",
    "half-hour": "30 minutes",
    "half-hourly": "every 30 minutes",
    "every decade": "every 10 years",
    "once a decade": "every 10 years",
}
# Adverbs of how often, read as a period only where they end a clause ("replaced
# fortnightly"), not before a noun they qualify ("the fortnightly payment"); "quarterly" and
# the like are read as rates where the judge reads rates ("once a quarter").
_PERIOD_ADVERBS = {
    "fortnightly": "every 2 weeks",
    "semiannually": "every 6 months",
    "semi-annually": "every 6 months",
    "half-yearly": "every 6 months",
    "quadrennially": "every 4 years",
}
_PERIOD_ADVERB = re.compile(
    r"\b(?:" + "|".join(map(re.escape, _PERIOD_ADVERBS)) + r")(?=\s*(?:[.,;:)]|$))", re.I
)
_PERIOD_WORD = re.compile(
    r"\b(?:" + "|".join(re.escape(w).replace("\\ ", r"\s+") for w in _PERIOD_WORDS) + r")\b",
    re.I,
)


def _one_unit(text: str) -> str:
    def replace(found: re.Match) -> str:
        whole = re.search(r"full|whole", found.group(0), re.I)
        after = _ONE_UNIT_AFTER.search(text, max(0, found.start() - 20), found.start())
        if after and not after.group(0).strip():  # at the start: only a duration alone ("A week.")
            after = _ALONE.fullmatch(text, found.end())
        return "1 " if whole or after else found.group(0)

    return _ONE_UNIT.sub(replace, text)


_OF_A = re.compile(r"(?<=\d)\s+of\s+an?\s+(?=[a-z])", re.I)  # "0.25 of a century": 0.25 century
# "an hour and a half", "6 and three-quarter percent": a whole and a part of one.
_AND_A_PART = re.compile(
    r"\b(?:(?P<an>an?|one)|(?P<n>\d+))\s+(?P<what>\w+\s+)?and\s+"
    r"(?P<part>a\s+half|a\s+quarter|(?:three|3)[\s-]quarters?)\b",
    re.I,
)
_PARTS = {"half": 0.5, "quarter": 0.25}
# Fractions in figures: "2/3 of members", "3/4 full", "7 3/4 inches", "10½". A bare "2/3"
# is as often a date, a score or a page ("page 2/3"), so it is a fraction only before "of",
# "full" or "majority", or before a unit.
_SLASHED = re.compile(
    r"(?<![\d/.,])(?:(?P<whole>\d+)\s+)?(?P<num>[1-9])/(?P<den>[2-9]|1[0-2])(?![\d/])"
)
_SLASHED_BEFORE = re.compile(r"\s+(?:of|full|majority)\b", re.I)
_VULGAR = {"½": 0.5, "¼": 0.25, "¾": 0.75}
_VULGAR_FRACTION = re.compile(r"(?<![\d.,])(\d*)\s?([½¼¾])")
# A decimal said in words: "three point eight", "twenty-one point three", "nought point five".
_DIGIT_WORDS = {**{w: str(i) for w, i in _ONES.items() if i < 10}, "nought": "0", "oh": "0"}
_POINT = re.compile(
    rf"(?<![\w-])(?<!\bat\s)(?P<whole>nought|(?:{_NUMBER_WORD})(?:[\s-]+(?:{_NUMBER_WORD}))*)\s+point\s+"
    rf"(?P<digits>(?:{'|'.join(_DIGIT_WORDS)})(?:\s+(?:{'|'.join(_DIGIT_WORDS)}))*)(?!\w)",
    re.I,
)


def _fraction(found: re.Match) -> str:
    plural, count = found.group("plural") or found.group("plural_of"), found.group("count")
    if plural:
        size = _FRACTIONS[plural.lower().rstrip("s").replace("halve", "half")]
        value = _FRACTION_COUNTS[(count or found.group("count_of")).lower()] * size
    else:
        value = _FRACTIONS[(found.group("one") or found.group("a") or "half").lower()]
    return f"{value:.4f}".rstrip("0")


def _and_a_part(found: re.Match) -> str:
    whole = 1 if found.group("an") else int(found.group("n"))
    part = found.group("part").lower()
    part = 0.75 if part[0] in "3t" else _PARTS[part.split()[-1]]
    return f"{whole + part:g} {found.group('what') or ''}".rstrip()


def slashes(text: str) -> set[str]:
    """The fractions written with a slash in `text` ("2/3", "7 3/4"), as written."""
    return {found.group(0) for found in _SLASHED.finditer(text or "")}


def _slashed(text: str, kept: set[str]) -> str:
    def replace(found: re.Match) -> str:
        num, den = int(found.group("num")), int(found.group("den"))
        if (
            found.group(0) in kept
            or num >= den
            or not (_SLASHED_BEFORE.match(text, found.end()) or _measure(text, found.end()))
        ):
            return found.group(0)
        return f"{int(found.group('whole') or 0) + num / den:.4f}".rstrip("0")

    text = _VULGAR_FRACTION.sub(
        lambda found: f"{int(found.group(1) or 0) + _VULGAR[found.group(2)]:g}", text
    )
    return _SLASHED.sub(replace, text)


def _point(found: re.Match) -> str:
    whole = found.group("whole")
    whole = "0" if whole.lower() == "nought" else _spoken_numbers(whole)
    if not whole.isdigit():  # "five and six point two": not one number
        return found.group(0)
    digits = "".join(_DIGIT_WORDS[w.lower()] for w in found.group("digits").split())
    return f"{whole}.{digits}"


# Powers of ten: "4.54 × 10^9", "2 x 10⁵", "3e-4"; said with a scale word where there is one
# ("4.54 billion"), else as digits ("0.0003").
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SCIENTIFIC = re.compile(
    r"(?<![\w.])(?P<m>\d+(?:\.\d+)?)(?:\s*[x×*·]\s*10\s*(?:\^|\*\*)\s*(?P<power>[-−+]?\d{1,2})"
    r"|\s*[x×·]\s*10(?P<raised>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,2})|e(?P<e>[-+]?\d{1,2}))(?![\w.])"
)
_POWER_SCALES = {3: "thousand", 6: "million", 9: "billion", 12: "trillion"}
# Pence glued to their figure: "42p" is £0.42 (not "1080p", a resolution).
_PENCE = re.compile(r"(?<![\w.,£$€])(\d{1,3})p\b(?![.-]?\w)")


def powers_written_out(text: str) -> str:
    """`text` with figures in scientific notation written out: "4.54 × 10^9" as "4.54
    billion", "3e-4" as "0.0003"."""

    def write_out(found: re.Match) -> str:
        power = found.group("power") or found.group("e") or found.group("raised")
        power = int(power.translate(_SUPERSCRIPTS).replace("−", "-"))
        if power in _POWER_SCALES:
            return f"{found.group('m')} {_POWER_SCALES[power]}"
        return format(Decimal(found.group("m")).scaleb(power), "f")

    return _SCIENTIFIC.sub(write_out, text or "")


# A share said as a count in a number: "62 out of every 100", "one in five", "40 out of 50".
_PROPORTION = re.compile(
    r"(?<![\w.,])(?P<n>\d+)\s+(?:out\s+of|in)\s+(?:every\s+)?(?P<m>\d{1,3}(?:,\d{3})?)(?![\w.,])"
)


_RATED = re.compile(r"\s*(?:stars?|points?)\b", re.I)  # "4 out of 5 stars": a rating


def proportions_as_percent(text: str) -> str:
    """`text` with its shares said as counts ("three in every four", "88 out of 100") as
    percentages, for a side that gives its share as one ("75%"); units after the count keep
    it a count ("1 in 5 days")."""

    def replace(found: re.Match) -> str:
        n, m = int(found.group("n")), int(found.group("m").replace(",", ""))
        if not 0 < n < m or _measure(text, found.end()) or _RATED.match(text, found.end()):
            return found.group(0)
        return f"{100 * n / m:.2f}".rstrip("0").rstrip(".") + "%"

    return _PROPORTION.sub(replace, text)


def words_to_digits(
    text: str, *, fractions: bool = True, slashed_but: set[str] | None = None
) -> str:
    """`text` with numbers written in words as digits: "forty-six" -> "46", "two hundred
    and six" -> "206", "a dozen" -> "12", "three quarters" -> "0.75", "an hour and a half"
    -> "1.5 hour". "zero" and a pronoun "one" are left alone. Without `fractions` (a
    question that counts: "how many quarters?"), "three quarters" stays a count. With
    `slashed_but`, fractions with a slash are read too ("2/3 of members", "7 3/4 inches"),
    but for those it names: what the other side writes alike is compared as written."""
    text = _DOZEN.sub(lambda found: "6" if found.group("half") else "12", text or "")
    text = _PENCE.sub(lambda found: f"£{int(found.group(1)) / 100:.2f}", text)
    if slashed_but is not None:
        text = _slashed(text, slashed_but)
    text = _AND_A_PART.sub(_and_a_part, _POINT.sub(_point, text))
    text = _PERIOD_WORD.sub(
        lambda found: _PERIOD_WORDS[" ".join(found.group(0).lower().split())], text
    )
    text = _PERIOD_ADVERB.sub(lambda found: _PERIOD_ADVERBS[found.group(0).lower()], text)
    text = _one_unit(text)
    if fractions:
        text = _OF_A.sub(" ", _FRACTION.sub(_fraction, text))

    def replace(match: re.Match) -> str:
        spoken = match.group(0)
        if spoken.lower() == "zero":
            return spoken
        near = max(0, match.start() - 20)  # the words just before, not the whole text
        if _SCALE_ONLY.fullmatch(spoken) and _DIGIT_BEFORE.search(text, near, match.start()):
            # "12 thousand", "$37,987 thousand": a scale written after digits, read as one.
            return spoken
        if (
            _NOT_A_COUNT.match(spoken)
            and not text.startswith("-", match.end())
            and (
                _PRONOUN_AFTER.match(text, match.end())
                or _PRONOUN_BEFORE.search(text, near, match.start())
            )
        ):
            return spoken
        return _spoken_numbers(spoken)

    return _AND_A_PART.sub(_and_a_part, _WORDS_NUMBER.sub(replace, text))


def _spoken_numbers(spoken: str) -> str:
    """The numbers a run of number words says: "two hundred and six" is one, "five and six"
    and "three-four" are two ("5 and 6", "3-4"); a word only continues a number where it
    can ("forty-six", "hundred and six")."""
    parts = re.split(r"([\s-]+(?:and\s+)?)", spoken)
    numbers, gaps = [], []
    total, current, last = 0, 0, None
    for i in range(0, len(parts), 2):
        word = parts[i].lower()
        gap = parts[i - 1] if i else ""
        joined = "and" not in gap.lower()
        continues = last is not None and (
            (word in _ONES and last in _TENS and joined and _ONES[word] < 10)
            or (word in ("hundred", "thousand") and joined)
            or (word in _ONES and last in ("hundred", "thousand"))
            or (word in _TENS and last in ("hundred", "thousand"))
        )
        if last is not None and not continues:
            numbers.append(total + current)
            gaps.append(gap)
            total, current = 0, 0
        if word in _ONES:
            current += _ONES[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total, current = total + max(current, 1) * 1000, 0
        last = word
    numbers.append(total + current)
    return "".join(f"{gap}{n}" for gap, n in zip(["", *gaps], numbers, strict=True))


def same_quantity(a: Quantity, b: Quantity) -> bool:
    """Whether two written numbers state the same figure, allowing the rounding of either."""
    if {a.kind, b.kind} == {"percent", "money"}:
        return False
    if a.kind != b.kind and "percent" in (a.kind, b.kind):
        # "66%" and "0.66" are the same ratio; "24.26%" and "24.26" are the same figure.
        percent, plain = (a, b) if a.kind == "percent" else (b, a)
        if plain.factor not in (None, 1.0):
            return False  # "3 million" counts something; "3%" is a ratio
        as_fraction = Quantity(
            percent.mantissa / 100, percent.decimals + 2, 1.0, "plain", percent.text
        )
        as_number = Quantity(percent.mantissa, percent.decimals, 1.0, "plain", percent.text)
        unscaled = Quantity(plain.mantissa, plain.decimals, 1.0, "plain", plain.text)
        return _close(as_fraction, unscaled) or _close(as_number, unscaled)
    for fa, fb in _factor_pairs(a, b):
        if _close(a, b, fa, fb):
            return True
    return False


def _factor_pairs(a: Quantity, b: Quantity) -> list[tuple[float, float]]:
    if a.factor is not None and b.factor is not None:
        return [(a.factor, b.factor)]
    if a.factor is None and b.factor is None:
        return [(1.0, 1.0)]  # both bare: the digits themselves must agree
    powers = [1.0, 1e3, 1e6, 1e9, 1e12]
    if a.factor is None:
        return [(p, b.factor) for p in powers]
    return [(a.factor, p) for p in powers]


def _close(a: Quantity, b: Quantity, fa: float | None = None, fb: float | None = None) -> bool:
    fa = a.factor if fa is None else fa
    fb = b.factor if fb is None else fb
    va, vb = a.mantissa * fa, b.mantissa * fb
    if va == vb:
        return True
    if abs(va - vb) <= RELATIVE_TOLERANCE * max(abs(va), abs(vb)):
        return True
    # The less precise of the two decides: "$1.6 billion" is $1,577 million rounded.
    ulp_a, ulp_b = fa * 10.0 ** (-a.decimals), fb * 10.0 ** (-b.decimals)
    coarse = a if ulp_a >= ulp_b else b
    if coarse.significant_digits < 2:
        return False  # "1" is not 0.66 rounded in any useful sense
    return abs(va - vb) <= max(ulp_a, ulp_b) / 2 * (1 + 1e-9)


def _precision(q: Quantity) -> int:
    """Digits after the point that carry meaning: a written "4.60" or "1577.00" is padded to
    a format, so the zeros at its end say nothing about its precision."""
    digits = q.text.replace(",", "")
    found = re.search(r"\.(\d+)", digits)
    if not found:
        return min(q.decimals, 0)
    return len(found.group(1).rstrip("0"))


def _value_and_step(q: Quantity, factor: float) -> tuple[float, float, int]:
    """The value, the size of its last meaningful digit, and its significant digits."""
    decimals = _precision(q) if q.decimals >= 0 else q.decimals
    if q.kind == "percent" and q.decimals != _precision(q) and q.mantissa != 0:
        decimals = max(decimals, 0)
    value = q.mantissa * factor
    step = factor * 10.0 ** (-decimals)
    significant = len(re.sub(r"\D", "", f"{abs(q.mantissa):.{max(decimals, 0)}f}").lstrip("0"))
    if decimals < 0:
        significant = max(len(str(int(abs(q.mantissa)))) + decimals, 1)
    return value, step, max(significant, 1)


# An answer may round the truth, but keep at least this many significant digits: "$1.58
# billion" is "$1,577 million" said in billions; "$1.6 billion" is a cruder figure.
MIN_ROUNDED_DIGITS = 3


def agree(
    answer: Quantity, truth: Quantity, *, bare_percent: bool = True, difference: bool = False
) -> bool:
    """Whether an answer's figure states the truth's figure, signs aside: the same kind,
    currency and unit, the same value within the truth's precision. A more precise answer
    must round to the truth; a coarser one must keep MIN_ROUNDED_DIGITS and the truth must
    round to it. A percentage and a fraction are one ratio ("2.8%", "0.028"); the same
    digits without the percent sign ("42.5" for "42.5%") only with `bare_percent`. With
    `difference` the figures are changes: a fall of 5 °C is one of 9 °F, not of 41 °F."""
    if {answer.kind, truth.kind} == {"percent", "money"}:
        return False
    if not (math.isfinite(answer.mantissa) and math.isfinite(truth.mantissa)):
        return False  # 400 digits read as infinity would match any figure: RL's reward hack
    if answer.currency and truth.currency and answer.currency != truth.currency:
        return False  # "€7 million" is not "$7 million"
    if answer.unit and truth.unit and answer.unit[0] != truth.unit[0]:
        return _same_temperature(answer, truth, difference)
    unit_a = answer.unit[1] if answer.unit and truth.unit else 1.0
    unit_t = truth.unit[1] if answer.unit and truth.unit else 1.0
    if answer.kind != truth.kind and "percent" in (answer.kind, truth.kind):
        percent, plain = (answer, truth) if answer.kind == "percent" else (truth, answer)
        if plain.factor not in (None, 1.0):
            return False  # "3 million" counts something; "3%" is a ratio
        as_fraction = Quantity(
            percent.mantissa / 100, percent.decimals + 2, 1.0, "plain", _shift(percent.text, 2)
        )
        as_number = Quantity(percent.mantissa, percent.decimals, 1.0, "plain", percent.text)
        unscaled = Quantity(plain.mantissa, plain.decimals, 1.0, "plain", plain.text)
        pairs = [(as_fraction, unscaled)] + ([(as_number, unscaled)] if bare_percent else [])
        if percent is answer:
            return any(_agree(a, t, 1.0, 1.0) for a, t in pairs)
        return any(_agree(t, a, 1.0, 1.0) for a, t in pairs)
    # A figure written without a scale is read in the other's scale: "1,577" may be the
    # question's "$1,577 million", but "1.577" is not it in billions.
    fa = answer.factor if answer.factor is not None else truth.factor
    ft = truth.factor if truth.factor is not None else answer.factor
    fa, ft = (fa or 1.0) * unit_a, (ft or 1.0) * unit_t
    if _agree(answer, truth, fa, ft):
        return True
    return unit_a != unit_t and _converts(answer, truth, fa, ft)


def _converts(answer: Quantity, truth: Quantity, fa: float, ft: float) -> bool:
    """A truth given in another unit of the same measure ("33 feet" for "10 metres", "99.4
    mph" for "160 km/h"): a conversion is rarely exact, so the truth, converted, must round
    to the answer's last digit, and the answer keep two significant digits ("30 feet" is a
    cruder figure, "1 m" no conversion of "3 feet")."""
    value_a, step_a, digits_a = _value_and_step(answer, fa)
    value_t = truth.mantissa * ft
    if "." not in answer.text:
        step_a = min(step_a, fa)  # "30 feet" is thirty feet, not a figure rounded to tens
    return digits_a >= 2 and abs(value_a - value_t) <= step_a / 2 * (1 + 1e-9)


_TO_CELSIUS = {
    "celsius": (1.0, 0.0),
    "fahrenheit": (5 / 9, -32 * 5 / 9),
    "kelvin": (1.0, -273.15),
}


def _same_temperature(answer: Quantity, truth: Quantity, difference: bool = False) -> bool:
    """A temperature given in another scale ("36 °F" for "2 °C"), within the answer's last
    digit; a `difference` of temperatures without the scales' zero points."""
    if answer.unit[0] not in _TO_CELSIUS or truth.unit[0] not in _TO_CELSIUS:
        return False
    (a_scale, a_shift), (t_scale, t_shift) = _TO_CELSIUS[answer.unit[0]], _TO_CELSIUS[truth.unit[0]]
    if difference:
        a_shift = t_shift = 0.0
    signed = answer.mantissa * (answer.sign or 1), truth.mantissa * (truth.sign or 1)
    difference = abs((signed[0] * a_scale + a_shift) - (signed[1] * t_scale + t_shift))
    step = 10.0 ** (-max(_precision(answer), 0)) * a_scale
    return difference <= step / 2 + 1e-9


def _shift(text: str, places: int) -> str:
    """A percent's digits as a fraction's ("2.8%" -> "0.028"), for counting its precision."""
    number = re.search(r"\d[\d,]*(?:\.\d+)?|\.\d+", text)
    if not number:
        return text
    digits = number.group(0).replace(",", "")
    whole, _, frac = digits.partition(".")
    whole = whole.zfill(places + 1)
    return f"{whole[:-places]}.{whole[-places:]}{frac}"


def _agree(answer: Quantity, truth: Quantity, fa: float, ft: float) -> bool:
    va, step_a, digits_a = _value_and_step(answer, fa)
    vt, step_t, digits_t = _value_and_step(truth, ft)
    if abs(va - vt) <= RELATIVE_TOLERANCE * max(abs(va), abs(vt)):
        return True
    if "." not in truth.text:
        # A whole number in a truth is taken as written: "40 °C" and "$400,000,000" are not
        # "35 °C" and "$450 million" rounded, and "1 percentage point" is not 1.2.
        step_t = ft
        if digits_t < 2 or truth.mantissa == int(truth.mantissa) and truth.decimals < 0:
            return False
    if "." not in answer.text:
        # An answer's whole number is taken as written too: "6380" is another port than 6379,
        # and "$1,580 million" another figure than $1,577 million. Rounding is said with a
        # point in a larger unit ("$1.58 billion", "8.34 million").
        step_a = min(step_a, fa)
    written_t = ft * 10.0 ** (-truth.decimals)
    unscaled = truth.factor in (None, 1.0)  # "$4.60" billions pads a rounded figure to cents
    if unscaled and truth.decimals > 0 and step_a < step_t * (1 - 1e-9) and written_t < step_t:
        # The zeros that end a truth ("$1.10", "5.0%") are a format's only for an answer that
        # writes fewer digits ("$1.1", "5%"): one that writes more must agree with them as
        # written ("$1.08" is not "$1.10", nor "5.4%" "5.0%").
        step = max(step_a, written_t)
        return abs(va - vt) <= step / 2 * (1 + 1e-9)
    if step_a <= step_t * (1 + 1e-9):
        return abs(va - vt) <= step_t / 2 * (1 + 1e-9)
    return digits_a >= MIN_ROUNDED_DIGITS and abs(va - vt) <= step_a / 2 * (1 + 1e-9)
