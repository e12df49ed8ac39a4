"""Numbers in answers: the same figure written differently agrees; other digits or scale do not."""

import pytest

from engine.rewards.quantities import (
    extract_quantities,
    same_quantity,
    scale_hint,
    words_to_digits,
)

MILLIONS_QUESTION = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"


def one(text: str, question: str = "") -> object:
    found = extract_quantities(text, scale_hint(question))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("answer", ["$1,577 million", "1577.00", "$1.577 billion", "USD 1,577m"])
def test_the_same_figure_in_any_format_agrees(answer):
    truth = one("$1577.00", MILLIONS_QUESTION)
    assert same_quantity(one(answer, MILLIONS_QUESTION), truth)


def test_other_digits_do_not_agree():
    assert not same_quantity(one("1,577"), one("15.77"))


def test_the_right_digits_at_the_wrong_scale_do_not_agree():
    truth = one("$1577.00", MILLIONS_QUESTION)
    assert not same_quantity(one("$1,577 billion", MILLIONS_QUESTION), truth)
    assert not same_quantity(one("$1,577 thousand", MILLIONS_QUESTION), truth)


def test_a_bare_number_agrees_with_a_scaled_one_when_the_question_names_no_scale():
    assert same_quantity(one("1577.00"), one("$1,577 million"))


def test_rounding_to_fewer_digits_agrees_but_one_digit_is_too_coarse():
    assert same_quantity(one("$1.6 billion"), one("$1,577 million"))
    assert same_quantity(one("24.3%"), one("24.26%"))
    assert not same_quantity(one("1"), one("0.66"))


def test_a_figure_off_in_its_last_digit_does_not_agree():
    assert not same_quantity(one("1,578"), one("1,577"))


def test_percentages_agree_with_fractions_but_not_with_money():
    assert same_quantity(one("66%"), one("0.66"))
    assert same_quantity(one("65.4 percent"), one("65.4%"))
    assert not same_quantity(one("1.9%"), one("$1.9"))
    # A plain number with a scale counts something: "3 million" is not 3%.
    assert not same_quantity(one("3%"), one("3 million"))


def test_basis_points_are_hundredths_of_a_percent():
    assert same_quantity(one("50 bps"), one("0.5%"))


def test_years_dates_and_labels_are_not_quantities():
    text = "In FY2023 (the 12 months ended January 28, 2023), 3M filed its 10-K for Q2: 36%"
    assert [q.text for q in extract_quantities(text)] == ["36%"]


def test_scale_hint_reads_the_unit_the_question_asks_for():
    assert scale_hint(MILLIONS_QUESTION) == 1e6
    assert scale_hint("How much (in USD billions) did it pay?") == 1e9
    assert scale_hint("What is the quick ratio?") is None


@pytest.mark.parametrize(
    ("spoken", "digits"),
    [
        ("two hundred and six", "206"),
        ("one thousand two hundred", "1200"),
        ("between five and six hours", "between 5 and 6 hours"),
        ("three-four time", "3-4 time"),
        ("thirty-two amp", "32 amp"),
        ("three quarters.", "0.75."),
        ("two-thirds of members", "0.6667 of members"),
        ("half a minute", "0.5 minute"),
        ("an hour and a half", "1.5 hour"),
        ("two and a half days", "2.5 days"),
        ("a quarter of a century", "0.25 century"),
        ("a third party", "a third party"),
        ("quarterly", "quarterly"),
    ],
)
def test_numbers_in_words_are_read_as_said(spoken, digits):
    assert words_to_digits(spoken) == digits


@pytest.mark.parametrize(
    ("written", "dimension"),
    [
        ("32 A", "current"),
        ("1500 mA", "current"),
        ("900 nA", "current"),
        ("140 Nm", "torque"),
        ("103 lb-ft", "torque"),
        ("10 nm", "length"),
        ("5.7 sq ft", "area"),
        ("500 parts per million", "ppm"),
        ("38 degrees C", "celsius"),
        ("a 14-day washout", "time"),
        ("1,500 octets", "data"),
    ],
)
def test_units_said_in_other_ways_are_read(written, dimension):
    (figure,) = extract_quantities(words_to_digits(written))
    assert figure.unit and figure.unit[0] == dimension


@pytest.mark.parametrize("written", ["10 A fuse", "10-K", "Item 1A", "a 3-in-1 tool"])
def test_letters_that_are_no_unit_stay_none(written):
    assert all(figure.unit is None for figure in extract_quantities(written))
