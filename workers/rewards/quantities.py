"""Numbers in financial answers: extract them with their scale and unit, and compare them.

"$1,577 million", "1577.00" (when the question asks for USD millions) and "$1.577 billion"
are the same quantity; "1,577" and "15.77" are not. A number without a scale word is
ambiguous about its scale unless the question names one ("in USD millions"), so it may
match a scaled number at any power of a thousand, but never a different number of digits.
Signs are ignored on purpose: "capex of $1,577 million" and "(1,577)" in a cash-flow
statement describe the same amount.
"""

import re
from dataclasses import dataclass

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
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    (?:\s?(?P<scale>thousand|million|billion|trillion|mn|mm|bn|tn|k|m|b|t)\b)?
    (?:\s?(?P<unit>%|percent\b|per\s?cent\b|percentage\s+points?\b|pp\b|bps\b|basis\s+points?\b))?
    """,
    re.IGNORECASE | re.VERBOSE,
)
# Dates are not quantities: "January 28, 2023" would otherwise add 28 and 2023.
_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE = re.compile(rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,\s*\d{{4}})?\b", re.I)
# Period labels are not quantities either: "the 12 months ended", "52 weeks ending".
_PERIOD = re.compile(r"\b\d{1,3}\s+(?:months?|weeks?|days?)\s+end(?:ed|ing)\b", re.I)
# Glued to a word or a label on either side (checked at a position: no slicing, so linear).
_GLUED_BEFORE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.")
_GLUED_AFTER = re.compile(r"(?!x\b)[A-Za-z0-9_]|-[A-Za-z]", re.I)
_SCALE_HINT = re.compile(
    r"(?:\bin\b|\busd\b|\$)\s*(?:usd\s*|us\s*dollars?\s*)?(thousand|million|billion)s?\b", re.I
)
# Float noise only: a figure off in its last digit is a different figure (rounding is below).
RELATIVE_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Quantity:
    """One number as written: its digits, its precision, its scale and its kind."""

    mantissa: float
    decimals: int  # digits after the point; negative for trailing zeros ("1,600" -> -2)
    factor: float | None  # None when no scale was written or implied: it could be any
    kind: str  # "percent", "money" or "plain"
    text: str

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

    Linear in the length of `text`: every check looks at the characters next to a match."""
    text = _PERIOD.sub(" ", _DATE.sub(" ", text or ""))
    found = []
    for match in _NUMBER.finditer(text):
        number = match.group("num")
        currency = match.group("currency")
        scale = (match.group("scale") or "").lower()
        unit = (match.group("unit") or "").lower()
        end = match.end()
        if len(scale) == 1 and not currency:
            # "3M" is a company and "5 m" a length; "$5m" is money.
            scale, unit, end = "", "", match.end("num")
        # Glued to a word or a label: Q2, FY2023, 10-K, 2nd, 3M (but 1.7x is a ratio).
        start = match.start("num")
        if start and text[start - 1] in _GLUED_BEFORE and not currency:
            continue
        if not unit and _GLUED_AFTER.match(text, end):
            continue
        plain_digits = number.replace(",", "")
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
        found.append(Quantity(mantissa, decimals, factor, kind, match.group(0).strip()))
    return found


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
