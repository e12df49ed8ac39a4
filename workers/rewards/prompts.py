"""Equivalent judge prompts. The judge samples one at every call so that a policy trained
against it cannot fit the quirks of a single wording. All of them ask the same question
with the same rules and the same JSON verdict; only the wording differs.
"""

from dataclasses import dataclass

VERDICT_FORMAT = (
    'Reply with a single JSON object and nothing else: {"correct": true or false, '
    '"score": a number from 0 to 1, "reason": "one short sentence"}.'
)


@dataclass(frozen=True)
class JudgePrompt:
    """One wording of the judging task: a system message and a user message template."""

    id: str
    system: str
    user: str  # formatted with question, ground_truth, answer

    def messages(self, question: str, ground_truth: str, answer: str) -> list[dict[str, str]]:
        user = self.user.format(question=question, ground_truth=ground_truth, answer=answer)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


JUDGE_PROMPTS: tuple[JudgePrompt, ...] = (
    JudgePrompt(
        id="grader",
        system=(
            "You grade answers to questions about financial documents against a reference "
            "answer. An answer is correct when it states the same facts as the reference. "
            "Numbers must agree in value, unit and scale: '$1,577 million', '1577.00' (when "
            "the question asks for USD millions) and '$1.577 billion' agree; '1,577' and "
            "'15.77' do not, nor do '$1,577 million' and '$1,577 billion'. Rounding to fewer "
            "digits is fine. An answer that refuses ('cannot be determined'), lists many "
            "candidate numbers, or only repeats the question is incorrect. Formatting, emoji "
            "and length do not make a wrong answer right. " + VERDICT_FORMAT
        ),
        user="Question:\n{question}\n\nReference answer:\n{ground_truth}\n\n"
        "Answer to grade:\n{answer}",
    ),
    JudgePrompt(
        id="auditor",
        system=(
            "Act as a meticulous financial auditor checking a colleague's answer. Compare it "
            "with the verified answer. It passes only if its figures match the verified ones "
            "once units and scale are taken into account (thousands, millions, billions, "
            "percent). Different formatting of the same figure passes (1577.00 = $1,577 "
            "million = $1.577 billion for a question in USD millions); a figure with other "
            "digits or another scale fails (15.77 is not 1,577). For yes/no questions the "
            "yes/no must match. Evasions, guesses that list several numbers, and echoes of "
            "the question fail. " + VERDICT_FORMAT
        ),
        user="Question asked:\n{question}\n\nVerified answer:\n{ground_truth}\n\n"
        "Colleague's answer:\n{answer}",
    ),
    JudgePrompt(
        id="equivalence",
        system=(
            "Decide whether two answers to the same question are equivalent. Treat numbers "
            "as equivalent when they denote the same quantity: scale words and units count "
            "($1.577 billion equals $1,577 million; when the question asks for USD millions, "
            "a bare 1577.00 equals them too), while different digits or a different scale "
            "do not ('1,577' vs '15.77', 'million' vs 'billion'). Rounding is acceptable. "
            "A non-answer, a list of many numbers hoping one is right, or a restatement of "
            "the question is not equivalent to anything. " + VERDICT_FORMAT
        ),
        user="Question: {question}\nAnswer A (ground truth): {ground_truth}\n"
        "Answer B (candidate): {answer}\nIs B equivalent to A?",
    ),
    JudgePrompt(
        id="teacher",
        system=(
            "You are a strict finance teacher marking a student's short answer with the "
            "answer key. Mark it correct if it gives the same result as the key. Check the "
            "numbers carefully, including their units and whether they are in thousands, "
            "millions or billions: 1577.00 in a question about USD millions, $1,577 million "
            "and $1.577 billion are all the same result, but 15.77 is not 1,577. Accept "
            "sensible rounding. Refusals, shotgun lists of numbers and copying the question "
            "get no credit; decoration earns nothing. " + VERDICT_FORMAT
        ),
        user="Exam question: {question}\nAnswer key: {ground_truth}\nStudent's answer: {answer}",
    ),
)
