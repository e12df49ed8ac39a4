"""The agent protocol's cases that the engine and the published bundle must read alike
(tests/engine/test_agent_protocol.py, test_publishing_folder.py)."""

QUESTION = "What is the FY2018 capital expenditure for 3M?"


# (what the model writes, what the search runs): a scope alone searches the question.
SEARCHES = [
    ("[3M 2018]", f"[3M 2018] {QUESTION}"),
    (" [3M 2018 | cash flow statement] ", f"[3M 2018 | cash flow statement] {QUESTION}"),
    ("[3M 2018] capital expenditure", "[3M 2018] capital expenditure"),
    ("capital expenditure [3M]", "capital expenditure [3M]"),
    ("[] ", QUESTION),  # empty brackets: the question itself, everywhere
    ("3M capex", "3M capex"),
]


CUT_TURNS = {
    "<search>[3M 2018] capex Answer in USD millions. Answer in": "</search>",
    "<answer>$1,577 mill": "</answer>",
    "Let me look. <search>capex capex": "</search>",
    "<search>capex <answer>1": "</answer>",
    "<search>capex</search>": "",
    "just talking about capex": "",
}
