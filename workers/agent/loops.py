"""Greedy word loops, and the guard against them.

A small model decoding greedily can fall into writing one word, or a few, over and over
until the turn's token limit cuts it: "[3M 2018 | cash flow] amount amount amount …",
"[PepsiCo 2022 | unadjusted] unadjusted unadjusted …" (proof50-52's validation queries).
The query it ran then held none of the key terms it might have written after the first
"amount". With `Limits.loop_guard`, greedy decoding takes the likeliest token that does not
make the turn end with the same run of words written three times in a row. Words, not
tokens: a figure's digits ("1,000,000") repeat tokens and are one word.

Sampling (temperature > 0) is never guarded: the trainer recomputes the log-probs of the
tokens it sampled under the model's own distribution, and a loop is greedy's failure.
"""

MAX_RUN_WORDS = 4  # the longest run of words a loop repeats
REPEATS = 3  # a run written this many times in a row is a loop
MAX_SKIPPED = 8  # candidates a step may pass over before it writes the next one anyway


def ends_in_loop(text: str) -> bool:
    """Whether `text` ends with one run of 1-4 words written three times in a row
    ("amount amount amount", "amount] usd amount] usd amount] usd")."""
    words = text.split()
    for n in range(1, MAX_RUN_WORDS + 1):
        tail = words[-n * REPEATS :]
        if len(tail) < n * REPEATS:
            break
        if all(word == tail[i % n] for i, word in enumerate(tail)):
            return True
    return False
