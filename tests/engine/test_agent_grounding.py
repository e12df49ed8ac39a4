"""Grounded figures: with `Limits.grounded_figures`, an answer writes only figures shown;
with `Limits.row_figures`, an answer that begins with a row's label writes its first figure.

The rules on their own over a small vocabulary, then in the hf engine: a random tiny model over
a character tokenizer writes figures at random, and grounded, writes none it was not shown.
"""

import string

import pytest
import torch

from engine.agent.grounding import FigureGrounding, ShownFigures, figures_in
from engine.agent.hf_engine import Grounding, HFRolloutEngine
from engine.agent.trajectory import Limits, SamplingParams
from engine.packs.filings.rows import ResultRows
from tests.helpers.decoding import (
    RESULTS,
    ROW_ANSWERS,
    FiguresIndex,
    Hit,
    answers,
    make_random_model,
)
from tests.helpers.models import char_tokenizer

VOCAB = list("0123456789,. $m") + ["12", ".5", "</answer>", "[EOS]"]
SHOWN = ShownFigures.of("Total assets 59,268 and 3.5 (in millions)")


def allowed(answer: str) -> set[str]:
    banned = FigureGrounding(VOCAB).banned(answer, SHOWN)
    if banned is None:
        return set(VOCAB)
    return {t for t, b in zip(VOCAB, banned, strict=True) if not b}


def test_figures_are_read_as_written_and_without_thousands_separators():
    assert figures_in("Total 59,268. Then 3.5, and 2023") == {
        "59,268",
        "59268",
        "3.5",
        "2023",
    }


def test_a_figure_may_start_only_as_a_shown_one_starts():
    assert allowed("$") & set("0123456789") == {"3", "5"}
    assert "12" not in allowed("$")


def test_an_unfinished_figure_goes_on_as_a_shown_one_and_may_not_stop():
    assert allowed("$59,2") == {"6"}
    assert allowed("$5926") == {"8"}


def test_a_finished_figure_may_stop_or_take_a_point_as_punctuation():
    after = allowed("$59,268")
    assert {" ", "m", "</answer>", "[EOS]", "."} <= after
    assert not after & set("0123456789")


def test_words_are_free_outside_figures():
    assert {" ", "m", "$", "</answer>", "[EOS]", ","} <= allowed("The total is ")


@pytest.fixture(scope="module")
def random_model():
    return make_random_model()


def test_grounded_answers_write_only_figures_the_question_or_results_showed(random_model):
    unshown, written = answers(random_model, grounded=False)
    assert any(unshown), "a random model writes figures it was not shown"
    unshown, written = answers(random_model, grounded=True)
    assert not any(unshown), written
    assert any(figures_in(w) for w in written)  # it still writes figures: shown ones


def test_logits_wider_than_the_tokenizer_are_masked_whole():
    tokenizer = char_tokenizer()
    width = len(tokenizer) + 7  # models pad their vocabulary past the tokenizer's
    grounding = FigureGrounding.for_tokenizer(tokenizer, width)
    banned = grounding.banned("$59,2", SHOWN)
    assert banned.shape == (width,) and banned[len(tokenizer) :].all()  # padding ends a figure
    assert not grounding.banned("$59,268", SHOWN)[len(tokenizer) :].any()


ROWS = ResultRows.of(RESULTS)


@pytest.mark.parametrize("answer", ROW_ANSWERS)
def test_an_answer_beginning_with_a_rows_label_writes_that_rows_first_figure(answer):
    quoted = ROWS.quoted(answer)
    assert (quoted and set(quoted.figures)) == ROW_ANSWERS[answer]


def test_the_engine_masks_every_figure_but_the_quoted_rows_first(random_model):
    model, tokenizer = random_model
    engine = HFRolloutEngine(
        model, tokenizer, FiguresIndex(), limits=Limits(row_figures=True), system_prompt="s"
    )
    digits = set(string.digits)

    def allowed(answer: str, grounding: Grounding) -> set[str]:
        ids = tokenizer.encode(answer, add_special_tokens=False)
        logits = engine._ground(torch.zeros(1, len(tokenizer)), [(grounding, ids)])
        return {tokenizer.decode([i]) for i in torch.isfinite(logits[0]).nonzero()[:, 0].tolist()}

    rows_only = Grounding(None, ROWS, answer_opened=True)
    assert allowed("Total assets $", rows_only) & digits == {"2"}
    assert allowed("Total assets $236,49", rows_only) & digits == {"5"}
    assert allowed("Yes ", rows_only) >= digits  # no row quoted and nothing grounded: any
    grounded = Grounding(ShownFigures.of(RESULTS), ROWS, answer_opened=True)
    assert allowed("Total assets $", grounded) & digits == {"2"}  # the row, not any shown
    assert allowed("Yes ", grounded) & digits == set("12430")  # shown figures' first digits


class RowsIndex:
    def search(self, query: str, k: int = 5, question: str = "") -> list[Hit]:
        return [Hit("c0", "Total assets $236,495 $219,295")]


def test_a_rollouts_grounding_reads_the_rows_of_its_results_only_under_the_limit(random_model):
    model, tokenizer = random_model
    for row_figures in (True, False):
        limits = Limits(max_new_tokens=4, row_figures=row_figures)
        engine = HFRolloutEngine(model, tokenizer, RowsIndex(), limits=limits, system_prompt="s")
        trajectory = engine.rollout(["assets of acme?"], SamplingParams(temperature=0), echo_k=1)[0]
        grounding = engine._grounding(trajectory)
        if not row_figures:
            assert grounding is None
            continue
        assert grounding.shown is None  # grounded figures are off: only the row's rule
        assert set(grounding.allowed("Total assets ").figures) == {"236,495", "236495"}
