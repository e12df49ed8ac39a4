"""The offline judge: deterministic verdicts on financial answers, with no model at all."""

import json
from pathlib import Path

import pytest

from engine.rewards.judge import OfflineJudge

CAPEX_Q = (
    "What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a response "
    "to the question by relying on the details shown in the cash flow statement."
)
DATASETS = Path(__file__).parents[2].parent / "shared" / "datasets"


@pytest.fixture
def judge():
    return OfflineJudge()


@pytest.mark.parametrize("answer", ["$1,577 million", "1577.00", "$1.577 billion"])
def test_the_same_figure_in_another_format_is_correct(judge, answer):
    verdict = judge.judge(CAPEX_Q, "$1577.00", answer)
    assert verdict.correct and verdict.score == 1.0
    assert verdict.prompt_id == "offline"


@pytest.mark.parametrize("answer", ["15.77", "$1,577 billion", "$1,373 million"])
def test_a_different_figure_is_incorrect(judge, answer):
    assert not judge.judge(CAPEX_Q, "$1577.00", answer).correct


def test_a_row_quoted_with_a_figure_is_judged_by_its_figure_said_back_alone_by_nothing(judge):
    question = (
        "According to its financial statements, what did JPMorgan report as total net "
        "periodic defined benefit plan cost/(credit) for 2022?"
    )
    quoted = "Total net periodic defined benefit plan cost/(credit) (75) million"
    assert judge.judge(question, "-$75 million", quoted).correct
    assert not judge.judge(question, "-$75 million", quoted.replace("(75)", "(60)")).correct
    said_back = "Total net periodic defined benefit plan cost/(credit) for 2022"
    assert judge.judge(question, "-$75 million", said_back).reason == "repeats the question"


def test_percentages_are_compared_as_numbers(judge):
    question = "What is Adobe's FY2022 operating margin?"
    assert judge.judge(question, "34.6%", "Operating margin was 34.6 percent.").correct
    assert not judge.judge(question, "34.6%", "36.8%").correct


def test_yes_no_must_agree(judge):
    question = "Does Microsoft have more debt in FY2023 than in FY2022?"
    truth = "No. Microsoft decreased its debt by $2.5bn in FY 2023 vs FY 2022."
    assert judge.judge(question, truth, "No, it reduced its debt by $2.5 billion.").correct
    assert not judge.judge(question, truth, "Yes, debt went up.").correct


def test_right_yes_no_with_the_wrong_figure_is_incorrect(judge):
    truth = "Yes, CVS paid a $0.55 dividend per share every quarter in FY2022"
    assert not judge.judge("Did CVS pay a dividend?", truth, "Yes, $0.60 per share.").correct


WAGES_Q = (
    "Did Ulta Beauty's wages expense as a percent of net sales increase or decrease in FY2023?"
)
WAGES_TRUTH = "Wages expense as a percent of net sales increased in FY2023."


@pytest.mark.parametrize("answer", ["Increased", "It increased.", "an increase"])
def test_the_option_the_truth_chooses_is_correct(judge, answer):
    # The option is a word of the question, which the text overlap alone does not count.
    verdict = judge.judge(WAGES_Q, WAGES_TRUTH, answer)
    assert verdict.correct and verdict.score == 1.0, verdict


@pytest.mark.parametrize("answer", ["Decreased", "It increased or decreased", "Yes"])
def test_the_other_option_both_or_neither_is_incorrect(judge, answer):
    assert judge.judge(WAGES_Q, WAGES_TRUTH, answer).score == 0.0


def test_the_right_option_with_the_wrong_figures_is_incorrect(judge):
    question = "Has AMCOR's quick ratio improved or declined between FY2023 and FY2022?"
    truth = "The quick ratio has slightly improved from 0.67 times to 0.69 times."
    assert judge.judge(question, truth, "Improved, to 0.69 times").correct
    verdict = judge.judge(question, truth, "Improved, to 0.95 times")
    assert not verdict.correct and verdict.score == 0.5


def test_a_choice_in_brackets_or_of_small_words_is_no_choice():
    from engine.rewards.text import choice

    assert choice("Which activity brought in the most (or lost the least) cash?") is None
    assert choice("Is the dividend paid in cash or in stock?") is None  # "cash or in"
    assert choice("Did margins improve or decline?") == ("improv", "declin")


def test_text_answers_need_most_of_the_truth_key_words(judge):
    question = "What is the largest liability in American Express's balance sheet?"
    assert judge.judge(question, "Customer deposits", "Customer deposits.").correct
    assert not judge.judge(question, "Customer deposits", "Long-term debt").correct


def test_words_the_question_already_says_earn_nothing(judge):
    question = "Which region had the highest Pepsico revenue growth in FY2023?"
    truth = "Latin America"
    assert not judge.judge(question, truth, "Pepsico revenue growth in FY2023").correct


def test_the_unit_of_a_figure_is_no_answer_without_the_figure(judge):
    # proof109's student wrote the row and a unit, no figure: the judge had credited the
    # unit as "100% of the truth's key words".
    question = (
        "According to its financial statements, what did PepsiCo report as net income for 2021?"
    )
    for answer in ("Net income (2021) million", "Net income million", "USD millions"):
        assert not judge.judge(question, "7,679 million", answer).correct, answer
    assert judge.judge(question, "7,679 million", "Net income 7,679 million").correct
    # Nor are the question's own words beside it.
    question = "By how much did Pepsico increase its unsecured five year revolving credit?"
    answer = "increase unsecured revolving credit agreement 8K d/d"
    assert not judge.judge(question, "$400,000,000 increase.", answer).correct
    # Words beside a figure still count when they are the answer.
    question = "Which of JPM's business segments had the lowest net revenue in 2021 Q1?"
    assert judge.judge(
        question, "Corporate. Its net revenue was -$473 million.", "Corporate"
    ).correct


def test_a_headline_figure_is_enough_when_the_rest_explains_it(judge):
    truth = "36%. The answer here assumes FY2023 refers to the 12 months ended on January 28, 2023."
    assert judge.judge("What was Ulta's FY2023 gross margin?", truth, "36%").correct


def test_a_refusal_is_incorrect(judge):
    assert not judge.judge(CAPEX_Q, "$1577.00", "This cannot be determined.").correct


def test_an_empty_answer_is_incorrect(judge):
    assert not judge.judge(CAPEX_Q, "$1577.00", "  ").correct


def test_every_financebench_ground_truth_judges_itself_correct(judge):
    path = DATASETS / "financebench-dev" / "questions.jsonl"
    if not path.exists():
        pytest.skip("shared datasets are not beside the clone")
    questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    wrong = [
        q["id"]
        for q in questions
        if not judge.judge(q["question"], q["answer"], q["answer"]).correct
    ]
    assert wrong == []


# Wrong answers a red team and the independent sets had credited (2026-12-07), each beside a true
# answer of the same form that it must still credit: the rule is the difference.
@pytest.mark.parametrize(
    ("question", "truth", "wrong", "right"),
    [
        # codes: one part wrong is another thing
        ("Which filter fits?", "HF-2047", "HF-2048", "Filter HF2047"),
        ("Which address?", "192.168.1.1", "192.168.1.10", "It is 192.168.1.1."),
        ("Which Node.js version?", "Node.js 18.17.0", "Node.js 18.17.1", "v18.17.0"),
        ("Which part of Section 230?", "Section 230(c)(1)", "Section 230(c)(2)", "230(c)(1)"),
        ("Which version deprecated it?", "version 2.3", "version 2.30", "Version 2.3"),
        ("Which flag?", "-i", "-I", "Use -i"),
        ("Which flag overwrites?", "--force", "--forced", "git push --force"),
        (
            "Where is the file?",
            "/etc/nginx/nginx.conf",
            "/etc/nginx/conf.d/nginx.conf",
            "In /etc/nginx/nginx.conf",
        ),
        ("During which war?", "World War I", "World War II", "World War I."),
        # whole numbers are taken as written
        ("Default port?", "6379", "6380", "port 6379"),
        # every figure of the truth's statement, and the words about them
        (
            "How big is the panel?",
            "60 cm wide and 40 cm tall",
            "60 cm wide",
            "40 cm high by 60 cm wide",
        ),
        (
            "How should it be taken?",
            "500 mg three times daily",
            "500 mg twice daily",
            "500 mg, three times a day",
        ),
        ("What rate applies?", "1.5% per month", "1.5% per year", "1.5% a month"),
        (
            "What is the range?",
            "60 to 100 beats per minute",
            "60 to 100 beats per second",
            "60-100 beats per minute",
        ),
        ("What batteries?", "Two AAA batteries", "Two AA batteries", "2 AAA batteries"),
        ("Where must it be stored?", "Between 2 °C and 8 °C", "Between 2 °C and 9 °C", "2–8 °C"),
        # a change in points is not a relative change
        (
            "By how much did coverage rise?",
            "40%, from 5% to 7%",
            "40 percentage points",
            "It rose 40%",
        ),
        # the other way round, and the same from the other side
        (
            "Which is larger?",
            "The Pacific is larger than the Atlantic.",
            "The Atlantic is larger than the Pacific.",
            "The Atlantic is smaller than the Pacific.",
        ),
        (
            "When is notice due?",
            "At least 30 days before the renewal date",
            "Within 30 days after the renewal date",
            "No later than 30 days prior to renewal",
        ),
        # one word of a name swapped, a state for another
        (
            "What does GDPR stand for?",
            "General Data Protection Regulation",
            "General Data Privacy Regulation",
            "GDPR is the General Data Protection Regulation",
        ),
        (
            "What does solid green mean?",
            "The battery is fully charged.",
            "The battery is charging.",
            "Fully charged",
        ),
        ("What is the boiling point?", "100 °C", "100 °C, which is 200 °F", "100 °C (212 °F)"),
        # the independent sets': another case, role or bound beside the right figure
        ("What share of patients had nausea?", "12%", "12 patients", "12 per cent of them"),
        (
            "Who pays whom?",
            "The borrower pays the lender.",
            "The lender pays the borrower.",
            "Borrower pays lender",
        ),
        ("What is added to what?", "Acid to water", "Water to acid", "Add the acid to the water"),
        (
            "What is the SLA for multi-AZ deployments?",
            "99.95%",
            "99.95% for single-AZ deployments",
            "99.95% for multi-AZ deployments",
        ),
        (
            "What is the charge in year 2?",
            "3% of the amount repaid",
            "3% of the amount repaid in year 3",
            "3% of the amount repaid in year 2",
        ),
        (
            "Which zones support it?",
            "eu-west-1a and eu-west-1b",
            "eu-west-1a, eu-west-1b and eu-west-1c",
            "eu-west-1b and eu-west-1a",
        ),
        (
            "What are the working hours?",
            "37.5 hours per week, Monday to Friday",
            "37.5 hours per week, Monday to Saturday",
            "37.5 hours per week, Mon to Fri",
        ),
        (
            "What is the penalty?",
            "5% per month, up to 25%",
            "5% per month, up to 50%",
            "5% a month, up to 25%",
        ),
        (
            "How much alcohol must it contain?",
            "at least 60%",
            "Around 60% or 70%",
            "At least 60 percent",
        ),
        (
            "What is the daily sodium limit?",
            "less than 2,300 mg",
            "at least 2,300 mg",
            "2.3 g or less per day",
        ),
    ],
)
def test_a_wrong_detail_in_a_right_form_is_wrong(judge, question, truth, wrong, right):
    assert not judge.judge(question, truth, wrong).correct
    assert judge.judge(question, truth, right).correct


@pytest.mark.parametrize(
    ("truth", "answer"),
    [
        ("United States", "The US"),
        ("WHO", "The World Health Organization"),
        ("The International Organization for Standardization (ISO)", "ISO"),
        ("2 years", "24 months"),
        ("The Thirteenth Amendment", "The 13th Amendment"),
        ("It narrowed.", "The deficit shrank."),
        ("Yes, the field is required.", "It is mandatory."),
        ("1.1 mm", "1.1 millimetres"),  # a manual's "mm" is a length, not millions
    ],
)
def test_the_truth_in_other_words_is_correct(judge, truth, answer):
    assert judge.judge("What is it?", truth, answer).correct


# A review of the red teams' rules (2026-12-07) found them firing where their words did not
# reach: each case beside the verdict a careful grader gives.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        ("What is the maximum dose?", "No more than 8 tablets in 24 hours", "At least 8 tablets",
         False),
        ("Does it cost more than $100?", "No", "It costs $150, under the standard plan", False),
        ("Can it be taken during pregnancy?", "No", "It is not harmful during pregnancy", False),
        ("Who must pay the transfer tax?", "The buyer", "The seller, at the time of purchase",
         False),
        ("Which country has the largest GDP?", "China, measured in purchasing power parity (PPP)",
         "PPP", False),
        ("How much revenue?", "$5 billion, above expectations",
         "$5 billion, under the new segment structure", True),
        ("What is in the tube?", "Carbon dioxide (CO2)", "Carbon dioxide", True),
        ("Which vitamin is deficient?", "Vitamin B12", "B12", True),
        ("What is at the center of the solar system?", "The sun", "The Sun.", True),
        ("When was it released?", "March 3, 2023", "It was released on Friday, March 3, 2023.",
         True),
        ("What is the salary?", "$52,000 per year", "$52,000 per annum", True),
        ("What happened to the shipment?", "It was delayed by customs, arriving late",
         "Customs delayed it, so it arrived late", True),
        ("What are the allergens?", "Milk and peanuts",
         "The allergens are milk and peanuts, which are common, serious, and regulated.", True),
        ("Which parts?", "HF-2047 and HF-2048", "HF-2047 and HF-2048, per the manual v2.1", True),
        ("Where is the config?", "/etc/nginx/nginx.conf", "It is in /etc/nginx/nginx.conf.", True),
        ("What is Avogadro's constant?", "6.022 x 10^23", "6.022 × 10²³", True),
    ],
)  # fmt: skip
def test_the_new_rules_fire_only_where_their_words_reach(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# Sets written without reading the judge (2026-12-07, the second round): each rule they led
# to, with the wrong answer it must still refuse beside the true one it now credits.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a figure in another unit, within the answer's last digit
        ("What is the range?", "10 meters", "about 33 feet", True),
        ("What is the range?", "10 meters", "30 feet", False),
        ("What is the range?", "3 feet", "1 m", False),
        ("What is the top speed?", "160 km/h", "99.4 mph", True),
        ("What is the top speed?", "160 km/h", "96 mph", False),
        # times of day on one clock
        ("When does the office close?", "15:00", "3 pm", True),
        ("When does the first train leave?", "05:45", "5:45 p.m.", False),
        ("When does the ticket office close for lunch?", "noon", "12:00 pm", True),
        # the clause that answers what is asked
        ("How much laytime is allowed for loading?", "72 hours",
         "72 hours is the laytime for discharging; loading is allowed 48 hours.", False),
        ("How many cyclists died in 2023?", "97",
         "Pedestrians accounted for 412 deaths and cyclists for 97.", True),
        ("How many items can an adult member borrow?", "12",
         "12 for junior members; adults can borrow 20.", False),
        ("Which button performs a dodge roll?", "Circle",
         "Circle is held to sprint; the dodge roll is on Cross.", False),
        ("Who wrote Pride and Prejudice?", "Jane Austen", "Jane Austen; Emily Bronte", False),
        ("What was the unemployment rate in 2021?", "5.1%",
         "In 2022 the rate fell to 3.8%, down from 5.1% in 2021 and 7.4% in 2020.", True),
        # the figure that measures what the truth measures
        ("What is the orbital period of Deimos?", "30.3 hours",
         "Deimos orbits at about 23,460 km with a period of 30.3 hours.", True),
        # a bound the question asks for, and one it does not
        ("What is the minimum age for inclusion?", "18 years", "at least 18 years old", True),
        ("What is the minimum age for inclusion?", "18 years", "at most 18 years old", False),
        ("How many players are on a team?", "6", "at most 6", False),
        ("What current must an RCD not exceed?", "Not exceeding 30 mA", "30 mA or less", True),
        ("Do I need a permit for a deck more than 60 cm high?", "Yes",
         "Yes, decks more than 60 cm above grade require a permit.", True),
        # a label's number as written
        ("Which section covers smoke alarms?", "Section 9.10", "Section 9.1", False),
        ("Which chapter covers coffee?", "Chapter 09", "Chapter 9", True),
        # the order asked for
        ("In what order must the keys be collected?", "Bronze, Silver, Gold",
         "Bronze, Gold, Silver.", False),
        ("In what order must the keys be collected?", "Bronze, Silver, Gold",
         "The bronze key first, then the silver one, then the gold one.", True),
        # an exception after a yes or no; words of refusal
        ("Can a Zone A permit holder park in Zone B?", "No",
         "No, except after 6 pm, when it is allowed.", False),
        ("Can a Zone A permit holder park in Zone B?", "No",
         "No, the permit is valid only in Zone A.", True),
        ("Are dogs allowed on buses?", "Yes, if kept on a lead",
         "Yes, but only inside a closed carrier.", False),
        ("Does the warranty cover accidental damage?", "No", "Accidental damage is excluded.",
         True),
        ("Does the warranty cover accidental damage?", "Yes", "Accidental damage is excluded.",
         False),
        ("Can frozen meat be thawed on the counter?", "No",
         "No, thaw it in the refrigerator or in cold water.", True),
        # numbers in words, fractions, measures in two units, units said otherwise
        ("How long does the ascent take?", "5 to 6 hours", "Between five and six hours.", True),
        ("What share does the tenant pay?", "75%", "Three quarters.", True),
        ("What share does the tenant pay?", "75%", "Two thirds.", False),
        ("What is the keepalive interval?", "30 seconds", "half a minute", True),
        ("How long is the journey?", "1 hour 15 minutes", "75 minutes", True),
        ("How long is the journey?", "1 hour 15 minutes", "80 minutes", False),
        ("What are the maximum dimensions?", "55 × 40 × 20 cm", "550 × 400 × 200 mm", True),
        ("What is the maximum output current?", "1.5 A", "1500 mA", True),
        ("What is the torque?", "140 N·m", "140 Nm", True),
        ("What is the dividend per share?", "$0.24", "24 cents per share", True),
        ("What is the dividend per share?", "$0.24", "42 cents per share", False),
        ("How long is the washout?", "14 days", "A 14-day washout separates the periods.", True),
        ("How long is the notice?", "95 days", "95 business days", False),
        ("Is the house covered if left empty?", "Yes, for up to 60 consecutive days",
         "Yes, but only for up to 60 days in a row.", True),
    ],
)  # fmt: skip
def test_the_second_round_rules_and_their_wrong_twins(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# The third round's rules, from two more sets written without reading the judge, each beside
# the wrong answer it must still refuse.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a time of day is said whole
        ("What is the local time of the descending node?", "10:30",
         "The local time of the ascending node is 10:30; the descending node is at 22:30.",
         False),
        ("What time is the downbeat?", "19:30",
         "Musicians should be seated by 19:30, with the downbeat at 19:40.", False),
        ("What are the off-peak hours?", "00:00-07:00", "From midnight to 7 am.", True),
        ("When is the rehearsal?", "Friday 7 June, 10:00-13:00",
         "Friday 7 June from 10 am to 1 pm.", True),
        ("What time does the mass start begin?", "9:30am",
         "The wheelchair race starts at 9:10am and the mass start is at 9:30am.", True),
        # a list item by a word of its own
        ("What payment methods are accepted?", "Cash, debit card and credit card",
         "Cash and debit cards.", False),
        ("What payment methods are accepted?", "Cash, debit card and credit card",
         "Credit cards, debit cards and cash.", True),
        # steps asked in order
        ("What should I do, in order, when the alarm sounds?",
         "Stop work, leave by the nearest exit, go to the assembly point",
         "Go to the assembly point, stop work, leave by the nearest exit.", False),
        # roles that change sides, by their link's stem
        ("Who must notify whom?", "The carrier notifies the shipper",
         "The shipper must notify the carrier.", False),
        ("When diluting acid, what is added to what?", "Add the acid to the water",
         "Add the water to the acid slowly.", False),
        ("When diluting acid, what is added to what?", "Add the acid to the water",
         "Slowly add the acid to the water.", True),
        # a condition not the truth's
        ("Can I transfer the licence?", "Yes, once, with the vendor's written consent",
         "Yes, you may transfer it freely.", False),
        ("Does sync delete remote files by default?", "No, only when --delete is passed.",
         "No, only with the --delete flag.", True),
        # names answer "who"
        ("Who directed the 2019 excavation season?", "Dr Leila Haddad",
         "Dr Leila Haddad directed 2017; the 2019 season was led by Dr Tomas Berg.", False),
    ],
)  # fmt: skip
def test_the_third_round_rules_and_their_wrong_twins(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A review of the rounds' rules (2026-12-07) found them firing where their words did not
# reach; each case as a careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # no clause chosen from an unsure answer, beside a bare alternative, or that restates
        ("How long is loading allowed?", "48 hours", "Loading is allowed 48 hours, or perhaps 72.",
         False),
        ("Which city hosts the summit?", "Paris", "The summit is hosted in Paris; maybe Lyon.",
         False),
        ("Who painted the Mona Lisa?", "Leonardo da Vinci",
         "Leonardo da Vinci; he painted the Mona Lisa.", True),
        ("How tall is the Eiffel Tower?", "330 m",
         "330 metres; the Eiffel Tower was originally 312 m tall.", True),
        ("What time does the museum open on Sundays?", "10 am",
         "At 10 am; on weekdays it opens at 9 am.", True),
        # rates a question's own period does not excuse
        ("What is the rent in the first year of the lease?", "$1,200 per month",
         "$1,200 per year", False),
        # how often, counted
        ("How often must the boiler be serviced?", "Once a year", "Twice a year", False),
        ("How often must the boiler be serviced?", "Once a year", "Annually.", True),
        ("How often is the statement issued?", "monthly", "Every month.", True),
        # fractions only where a share is meant
        ("For how many consecutive quarters did revenue grow?", "Three quarters", "3 quarters",
         True),
        ("Which meal plan is included?", "Half board", "Half-board (breakfast and dinner)", True),
        ("How often are dividends paid?", "Once a quarter", "Every quarter", True),
        # times, ratios and verses
        ("When does the last train leave?", "17:10", "5.10 pm", True),
        ("What is the scale of the Explorer maps?", "1:25,000", "1:25000", True),
        ("Which verse is the gospel in a nutshell?", "John 3:16", "John chapter 3, verse 16",
         True),
        # labels, not initials
        ("Who was US president during the crisis?", "John F. Kennedy", "John Kennedy", True),
        ("Which part of the Act deals with offences?", "Part 2", "Part Two", True),
        ("Which vaccine is given at birth?", "Hepatitis B", "The hepatitis-B vaccine", True),
        # bounds that leave their figure out, exceptions that are advice
        ("What is the minimum age to rent a car?", "21 years", "More than 21 years", False),
        ("Can I bring my own food into the stadium?", "No", "No, but you can buy food inside.",
         True),
        ("Can I bring glass bottles?", "No",
         "Glass is not allowed in the arena, but you can bring it into the campsite.", False),
        ("Can I enter the lounge?", "Yes, with a valid boarding pass",
         "Yes, only with a valid boarding pass.", True),
        # a change with its relative size, a truth's incidental figure, steps and their items
        ("By how much did revenue increase?", "From $10 million to $12 million",
         "It rose $2 million (20%).", True),
        ("What makes up most of the atmosphere?", "Nitrogen, about 78%", "Nitrogen", True),
        ("What do you need in order to apply?", "A passport and a utility bill",
         "A utility bill and a passport", True),
        ("In what order should the steps be done?",
         "Remove the cover, clean the filter, replace the cover",
         "Remove the cover, clean the filter, then replace the cover.", True),
        ("What is the dose range?", "20-40 mg", "20 mg-40 mg", True),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_rounds_rules(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# The fifth round's rules, from four more sets written without reading the judge (two of
# them to break it), each beside the answer it must still judge the other way.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a short first statement is the answer committed to
        ("What is the proposal deadline for semester B?", "1 April",
         "1 October; 1 April is the deadline for semester A.", False),
        ("What is the penalty for refusing to salute?", "black card",
         "A red card; the black card is reserved for brutality.", False),
        ("What is the proposal deadline for semester B?", "1 April",
         "1 April; semester A closes on 1 October.", True),
        ("What is the penalty fare?", "€60, reduced to €30 if paid within 14 days",
         "€60; settling within two weeks brings it down to €30.", True),
        ("What was the effective tax rate in FY2022?", "21.6%", "FY2021: 24.6%; FY2022: 21.6%",
         True),
        ("Which article of the GDPR covers the right to erasure?", "Article 17", "Art. 17 GDPR",
         True),
        # a truth said to be replaced, set aside or moved
        ("Which terminology tool does the agency use?", "MultiTerm",
         "MultiTerm was replaced by Termbase Pro last year.", False),
        ("When does the agreement expire?", "31 August 2027",
         "It was due to expire on 31 August 2027 but has been extended to 31 August 2028.", False),
        ("Which terminology tool does the agency use?", "MultiTerm",
         "MultiTerm, which replaced Termbase Pro last year.", True),
        # another ordinal than the question's names another case
        ("What is the fee for a second interment in the same grave?", "£650",
         "£650 is the fee for the first interment; a second one costs £450.", False),
        ("What is the fee for a second interment in the same grave?", "£450",
         "£650 is the fee for the first interment; a second one costs £450.", True),
        # an ordinal the truth writes is no count
        ("How many mentoring sessions does a new beekeeper get?", "6 sessions in the first season",
         "New beekeepers get mentoring sessions in their first season.", False),
        ("How many mentoring sessions does a new beekeeper get?", "6 sessions in the first season",
         "Six sessions in their first season.", True),
        # a span of times turned round; a slashed form's parts reordered
        ("When does Tariff 2 apply?", "between 22:00 and 06:00",
         "Tariff 2 applies between 06:00 and 22:00.", False),
        ("When does Tariff 2 apply?", "between 22:00 and 06:00", "Between 10 pm and 6 am.",
         True),
        ("What date format is used in French documents?", "DD/MM/YYYY", "MM/DD/YYYY.", False),
        ("What date format is used in French documents?", "DD/MM/YYYY", "dd/mm/yyyy", True),
        # two figures offered side by side are a hedge, whatever words follow
        ("What's the household water rate per cubic metre?", "£1.62",
         "Water costs £1.48 or £1.62 per cubic metre.", False),
        ("What's the household water rate per cubic metre?", "£1.62",
         "Households pay £1.62 per cubic metre, or £1.48 on the business tariff.", True),
        # a bound from the side the question does not ask
        ("What is the minimum ripening period?", "120 days", "Ripening may not exceed 120 days.",
         False),
        ("What is the minimum ripening period?", "120 days", "At least 120 days.", True),
        ("What is the maximum number of puffs per day?", "8 puffs in 24 hours",
         "Do not take more than 8 puffs in 24 hours.", True),
        ("What is the maximum number of puffs per day?", "8 puffs in 24 hours",
         "Take more than 8 puffs in 24 hours.", False),
        # a discount is a fall, a surcharge a rise
        ("What is the fee adjustment for urgent jobs?", "+50%", "Rush jobs carry a 50% discount.",
         False),
        ("What is the fee adjustment for urgent jobs?", "+50%", "A 50% surcharge.", True),
        # an age with no unit is in years
        ("What is the minimum age for the A2 certificate?", "16", "16 years old", True),
        ("What is the minimum age for the A2 certificate?", "16", "16 months", False),
        # a day with nothing else said; the truth's equivalent in brackets; the minus sign
        ("When did the revised procedures take effect?",
         "The revised procedures took effect on 1 March 2021.", "March 1, 2021.", True),
        ("When did the revised procedures take effect?",
         "The revised procedures took effect on 1 March 2021.", "After March 1, 2021.", False),
        ("What is the maximum flight altitude?", "120 m (400 ft) above ground", "400 feet", True),
        ("What is the maximum flight altitude?", "120 m (400 ft) above ground", "120 feet", False),
        ("What is the operating temperature range?", "−30 °C to +50 °C",
         "-30 to 50 degrees Celsius", True),
        ("What is the lowest operating temperature?", "−30 °C", "30 °C", False),
        # how often or how long in one word; what a count leaves out is no negation
        ("How often must instructors renew their rating?", "every 2 years", "Biennially.", True),
        ("How often must instructors renew their rating?", "every 3 years", "Biennially.", False),
        ("How often are viability tests run?", "every 10 years", "Once every decade.", True),
        ("How long a break is owed?", "15 minutes", "A quarter-hour break.", True),
        ("How long a break is owed?", "30 minutes", "A quarter-hour break.", False),
        ("What is the maximum number of passengers?", "8",
         "Eight passengers, not counting the driver.", True),
        ("What is the maximum number of passengers?", "8", "Not eight passengers.", False),
    ],
)  # fmt: skip
def test_the_fifth_round_rules_and_their_wrong_twins(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A review of the fifth round's rules found them firing past their words; each case as a
# careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a preamble, an abbreviation's full stop or a word of no figure is no first answer
        ("What is the proposal deadline for semester B?", "1 April",
         "Good question. The deadline for semester B is 1 April.", True),
        ("What is the standard VAT rate?", "20%", "Based on the text. The standard rate is 20%.",
         True),
        ("When was the treaty signed?", "5 September 2021",
         "Sept. 5, 2021. The treaty came into force a month later.", True),
        ("Which equation defines the flux?", "Equation 3", "Eq. 3. It relates flux to area.",
         True),
        ("What is the recommended storage temperature?", "2–8 °C",
         "Refrigerated. Keep it between 2 and 8 °C.", True),
        # the change itself asked, or an earlier state
        ("Which law was repealed in 1999?", "The Glass-Steagall Act",
         "The Glass-Steagall Act was repealed in 1999.", True),
        ("What was the original launch date?", "12 May 2020",
         "12 May 2020, but was postponed to 3 June 2020.", True),
        ("What was the pre-2011 VAT rate?", "17.5%",
         "17.5%, which was replaced by 20% in January 2011.", True),
        # a price word as the topic, not a direction
        ("How did the tax rebate change in 2023?", "It increased by £200",
         "The rebate increased by £200.", True),
        ("What discount do I get for paying by direct debit?", "2%",
         "You get a 2 per cent discount for paying by direct debit.", True),
        # counts of people of an age are no ages
        ("How many people aged 65 or over live in Scotland?", "1,100,000", "About 1.1 million.",
         True),
        # "one" as a count
        ("How many goals did he score in the final?", "1", "Just a single one.", True),
        ("How long is the second session?", "1 hour", "The second one-hour session follows lunch.",
         True),
        # a comparison denied is no bound
        ("How did turnout compare with 2019?", "Turnout was higher than in 2019",
         "Turnout was never higher than in 2019.", False),
        ("What did the trial find?", "The relapse rate was significantly lower than with placebo",
         "The relapse rate was not significantly lower than with placebo.", False),
        # a part in brackets does not restate the whole
        ("How long is the trail?", "1.2 km (800 m of it paved)", "800 m.", False),
        ("How much flour does the recipe need?", "1 kg (250 g per loaf)", "250 g.", False),
        # a day the truth places or conditions
        ("When did the tremors start?", "In the week before 1 March 2021", "1 March 2021.", False),
        ("When does the new contract apply?", "From 1 March 2021, for new hires only",
         "1 March 2021.", False),
        ("When did the launch take place?",
         "Originally scheduled for 1 March 2021, it was delayed indefinitely", "1 March 2021.",
         False),
        # unordered pairs; an "or" between cases
        ("What colours are on the team kit?", "red/white", "The kit is white/red.", True),
        ("How much is the weekly pass?", "£30", "A day pass costs £5, or £30 for a week.", True),
        # hundreds of digits are no figure
        ("What is the number?", "5", "1" * 400, False),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_fifth_round(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# The sixth round's rules, from two more sets written without reading the judge (one of them
# told what it already catches), each beside the answer it must still judge the other way.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a truth that ends with a full stop is one clause: the asked clause is chosen
        ("How many frames does the Langstroth deep box hold?", "10 frames.",
         "10 frames is the capacity of the Dadant box; the Langstroth deep holds 11.", False),
        ("How many frames does the Langstroth deep box hold?", "11 frames.",
         "10 frames is the capacity of the Dadant box; the Langstroth deep holds 11.", True),
        # a list by commas alone is answered by all its items
        ("Which allergens are in the Caesar salad?", "Gluten, eggs, fish, milk, mustard",
         "Eggs, fish and milk.", False),
        ("Which allergens are in the Caesar salad?", "Gluten, eggs, fish, milk, mustard",
         "Mustard, milk, fish, eggs and gluten.", True),
        # nautical miles, and "nm" where nautical miles are meant
        ("How many nautical miles of experience are required?", "300 nautical miles", "300 km",
         False),
        ("How many nautical miles of experience are required?", "300 nautical miles", "300 nm",
         True),
        # a truth no longer so, and a truth only later in office
        ("What is the organist fee?", "£90.", "The organist fee was £90 in 2022; it has since "
         "been increased.", False),
        ("What is the minimum order for free delivery?", "Orders over £75.",
         "Free delivery applied to orders over £75 until last year.", False),
        ("Who chaired the committee from 2010?", "John Smith",
         "John Smith served as chair until 2015.", True),
        ("What dividend was declared?", "42p per share",
         "42p per share, which has since been paid.", True),
    ],
)  # fmt: skip
def test_the_sixth_round_rules_and_their_wrong_twins(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A review of the sixth round's rules found them firing past their words; what was kept is
# narrowed, each case as a careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # places and appositions are no lists
        ("Where was Shakespeare born?", "Stratford-upon-Avon, Warwickshire, England",
         "Stratford-upon-Avon in Warwickshire", True),
        ("Which ship was Nelson's flagship?", "HMS Victory, a first-rate ship of the line, now "
         "in Portsmouth", "HMS Victory, a first-rate ship of the line", True),
        # "nm" is nanometres unless the truth is in nautical miles
        ("What laser wavelength does the nautical survey lidar use?", "532 nm", "0.532 µm", True),
        ("What laser wavelength does the nautical survey lidar use?", "532 nm", "985 km", False),
        # words after a truth that say it went on, or a term that ended
        ("How many amendments were adopted?", "12",
         "All 12 amendments that were proposed were adopted.", True),
        ("Who designed the opera house?", "Jørn Utzon",
         "Jørn Utzon designed it; it has since been listed as a World Heritage Site.", True),
        ("What was the speed limit set in 2019?", "40 mph", "40 mph; until 2019 it was 50 mph.",
         True),
        # context years and other words for a share's base
        ("What was the inflation rate in 2022?", "9.1%", "9.1%, the highest rate since 1982.",
         True),
        ("What share of revenue came from services?", "45% of revenue", "45% of sales.", True),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_sixth_round(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# The seventh round's rules, each beside the answer it must still judge the other way.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a truth's "no" that denies its rest ("No material uncertainty…")
        ("Did the auditors identify a going concern issue?",
         "No material uncertainty related to going concern was identified.",
         "Material uncertainty related to going concern was identified.", False),
        ("Did the auditors identify a going concern issue?",
         "No material uncertainty related to going concern was identified.",
         "There was no material uncertainty related to going concern.", True),
        # a bound after a few words of what is measured
        ("Which vessels must take a pilot?",
         "Pilotage is compulsory for vessels of 60 metres length overall or more.",
         "Pilotage is compulsory for vessels under 60 metres.", False),
        ("Which vessels must take a pilot?",
         "Pilotage is compulsory for vessels of 60 metres length overall or more.",
         "Pilotage is compulsory for vessels of 60 metres or more.", True),
        # "12:00 noon" and "12:00 midnight" are two times
        ("What is the deadline for tender submissions?", "12:00 noon on 14 March 2025.",
         "Tenders must be in by 12:00 midnight on 14 March 2025.", False),
        ("What is the deadline for tender submissions?", "12:00 noon on 14 March 2025.",
         "By midday on 14 March 2025.", True),
        # another day than the truth's, whatever figures agree
        ("What is the age requirement for kindergarten enrolment?",
         "The child must turn 5 on or before September 1 of the school year.",
         "Children must turn 5 on or before December 1 of the school year.", False),
        ("What is the age requirement for kindergarten enrolment?",
         "The child must turn 5 on or before September 1 of the school year.",
         "The child must turn five on or before 1 September.", True),
        # another rank than the truth's
        ("Do siblings of enrolled students get priority?",
         "Yes; siblings receive second priority, after students living in the attendance zone.",
         "Yes, siblings of enrolled students receive first priority.", False),
        ("Do siblings of enrolled students get priority?",
         "Yes; siblings receive second priority, after students living in the attendance zone.",
         "Yes, they get 2nd priority.", True),
        # a truth's aside is no clause of its own
        ("How much is a day pass for my 12-year-old?", "£10 (junior rate, under 16)",
         "Day pass: £14 for adults, £10 for juniors (under 16).", True),
    ],
)  # fmt: skip
def test_the_seventh_round_rules_and_their_wrong_twins(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A review of the seventh round's rules found them firing past their words; each case as a
# careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a "no" that is a bound, a yes-or-no, or opens a clause the answer does not say
        ("When must the form be submitted?", "No later than 5 pm on Friday.", "By 5 pm on Friday.",
         True),
        ("Is there a charge for the shuttle bus?",
         "No charge; the shuttle is free for all hotel guests.",
         "The shuttle is free for all hotel guests.", True),
        ("Did the company record a loss in 2023?",
         "No loss was recorded; it made a profit of $3 million.",
         "It made a profit of $3 million.", True),
        # days in the truth's asides
        ("How much is an adult ticket?", "£10 (price valid until 31 March 2025)",
         "£10; prices rise on 1 April 2025.", True),
        # ordinals that rank other things, or a unit
        ("What is the speed of sound?", "343 metres per second",
         "343 m/s, first measured accurately in the 1940s.", True),
        ("How many times did she win?", "Three times (her third title came in 2019)",
         "Three, the first in 2015.", True),
        # "more or less" and "or more precisely" are no bounds
        ("How long is the drive?", "About 3 hours", "3 hours, more or less.", True),
        ("How long is the warranty?", "2 years", "2 years from purchase, or more precisely 24 "
         "months.", True),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_seventh_round(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# The eighth round's rules (docs/judge-rejudge.md), each beside the answer it must still take.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a measure per the period the question or truth already counts per
        ("What is the maximum daily dose?", "4 g", "4,000 mg per day", True),
        ("What is the starting dose?", "50 micrograms daily", "0.05 mg per day", True),
        ("How many days of annual leave do employees get?", "25 days", "25 days per year.", True),
        ("What is the maximum daily dose?", "4 g", "4,000 mg per week", False),
        ("What is the starting dose?", "50 micrograms twice daily", "0.05 mg per day", False),
        # a truth counted per one thing is not answered per another the question names
        ("What is the per diem for meals?", "$55 per day", "$55 per meal.", False),
        ("What is the loan administration fee?", "£500 per object", "£500 per loan.", False),
        ("What is the loan administration fee?", "£500 per object", "£500 for each object.", True),
        ("What is the API rate limit?", "100 requests per minute",
         "Each API key is limited to 100 requests per minute.", True),
        ("What were dividends paid per share in FY2022?", "$2.97",
         "$2.97 for the year (twelve monthly payments averaging about $0.2475)", True),
        # the precision the question asks for
        ("What was the gross margin in FY2023? Round to two decimals.", "47.12%", "47.1%", False),
        ("What was the gross margin in FY2023? Round to two decimals.", "47.10%", "47.1%", True),
        ("What was the ratio? Round your answer to two decimal places.", "0.96", "0.960", True),
        # a truth said set aside in a clause of its own
        ("What is the recommended interval between doses?", "6 months",
         "An interval of 6 months was considered but rejected in favour of 12 months.", False),
        ("What was the fee before the increase?", "$20", "$20, later replaced by $25.", True),
        # days side by side, and the day of the clause that answers
        ("On what date does the lease commence?", "1 July 2021",
         "Dates: 15 June 2021, 1 July 2021, 30 June 2026", False),
        ("On what date does the lease commence?", "1 July 2021",
         "The lease commences on 1 July 2021 and ends on 30 June 2026.", True),
        ("When did the act come into force?", "1 January 2020",
         "It was enacted on 1 January 2020 but came into force on 1 July 2020.", False),
        ("When did the act come into force?", "1 July 2020",
         "It was enacted on 1 January 2020 but came into force on 1 July 2020.", True),
        # a result's sign in words
        ("What was net income (loss) in FY2022?", "Net loss of $1.26 billion",
         "It earned $1.26 billion.", False),
        ("What was the budget balance for FY2023?", "A deficit of $2.1 billion",
         "The state ran a $2.1 billion shortfall.", True),
        ("What was the budget balance for FY2023?", "A deficit of $2.1 billion",
         "A surplus of $2.1 billion", False),
        ("What is the VAT registration threshold?", "£85,000 of taxable turnover",
         "£85,000 of profit", False),
        # a change in points said as a percent
        ("By how much did the operating margin change?",
         "It rose 2 percentage points, from 10% to 12%.", "It rose 2%.", False),
        ("By how much did the operating margin change?",
         "It rose 2 percentage points, from 10% to 12%.", "Up 200 basis points.", True),
        # a failure denied is no denial
        ("Did the trial meet its primary endpoint?", "No.",
         "It didn't fail to meet the primary endpoint.", False),
        # a bare yes or no to a question that also asks why (the labelled set has it so)
        ("Is its liquidity healthy? If not, what is the main factor?",
         "No, the current ratio is 0.91, mainly due to a large amount of short-term debt.",
         "No.", True),
        # the truth's zeros as written, for an answer that writes as many digits
        ("What was same-store revenue growth?", "5.0%", "5.4%", False),
        ("What was same-store revenue growth?", "5.0%", "5%", True),
        ("What quarterly dividend was declared?", "$1.10 per share", "$1.08 per share", False),
        ("What quarterly dividend was declared?", "$1.10 per share", "$1.1 per share", True),
        ("What is the FY2021 capital expenditure (in USD billions)?", "$4.60", "$4,625 million",
         True),
        # as many things as the question asks for
        ("What are Campbell Soup's two reportable segments?", "Meals & Beverages and Snacks",
         "Meals & Beverages", False),
        ("What are Campbell Soup's two reportable segments?", "Meals & Beverages and Snacks",
         "Snacks and Meals & Beverages", True),
        # a bound the question asks for, in other words
        ("Which minimum Python version does the library require?", "Python 3.8",
         "3.8 or newer is required.", True),
        ("What is the minimum age for inclusion?", "18 years", "Adults aged 18 or older.", True),
        ("What is the maximum age for inclusion?", "65 years", "18 or older.", False),
        ("What is the target HbA1c?", "Below 7%", "Less than 7 percent", True),
        # a claim affirmed or denied in words
        ("Did revenue increase in 2023?", "Yes, revenue rose 8%.", "That is correct, it did.",
         True),
        ("Did revenue increase in 2023?", "Yes, revenue rose 8%.", "That's not correct.", False),
        ("Is the insurer liable for flood damage?", "No",
         "It is not true that the insurer is not liable for flood damage.", False),
        # a bound on a figure beside a truth that is no figure
        ("Which segment drove most of the growth?", "Lithium",
         "The Lithium segment, whose net sales rose more than 300%.", True),
        ("Which segment drove most of the growth?", "Lithium", "Lithium or Bromine.", False),
        # true answers the round found missed: the truth's word in the question's words, a
        # multiple's "x", a period's span, a day written with slashes, a count of times
        ("What is the first-line treatment for uncomplicated cystitis?", "Nitrofurantoin",
         "The guideline recommends nitrofurantoin first-line.", True),
        ("What is the first-line treatment for uncomplicated cystitis?", "Nitrofurantoin",
         "The guideline recommends trimethoprim first-line.", False),
        ("What was the net debt to EBITDA ratio?", "2.8x", "2.8 times", True),
        ("What was the net debt to EBITDA ratio?", "2.8x", "3.1x", False),
        ("What type of batteries does the remote take?", "Two AAA batteries", "2 x AAA", True),
        ("What are the canvas's dimensions?", "73 × 92 cm", "730 × 920 mm", True),
        ("How often must fume hoods be certified?", "Annually", "Every 12 months.", True),
        ("How often must fume hoods be certified?", "Annually", "Every 24 months.", False),
        ("How far apart should the doses be given?", "24 hours", "Once every 24 hours.", True),
        ("What is the service interval?", "every 15,000 km or 12 months",
         "Every 12 months or 15,000 km.", True),
        ("When does the warranty expire?", "31 March 2025", "03/31/2025", True),
        ("When does the warranty expire?", "31 March 2025", "03/30/2025", False),
        ("When does the warranty expire?", "4 March 2025", "04/03/2025", False),  # which way?
        ("How many resit attempts are allowed?", "One", "Students may resit a failed module once.",
         True),
        ("How many resit attempts are allowed?", "Two", "Students may resit a failed module once.",
         False),
        # a ratio's sides, named by the truth, turned round
        ("What was the oversubscription factor?", "3.2 (requested/available)",
         "Available time was 3.2 times the requested time.", False),
        ("What was the oversubscription factor?", "3.2 (requested/available)",
         "Requested time was 3.2 times the available time.", True),
    ],
)  # fmt: skip
def test_the_eighth_round_rules_and_their_wrong_twins(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# The ninth round's sets, scored once after the eighth round's rules, found two of them
# firing past their words.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a result's sign in words counts only against a truth that says one
        ("Did the Q2 results include a net loss?",
         "No. It reported net income of $88 million despite heavy catastrophe losses.",
         "No, it posted a small net profit of $88 million.", True),
        # a rate both sides say is no word of the answer's own
        ("What is the maximum fine?",
         "Up to €20 million or 4% of total worldwide annual turnover, whichever is higher",
         "€20 million or 4% of global annual turnover, whichever is greater.", True),
    ],
)  # fmt: skip
def test_the_ninth_rounds_cases_of_the_eighth_rounds_rules(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A review of the eighth round's rules (a helper, 353 cases of its own) found them firing past
# their words; each case as a careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a day of another part, only across a contrast; US days keep their year
        ("When was the agreement signed?", "March 3, 2020",
         "The agreement was signed on March 3, 2020 and amended on May 5, 2021.", True),
        ("When did the merger close?", "1 October 2022",
         "The merger was announced on 15 March 2022 and completed on 1 October 2022.", True),
        # an earlier state asked about before any change
        ("What was the annual fee before the price hike?", "$95",
         "$95, which was later replaced by a $120 fee.", True),
        ("What was the interest rate before the Fed's hike?", "5%",
         "5%, which has since been raised to 5.5%.", True),
        # a word of the truth naming another one, replaced
        ("Who chairs the audit committee?", "Maria Lopez",
         "Maria Lopez. The former chair, Ana Lopez, was replaced in 2022.", True),
        # causes in other words (the rule that refused them was dropped)
        ("Did margins fall, and why?", "Yes, due to higher raw material costs.",
         "Yes, because of increased input prices.", True),
        ("Does the medication cause drowsiness?", "Yes, because it is a sedating antihistamine.",
         "Yes, due to its anticholinergic effects.", True),
        # a bound on a day is a hedge
        ("What is the effective date of the rule?", "1 January 2024", "1 January 2024 or later",
         False),
        ("When was the plant commissioned?", "2019", "2019 or later", False),
        # a failure the question itself asks about
        ("Did the system fail to back up data?", "Yes, the nightly backup failed.",
         "It did not fail to back up data.", False),
        # the precision asked, across units
        ("What was the total distance? Round to two decimals.", "2.35 km", "2,350 m", True),
        # a question's period of its own figure
        ("The patient takes 2 tablets per day. What is the strength of each tablet?", "500 mg",
         "500 mg per day", False),
        # a dose's frequency said beside its size; a size per dose for a daily amount
        ("What is the usual adult dose?", "500 mg twice daily", "500 mg per dose, twice a day",
         True),
        ("What is the maximum dose for cats?", "10 mg per day",
         "10 mg per dose, up to three doses a day.", False),
        # points of a score, not of a percentage
        ("How much did the Net Promoter Score change?", "It rose from 32 to 45 points",
         "It increased by 13.", True),
        # the result word nearest the figure
        ("How much did the operating margin improve?",
         "The operating deficit of $4 million became a surplus of $1 million",
         "From a $4 million deficit to a $1 million surplus", True),
        # "Correct" before a denial affirms no claim of the question's
        ("Does the policy cover flood damage?", "No",
         "Correct – the policy does not cover flood damage.", True),
        ("Is flood damage excluded?", "Yes", "Correct — flood damage is excluded.", True),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_eighth_round(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# Rules drawn from the ninth round's sets after they were scored once.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a figure labelled with a year the question does not ask
        ("What was the operating margin in 2022?", "18.5%",
         "Operating margin was 18.5% in 2021 and improved further in 2022.", False),
        ("What was the operating margin in 2022?", "18.5%", "18.5% in 2022, up from 17% in 2021.",
         True),
        ("What was the operating margin in FY2022?", "18.5%", "18.5% for fiscal 2022", True),
        # bounds written with symbols
        ("How should the dose be adjusted in renal impairment?",
         "Reduce the dose by 50% if CrCl < 30 mL/min", "Reduce by 50% if CrCl is above 30 mL/min.",
         False),
        ("How should the dose be adjusted in renal impairment?",
         "Reduce the dose by 50% if CrCl < 30 mL/min", "Reduce by 50% if CrCl is below 30 mL/min.",
         True),
        ("What is the minimum age?", "≥ 18 years", "18 or older", True),
        # the first said plainly of the truth, where the question asks a lower rank
        ("Who was the company's second-largest customer?", "Walmart",
         "Walmart was the largest customer, followed by Target.", False),
        ("Who was the company's second-largest customer?", "Walmart",
         "Walmart was the second-largest customer, after Target.", True),
        ("Who was the company's second-largest customer?", "Walmart",
         "Walmart, after Target, the largest.", True),
        # a truth that opens "No more than", "No later than" is a bound, not a "no"
        ("How many tablets can I take?", "No more than 8 tablets in 24 hours",
         "8 tablets in 24 hours", True),
        ("How many tablets can I take?", "No more than 8 tablets in 24 hours", "No", False),
        ("How close to a fire hydrant can you park?", "No closer than 15 feet", "15 ft", True),
        ("How close to a junction may a vehicle be parked?", "No closer than 10 metres",
         "Within 10 metres of the junction.", False),
        ("When must I apply?", "No later than 30 June", "By 30 June", True),
        # a figure naming its case as the question does, with another value
        ("How much does visitor parking cost for up to 4 hours?", "£4.50",
         "£4.50 for up to two hours", False),
        ("How much does visitor parking cost for up to 4 hours?", "£4.50",
         "£4.50 (£2.50 for up to 2 hours)", True),
        # a "no" said twice, by the word and by a prefix, is the truth's "No"
        ("Is a family vacation an excused absence?", "No", "No, family vacations are unexcused.",
         True),
        ("Is the leave paid?", "Yes", "Yes, it is unpaid.", False),
        ("How many weeks of paid leave?", "16 weeks", "16 weeks, unpaid", False),
    ],
)  # fmt: skip
def test_the_ninth_rounds_rules(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A review of the ninth round's rules (a helper, 362 cases of its own) found them firing past
# their words; each case as a careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # an approximate truth, or a coarser rounding asked: its zeros pad
        ("Approximately what was the closing share price?", "$5.00", "$4.98", True),
        ("What was the closing share price?", "$5.00", "$4.98", False),
        ("What was the operating margin, to the nearest percent?", "5.0%", "5.3%", True),
        # years: all that label the figure, split years, years that name an event
        ("What was the corporate income tax rate in 2023?", "21%", "21% in 2022 and 2023 alike",
         True),
        ("What was the winning time at the Tokyo 2020 Olympics?", "9.80 seconds",
         "9.80 seconds in 2021, when the postponed Games were held", True),
        ("What was revenue in financial year 2022/23?", "£5.1 billion", "£5.1 billion in 2023",
         True),
        # "or later" bounds a version as "or newer" does
        ("What is the minimum Python version required?", "Python 3.8", "Python 3.8 or later", True),
        # the day chooser reads words, not months, and years where both write one
        ("When did it take effect?", "1 July 2021",
         "It was adopted on 1 July 2021 but took effect on 1 July 2022.", False),
        # "Correct" to a question asked in the negative
        ("Is it true that there is no entrance fee?", "Yes", "Correct, there is no entrance fee.",
         True),
        ("Did the company fail to meet its 2022 emissions target?", "Yes",
         "Correct, it did not meet the target.", True),
        # the result word of the figure, not of the one it is compared with
        ("What was the net result?", "a net loss of $5 million",
         "A loss of $5 million versus profit of $3 million.", True),
        # bounds by symbols, with or without a space; not an arrow, not a variable's
        ("What is the fasting glucose threshold?", "126 mg/dL or higher", "<126 mg/dL", False),
        ("What is the fasting glucose threshold?", "126 mg/dL or higher", "≥126 mg/dL", True),
        ("What is the boiling point of water at sea level?", "100 °C", "> 100 °C", False),
        ("What significance threshold was used?", "0.05", "p < 0.05", True),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_ninth_round(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# Rules drawn from the eleventh round's sets after they were scored once.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # versions listed side by side
        ("Which version first introduced the async API?", "Version 2.3.0",
         "It appears in the changelog entries for 2.1.0, 2.3.0 and 3.0.0.", False),
        ("Which version first introduced the async API?", "Version 2.3.0",
         "Version 2.3.0 (released after 2.2.1)", True),
        # a letter after its kind's word is a label whatever follows
        ("What type of RCD is required?", "Type B RCD, 30 mA", "Type A RCD, 30 mA", False),
        ("What type of RCD is required?", "Type B RCD, 30 mA", "A Type B RCD rated 30 mA", True),
        # a count given as a change where a level is asked
        ("How many units were sold in Q3 2024?", "48,200 units",
         "An increase of 48,200 units over Q2.", False),
        ("What was the inflation rate in December?", "2.9%",
         "Consumer prices rose 2.9% year on year in December.", True),
    ],
)  # fmt: skip
def test_the_eleventh_rounds_rules(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# A third review (a helper, 255 cases of its own at the edges of the tenth and eleventh
# rounds' rules) found them firing past their words; each case as a careful grader judges it.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # a rank counted "from last year" (the rank-from-the-other-end rule was dropped)
        ("What was the university's ranking in 2024?", "4th",
         "It rose to 4th from last year's 7th.", True),
        # a count that is what the question asks added, or a level said by a bare verb
        ("How many jobs did the US economy add in June?", "206,000",
         "Nonfarm payrolls increased by 206,000 in June.", True),
        ("How tall was the Eiffel Tower when completed?", "300 metres", "It rose 300 metres.",
         True),
        ("How many members did she recruit?", "40 members", "She signed up 40 members.", True),
        # decimals beside a committed figure are context, not versions
        ("What was diluted EPS in 2023?", "$3.45",
         "Diluted EPS was $3.45 in 2023, compared with 2.98 and 2.51 in 2022 and 2021.", True),
        ("Which OAuth version uses bearer tokens?", "OAuth 2.0", "OAuth 2.0, unlike 1.0 and 1.0a.",
         True),
        # an "A" after a word that opens a sentence is an article
        ("How do I stop unwanted calls from one number?", "Block A Caller",
         "Block the caller from your call log.", True),
        # a "no" said twice excuses only what the question asks
        ("Is the hotel pool heated?", "No, but it is covered", "No, it's uncovered and unheated.",
         False),
    ],
)  # fmt: skip
def test_the_reviews_cases_of_the_eleventh_round(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# Figures said in another form (stop 96, from the misses of the sets already kept): each true
# form beside the wrong reading it was given or the near miss it must still refuse.
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        # multiples and fractions in words and figures
        ("How many dressing rooms must the venue provide?", "6 dressing rooms.",
         "Half a dozen dressing rooms are required.", True),
        ("How many dressing rooms must the venue provide?", "6 dressing rooms.",
         "A dozen dressing rooms.", False),
        ("What is the overtime rate?", "1.5 times the hourly rate", "time and a half", True),
        ("What is the overtime rate?", "2 times the hourly rate", "time and a half", False),
        ("What discount rate is assumed?", "6.75%.", "six and three-quarter percent", True),
        ("What discount rate is assumed?", "6.25%.", "six and three-quarter percent", False),
        ("What is the protein bonus?", "0.6 cents per litre", "Six tenths of a cent per litre.",
         True),
        ("What majority is required to amend it?", "Two-thirds of members",
         "a 2/3 majority of members", True),
        ("What majority is required to amend it?", "Three-quarters of members",
         "a 2/3 majority of members", False),
        ("What fraction of members must vote in favour?", "2/3", "2/3 of the members present.",
         True),
        ("How long did the revenue decline last?", "6 quarters", "Six quarters.", True),
        ("What is the maximum riser height?", "7 3/4 inches", "7.75 inches", True),
        ("What is the maximum riser height?", "7 1/4 inches", "7.75 inches", False),
        # decimals said in words
        ("What was the effective tax rate?", "21.3%", "Twenty-one point three percent.", True),
        ("What was the effective tax rate?", "21.3%", "Twenty-one point eight percent.", False),
        # scientific notation, thousands as "k"
        ("What learning rate did the authors use?", "3e-4", "0.0003", True),
        ("What learning rate did the authors use?", "3e-4", "0.003", False),
        ("How many cells are seeded per well?", "2 × 10^5 cells per well", "200,000 cells per well",
         True),
        ("How many employees did it have at year-end?", "12,400", "12.4k", True),
        ("How many employees did it have at year-end?", "12,400", "12.7k", False),
        # units written otherwise, and converted
        ("By how much did systolic pressure fall?", "8 mmHg", "It fell by 8 mm Hg.", True),
        ("What is the maximum takeoff weight?", "79,000 kg", "79 tonnes", True),
        ("What is the maximum takeoff weight?", "79,000 kg", "79 kg", False),
        ("What is the gold grade?", "3.8 g/t", "3.8 grams per tonne", True),
        # "T" and "t" are no tonnes of a recipe or a scanner
        ("How much butter does the recipe call for?", "2 tablespoons", "2 T", True),
        ("What field strength does the scanner use?", "3 tesla", "3 T", True),
        ("What is the switching capacity?", "176 Gbps", "176 Gbit/s", True),
        ("What concentration of ampicillin is used?", "100 µg/mL", "100 ug/ml", True),
        ("What concentration of ampicillin is used?", "100 µg/mL", "100 mg/ml", False),
        ("What is the engine's displacement?", "2.0 L", "2,000 cc", True),
        ("What is the density?", "1 g/cm³", "1,000 kg/m³", True),
        ("What is the density?", "1 g/cm³", "1,000 g/m³", False),
        ("What density does the datasheet give?", "7850 kg/m³", "7,850 kg per cubic metre", True),
        ("What was the haemoglobin on admission?", "13.5 g/dL", "135 g/L", True),
        ("What dose does the scan deliver?", "2 mSv", "2,000 µSv", True),
        ("What dose does the scan deliver?", "2 mSv", "2,000 mSv", False),
        # a change of temperature has no zero point to convert
        ("How much did the overnight temperature fall?", "5 °C", "9 °F", True),
        ("How much did the overnight temperature fall?", "5 °C", "41 °F", False),
        ("What is the overnight low?", "5 °C", "41 °F", True),
        ("How much did the patient's temperature rise?", "From 37 °C to 39 °C",
         "From 98.6 °F to 102.2 °F", True),
        ("How far can the temperature drop before the pipes freeze?", "To 0 °C", "To 0 °F",
         False),
        # shares said as counts, where the other side gives a percentage
        ("What was the voter turnout?", "62%", "62 out of every 100 eligible voters", True),
        ("What share reported side effects?", "One in five", "20%", True),
        ("What share reported side effects?", "One in four", "20%", False),
        ("How many samples failed?", "2", "2 out of 3", True),
        ("What share of reviewers recommend it?", "80%", "It is rated 4 out of 5 stars.", False),
        ("By how much does the drug reduce the relative risk?", "20%",
         "One in five patients have a stroke.", False),
        # hundredths of a currency
        ("What is the per-word rate?", "$0.16", "16 cents per word", True),
        ("What is the US postage rate for a postcard?", "56 cents", "€0.56", False),
        ("What is the unit price?", "£0.42", "42p each", True),
        ("What is the unit price?", "£0.42", "24p each", False),
        # how often, in one word; one of a unit, alone
        ("How often should the filter be replaced?", "Every 3 months", "Quarterly.", True),
        ("How often should the filter be replaced?", "Every 6 months", "Quarterly.", False),
        ("How often must the system be serviced?", "Every 6 months", "Semi-annually.", True),
        ("How often must the system be serviced?", "Every 6 months", "Annually.", False),
        ("What is the time limit?", "14 days", "A fortnight", True),
        ("How long must a donor wait after symptoms clear?", "7 days",
         "A week after the symptoms started.", False),
        # "both" names two
        ("Which lines are blocked?", "Both Up and Down Main lines", "Down Main", False),
        ("Which lines are blocked?", "Both Up and Down Main lines", "The Up and Down Main lines",
         True),
    ],
)  # fmt: skip
def test_figures_said_in_another_form(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct


# An answer's acronym for the words its truth spells out (stop 96).
@pytest.mark.parametrize(
    ("question", "truth", "answer", "correct"),
    [
        ("What is the maximum flight altitude?", "120 m above ground level", "120 metres AGL",
         True),
        ("What is the maximum flight altitude?", "120 m above ground level", "120 metres AMSL",
         False),
        ("Which two countries share the longest border?", "Canada and the United States",
         "US and Canada", True),
        ("Which two countries share the longest border?", "Canada and the United States",
         "UK and Canada", False),
        ("Who publishes the series?", "Bureau of Labor Statistics", "The BLS", True),
        ("Who publishes the series?", "Bureau of Labor Statistics", "The BEA", False),
        # initials across a comma name nothing
        ("What is the deadline?", "5 pm Eastern, two days before", "5 pm ET", False),
    ],
)  # fmt: skip
def test_an_answers_acronym_for_the_truths_words(judge, question, truth, answer, correct):
    assert judge.judge(question, truth, answer).correct is correct
