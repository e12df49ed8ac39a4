"""The offline judge: is this answer the ground truth, said another way? No model, no
network: an answer is credited only when it commits to the truth (its figures with sign,
scale, unit and precision; its entity, option, day, time or yes/no; otherwise the truth's
words), with no negation, hedge, opposite or other case beside it. Held to its labelled sets
(tests/data/judge_set.jsonl, and tests/data/judge_set_independent.jsonl, written by reviewers
who never read it); each rule's history, and what it still gets wrong, in docs/judge-rejudge.md.
It is also RL's reward, run on whatever a policy writes: every rule has to stay fast on any
output (the reviews in docs/judge-rejudge.md time 2,000-character answers and long tokens).

The package, by what each module checks (each imports only those above it in this list):
- `words`: the letters an answer is read in, the truth's key words and the share an answer
  must say, names, lists and their order, ranks, a verb's form;
- `codes`: codes and their shapes, the labels of a document's parts ("Section 9.10", "Band
  A"), command-line options, names written as one token, forms joined by slashes;
- `days`: times of day, days, years and periods: the day or year a truth names, days listed
  side by side or set against each other, the period a figure is labelled with;
- `figures`: the words of a figure, its unit, scale and sign, how often it counts, changes
  from one figure to another, the precision and the bound a question asks for;
- `clauses`: which part of an answer is judged: its statements and clauses, the clause that
  answers what is asked, a short first statement, a truth said to be replaced;
- `polarity`: yes and no, negation, exceptions and conditions after a yes or no, refusals,
  and what of an answer can hedge it;
- `case`: `_Case`, one question, truth and answer with their figures read once, and the
  checks on those figures;
- `judge`: `OfflineJudge`, the order of the checks in `judge()` and a `_judge_*` method for
  each kind of truth.
"""

from engine.rewards.offline_judge.judge import OfflineJudge

__all__ = ["OfflineJudge"]
