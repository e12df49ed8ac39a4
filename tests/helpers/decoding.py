"""The decoding rules' shared cases: a search tool that shows figures, the random tiny models
that loop or write figures, and the case tables that the engine's rules and the published
bundle's copy of them must decide alike (tests/engine/test_agent_greedy_rules.py,
test_agent_grounding.py, test_agent_gpu.py, test_publishing_folder.py)."""

import string
from dataclasses import dataclass

import torch
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from engine.agent.greedy_rules import ends_in_loop
from engine.agent.grounding import figures_in
from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.protocol import ANSWER_OPEN
from engine.agent.trajectory import MODEL, Limits, SamplingParams
from tests.helpers.models import ONE_LAYER, char_tokenizer, tiny_llama, word_tokenizer


@dataclass
class Hit:
    chunk_id: str
    text: str
    doc: str = "doc"
    page: int | None = 1
    entity: str = "acme"
    score: float = 1.0


class FiguresIndex:
    def search(self, query: str, k: int = 5, question: str = "") -> list[Hit]:
        return [Hit(f"c{i}", f"capital expenditure 1,577 and ratio {i}.8") for i in range(k)]


def make_random_model() -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    tokenizer = char_tokenizer()
    torch.manual_seed(0)
    model = tiny_llama(tokenizer, **ONE_LAYER)
    # Digits likelier than the rest, so that answers write many figures.
    with torch.no_grad():
        model.lm_head.weight[tokenizer.convert_tokens_to_ids(list(string.digits))] *= 4
    return model, tokenizer


def answers(random_model, grounded: bool) -> tuple[list[set[str]], list[str]]:
    """Per question, the figures its answer wrote that it was not shown; and the answers."""
    model, tokenizer = random_model
    limits = Limits(max_new_tokens=30, max_result_tokens=200, grounded_figures=grounded)
    engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
    questions = [f"capex of acme in 2018, try {i}?" for i in range(12)]
    trajectories = engine.rollout(questions, SamplingParams(temperature=1.0, seed=5), echo_k=2)
    before, written = zip(*(t.text.split(ANSWER_OPEN, 1) for t in trajectories), strict=True)
    shown = [figures_in(t.question + b) for t, b in zip(trajectories, before, strict=True)]
    return [figures_in(w) - s for w, s in zip(written, shown, strict=True)], list(written)


RESULTS = """<results>
[c0] acme_2022_10K | page 4
Consolidated Balance Sheets (in millions)
Total assets $236,495 $219,295
Total assets held for sale 12 13
Lapse of statute of limitations (104) (17)
Net income increased 17.8% to $340.8 million compared with 2021
Goodwill 10,870 10,870
2022 restructuring charges 243 33 411
</results>"""


# Answers written so far, each with the figures its first figure may be (None: no row quoted).
ROW_ANSWERS = {
    "Total assets $": {"236,495", "236495"},
    "Total assets 236,4": {"236,495", "236495"},
    "Lapse of statute of limitation (": {"104"},  # a word's plural begun
    "Goodwill ": {"10,870", "10870"},  # a whole label of one word
    "Total assets held": {"12"},  # the longer label it begins, over the shorter it holds
    "Total ": None,  # one shared word names no row
    "Total current assets ": None,  # "Total assets" is not what it wrote
    "Net income ": None,  # a sentence is no row
    "Restructuring charges ": None,  # nor a row whose label is a year's
    "Total assets 236,495 million ": None,  # its first figure written: the rest is its own
    "Yes": None,
}


LOOPS = [
    "<search>[3M 2018 | cash flow] amount amount amount",
    "[PepsiCo 2021 | cash flow] amount] amount] amount]",
    "x usd millions usd millions usd millions",
    "a b c d a b c d a b c d",
    "<answer>-111111122222221122222",  # proof93's answer to Best Buy's cash flows
    "<answer>1.1.1.1.1.1.1.1.1.1.1",  # proof92's
    "<answer>1.1.2.2.1.1.2.2.1.1.2",  # proof90's
    "[3M 2018] capex 201820182018201820182018",
    "<answer>1.1.1.1.",  # proof92's, at eight characters
    "<answer>11111111",
    "<answer>-1111111222222211111",  # proof97's: twenty characters, nineteen digits
]


NOT_LOOPS = [
    "amount amount",  # twice is not a loop yet
    "[PepsiCo 2022] What is PepsiCo's capex? PepsiCo",  # a name written again
    "$1,000,000,000 and 1,000,000,000",  # a figure's digits repeat tokens, not words
    "amount amount amoun",  # the third is not written yet
    "a b c d e a b c d e a b c d e",  # a run longer than four words
    "<answer>$1,234,567,890,123",  # a figure's length
    "<answer>-123456789012345",  # fifteen digits: the most a figure has
    "<answer>1,000,000,000,000",  # zeros and separators repeat in a figure
    "<answer>1111111",  # seven characters: not yet
    "<answer>1.1.1.1",
    "<answer>-111111122222221122222 ",  # a word ended
    "<answer>$1,263 million 2022 2022",
    "[3M 2018] statementofconsolidatedcashflows",  # a word of letters
    "",
]


QUESTION = "What was PepsiCo's FY2021Q4 capex, shown in its cash flow statement?"


UNCOPIED = [
    "<search>[Pfizer 2021] capex",  # a training company's name
    "<search>[Pf",  # on its way to one
    "<search>[PepsiCo 2020]",  # a year the question does not ask
    "<search> [3M_2018_10K | cash flow]",  # a document id read in results
    "<search>[PepsiCo 2021 | balance sheet] capex",  # a heading the question does not name
    "<results>…</results>\n<search>[Pfizer",  # a later search in the same segment
    "<search>[PepsiCo 2021 | e]",  # one letter from inside a word (proof56)
    "<search>[PepsiCo 2021 | e ",
    "<search>[PepsiCo 02]",  # inside "2021" only
    "<search>[PepsiCo 2021 | lo]",  # inside "flow" only
    "<search>[epsi 2021]",
]


COPIED = [
    "<search>[PepsiCo 2021] capex",
    "<search>[pepsico 2021 | cash flow] capex Pfizer",  # case aside; after the scope: free
    "<search>[Pe",
    "<search>[PepsiCo's",
    "<search>[PepsiCo 2021 | e",  # a word still being written: "e" may become "expense"
    "<search>[FY2021 | flow statement]",  # the start of a word, whole words
    "<search>[Pepsi 2021]",  # the start of "PepsiCo's", the digits of "FY2021Q4"
    "<search>[FY2021Q4]",
    "<search>[ pepsico |",
    "<search>[] capex",
    "<search>capex of Pfizer",  # no scope
    "<answer>[Pfizer]",  # not a search
]


# QUESTION asks "What was PepsiCo's FY2021Q4 capex, shown in its cash flow statement?"
TERMS_UNCOPIED = [
    "<search>[PepsiCo 2021 | cash flow] capex related",  # a word of the results (proof99)
    "<search>[PepsiCo 2021 | cash flow] capex rel",  # on its way to one
    "<search>[PepsiCo 2021] capex capex ",  # a word twice (proof102)
    "<search>[PepsiCo 2021] capex cap",  # on its way to the one word it can become, written
    "<search>[PepsiCo 2021] capex capex</search>",
    "<search>[PepsiCo 2021] capital</search>",
    "<search>capital expenditure",  # no scope: the whole query is its terms
    "<results>…</results>\n<search>[PepsiCo 2021] amount",  # a later search in the segment
    "<search>[PepsiCo 2021] capex päää",  # letters of another alphabet (proof104)
    "<search>[PepsiCo 2021] capex сал",
    "<search>[PepsiCo 2021] capex | cash",  # a sign the question has not
    "<search>[PepsiCo 2021] capex>",
    "<search>[PepsiCo 2021] capex\n<search",  # a tag other than its closing (proof104)
]


TERMS_COPIED = [
    "<search>[PepsiCo 2021 | cash flow] capex",
    "<search>[PepsiCo 2021 | cash flow] CAPEX shown</search>",  # case aside
    "<search>[PepsiCo 2021] capex st",  # a word still being written: "statement"
    "<search>[PepsiCo 2021] pepsico's capex, cash",  # "pepsico" and "s", the question's ","
    "<search>[PepsiCo 2021]</search>",  # the scope alone: the scoped question
    "<search>[PepsiCo 2021] capex</sea",  # closing
    "<search>[PepsiCo 2021 | cash fl",  # the scope still open: its own rule's
    "<search>pepsico capex shown",
    "<answer>capital expenditure",  # not a search
]


SPAN = "What is the FY2018 - FY2020 3 year average unadjusted EBITDA % margin for Walmart?"


EARLIER_YEAR = [
    "<search>[Walmart 2018]",  # proof96's, proof97's and proof100's: the 2018 filing only
    "<search>[Walmart 2018",
    "<search>[Walmart FY2018 | margin]",
    "<search>[Walmart 2020 | 2018 margin]",
    "<search>[Walmart 201",  # on its way to 2018, not to 2020
    "<search>[Walmart 201 - 2020]",  # proof100's weights under a rule of whole years only
    "<search>[Walmart 20200]",
]


LATEST_YEAR = [
    "<search>[Walmart 2020] EBITDA 2018",  # after the scope: free
    "<search>[Walmart 20",  # on its way to 2020 or 2018: not yet
    "<search>[Walmart 202",
    "<search>[Walmart 2020 | 3 year]",  # digits of no year
    "<search>[Walmart 2020 | ebitda margin]",
    "<search>[Walmart | margin]",
]


EBITDA = "What is the FY2022 unadjusted EBITDA less capex for PepsiCo?"  # proof58's "[FY2022]"


PEPSICO = frozenset({"pepsico"})


UNNAMED = [
    "<search>[FY2022]",  # a question word, but no company: searches every 2022 filing
    "<search>[FY2022 | cash flow] capex",
    "<search>[FY",  # on its way to one
    "<search>[EBITDA ",
    "<search>[| cash flow]",  # a page, no company
    "<search>[] capex",
    "<search>[P 2022]",  # one letter is no name
]


NAMED = [
    "<search>[PepsiCo 2022]",
    "<search>[pepsico 2022 | capex]",
    "<search>[Pepsi 2022]",  # the start of the name
    "<search>[Pe",  # on its way to it
    "<search>[ P",
    "<search>[",
    "<search>FY2022 capex",  # no scope
]


YES_NO_QUESTIONS = [
    "Is 3M a capital-intensive business based on FY2022 data?",
    "Does AMCOR have an improving gross margin profile as of FY2023? If gross margin is not a "
    "useful metric for a company like this, then please state that and explain why.",
    "Looking at VaR, did the risk that JPM faced in the second fiscal quarter of 2023 decrease?",
    "As of Q2'2023, is Pfizer spinning off any large business segments?",
    "were there any board member nominees with more votes against?",
    "For 3M, which sells tape, did revenue grow in 2022?",  # a relative "which" gives way
    "Assume you are an analyst. Using the balance sheet: is 3M's working capital positive?",
]


OTHER_QUESTIONS = [
    "Did Ulta Beauty's wages expense as a percent of net sales increase or decrease in FY2023?",
    "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
    "As of FY2023Q1, why did Pepsico raise full year guidance for FY2023?",
    "If we exclude the impact of M&A, which segment has dragged down 3M's overall growth?",
    "Island revenue in 2022? Is it higher?",  # "Island" is no "Is"; only the first sentence
    "Among operations, investing, and financing activities, which brought in the most cash?",
    "By how much did Pepsico increase its unsecured five year revolving credit agreement?",
]


# QUESTION names "its cash flow statement"; PROFIT names two statements.
PROFIT = "What is PepsiCo's EBITDA? Use the income statement and the statement of cash flows."


STATEMENT_LEFT = [
    "<search>[PepsiCo 2021] capex",  # no filter
    "<search>[PepsiCo 2021]",
    "<search>[PepsiCo 2021 | p7] capex",  # proof72's, a word of no statement's name
    "<search>[PepsiCo 2021 | pepsi",  # a word of the question, not of the name
    "<search>[PepsiCo 2021 | cash flow p",  # on its way to no name's word
    "<search>[PepsiCo 2021 | statement]",  # names no one statement
    "<search>[PepsiCo 2021 | ]",
    "<search>[PepsiCo 2021 | balance sheet]",  # a statement the question does not name
]


STATEMENT_KEPT = [
    "<search>[PepsiCo 2021",  # the names still being written
    "<search>[PepsiCo 2021 |",
    "<search>[PepsiCo 2021 | c",
    "<search>[PepsiCo 2021 | cash flow]",
    "<search>[PepsiCo 2021 | Cash Flow Statement] capex",  # case aside
    "<search>[PepsiCo 2021 | cash flow] capex pepsi p7",  # past the scope: free
    "<search>[PepsiCo 2021 | statement ",  # "statement" may begin the filter
    "<search>capex",  # no scope: the scope rule's matter
    "<answer>$4.6 billion",
]


def make_looping_model() -> tuple[torch.nn.Module, PreTrainedTokenizerFast]:
    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    model = tiny_llama(tokenizer, max_positions=512, **ONE_LAYER)
    with torch.no_grad():  # " amount" the likeliest token after anything
        model.lm_head.weight[tokenizer.convert_tokens_to_ids(" amount")] *= 30
    return model, tokenizer


def segments(looping_model, guarded: bool, sampling: SamplingParams) -> list[str]:
    """Each question's model text, after the prompt."""
    model, tokenizer = looping_model
    limits = Limits(max_new_tokens=24, max_result_tokens=60, loop_guard=guarded)
    engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
    trajectories = engine.rollout([f"capex {i} ?" for i in range(4)], sampling)
    return [
        tokenizer.decode([t for t, p in zip(tr.token_ids, tr.producers, strict=True) if p == MODEL])
        for tr in trajectories
    ]


def loops_in(text: str) -> bool:
    words = text.split()
    return any(ends_in_loop(" ".join(words[:i])) for i in range(len(words) + 1))


CHOICE = "Did Ulta Beauty's wages expense as a percent of net sales increase or decrease in FY2023?"
WHY = "As of FY2023Q1, why did Pepsico raise full year guidance for FY2023?"


WHAT_DROVE = "What drove the reduction in SG&A expense as a percent of net sales in FY2023?"


EXPLAIN_WHY = "What is AMEX's operating margin? If it is not useful, state that and explain why."


ANSWER_FORMS = [
    ("<answer>", CHOICE, False),
    ("<answer>Increased", CHOICE, False),
    ("<answer> decrease.", CHOICE, False),
    ("<answer>Inc", CHOICE, False),  # on its way to "increased"
    ("<answer>Yes", CHOICE, True),  # proof86's and proof87's answer
    ("<answer>Y", CHOICE, True),
    ("<answer>12.4%", CHOICE, True),
    ("<answer>IncrEarnings", CHOICE, True),  # proof87's, let begin "Incr"
    ("<answer>IncrEaSpn", CHOICE, True),  # proof95's, let begin "Increas"
    ("<answer>IncrEaSd", CHOICE, True),  # and let write "Increasd"
    ("<answer>Increased1111111000", CHOICE, True),
    ("<answer>Increased 2023", CHOICE, False),
    ("<answer>Increasements", CHOICE, True),  # proof90's, right by the judge's stemmer
    ("<answer>Increasing expenses", CHOICE, False),
    ("<answer>decreases", CHOICE, False),
    ("<answer>Improvement", "Has the quick ratio improved or declined?", True),
    ("<answer>Improving,", "Has the quick ratio improved or declined?", False),
    ("<answer>Lower", "Was the margin higher or lower in 2022?", False),
    ("<answer>Declining", "Has the quick ratio improved or declined?", False),
    ("<answer>Strong demand", WHY, False),
    ("<answer>1.1 million", WHY, True),  # proof97's "-11 million": a reason is in words
    ("<answer>-", WHAT_DROVE, True),
    ("<answer> $104,233 million", WHAT_DROVE, True),
    ("<answer>Lower marketing expenses", WHAT_DROVE, False),
    ("<answer>", WHAT_DROVE, False),
    ("<answer>-11 million", EXPLAIN_WHY, False),  # "explain why" in its instructions asks none
    ("<answer>Yes", WHY, True),
    ("<answer>No,", WHY, True),
    ("<answer>Northern Europe", WHY, False),
    ("<answer>Yes", "What is Best Buy's FY2019 inventory?", True),  # proof88's
    ("<answer>$5,409 million", "What is Best Buy's FY2019 inventory?", False),
    # proof93's "Yes": the question word opens the clause after three opening phrases
    ("<answer>Yes", OTHER_QUESTIONS[-2], True),
    ("<answer>Yes", "Assume you are an analyst. Answer from the balance sheet: what is X?", True),
    ("<answer>Yes", YES_NO_QUESTIONS[-2], False),  # "which" opens a relative clause there
    ("<answer>1.1 million", YES_NO_QUESTIONS[0], False),  # the yes-or-no rule's matter
    ("<search>[Ulta 2023] wages", CHOICE, False),  # not an answer
]


# An answer's tags: only its own closing one, whatever the question.
ANSWER_TAGS = [
    ("<answer>IncrEasing expenses increase from</search>", True),  # proof87's
    ("<answer>Increasing</s", True),
    ("<answer>Increasing</", False),  # on its way to "</answer>"
    ("<answer>Increasing</answer>", False),
    ("<answer><answer>", True),  # proof86's, where figures were ruled out
    ("<answer><", False),
    ("<answer>$5,409 million<search>", True),
    ("<search>[Ulta 2023] wages</search>", False),  # not an answer
]
