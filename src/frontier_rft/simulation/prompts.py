"""Prompt text for simulated tasks: what a selector given only prompts gets to read.

A real prompt tells its topic fairly reliably, its difficulty only weakly (longer, more
and larger numbers, rarer concepts) and a task's own quirks not at all. The generator
follows that, from each task's latent domain, level and skills:

- an opening paraphrase ("Find", "Compute", "What is", ...) and filler words shared by all;
- concept words, each drawn from the task's own skill with probability
  `0.4 * prompt_signal`, from its prerequisite skill with `0.2 * prompt_signal`, and
  otherwise from any level of its domain (topic, no level) or the general skill;
- numbers: 1 + Poisson(0.6 * level) of them, each with 1 + Binomial(level + 1, 0.4) digits;
- distractors: 1-5 words from a 400-word vocabulary no skill uses (names, objects).

The task-specific difficulty noise (`task_noise`) leaves no trace in the text. Words are
pseudo-words from a seeded syllable generator, so no real-word prior helps a featurizer.
`prompt_signal = 0` keeps topic and number cues but no level-specific concept words.
"""

from __future__ import annotations

import numpy as np

__all__ = ["task_prompts"]

_OPENERS = (
    "Find",
    "Compute",
    "Determine",
    "Solve for",
    "What is",
    "Calculate",
    "Evaluate",
    "Show how to get",
    "Work out",
    "Give",
)
_FILLER = (
    "the value of the",
    "such that the",
    "given that",
    "if each",
    "where all",
    "so that",
    "when the",
    "for which the",
    "and the",
    "in terms of",
)
_SYLLABLES = (
    "ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "qui", "an", "pe", "zor", "lin", "ta",
    "mo", "ri", "ex", "bal", "cy", "nu", "gar", "fe", "ho", "ju", "wes", "ty", "ol", "pra",
)  # fmt: skip
WORDS_PER_SKILL = 12
DISTRACTOR_WORDS = 400


def _pseudo_words(count: int, rng: np.random.Generator, taken: set[str]) -> list[str]:
    words: list[str] = []
    while len(words) < count:
        word = "".join(rng.choice(_SYLLABLES, size=int(rng.integers(2, 4))))
        if word not in taken:
            taken.add(word)
            words.append(word)
    return words


def task_prompts(
    domain: np.ndarray,
    level: np.ndarray,
    num_domains: int,
    num_levels: int,
    domain_names: tuple[str, ...],
    prompt_signal: float,
    rng: np.random.Generator,
) -> tuple[str, ...]:
    """One prompt per task, from its domain and level (see the module docstring)."""
    vocab_rng = np.random.default_rng(7919)  # one vocabulary for every pool and seed
    taken: set[str] = set()
    skill_words = [
        _pseudo_words(WORDS_PER_SKILL, vocab_rng, taken) for _ in range(num_domains * num_levels)
    ]
    general_words = _pseudo_words(WORDS_PER_SKILL, vocab_rng, taken)
    distractors = _pseudo_words(DISTRACTOR_WORDS, vocab_rng, taken)
    own, prereq = 0.4 * prompt_signal, 0.2 * prompt_signal
    prompts = []
    for d, lv in zip(domain.tolist(), level.tolist(), strict=True):
        skill = d * num_levels + lv
        words: list[str] = []
        for _ in range(3 + int(rng.poisson(2.0))):
            u = rng.random()
            if u < own:
                pool = skill_words[skill]
            elif u < own + prereq and lv > 0:
                pool = skill_words[skill - 1]
            elif u < 0.9:
                pool = skill_words[d * num_levels + int(rng.integers(num_levels))]
            else:
                pool = general_words
            words.append(pool[int(rng.integers(len(pool)))])
        words += [
            distractors[int(rng.integers(DISTRACTOR_WORDS))] for _ in range(rng.integers(1, 6))
        ]
        rng.shuffle(words)
        numbers = [
            str(int(rng.integers(10 ** (k - 1) if k > 1 else 0, 10**k)))
            for k in 1 + rng.binomial(lv + 1, 0.4, size=1 + int(rng.poisson(0.6 * lv)))
        ]
        cut = int(rng.integers(1, len(words)))
        text = (
            f"{_OPENERS[int(rng.integers(len(_OPENERS)))]} {' '.join(words[:cut])} "
            f"{_FILLER[int(rng.integers(len(_FILLER)))]} {' '.join(words[cut:])} "
            f"with {', '.join(numbers)} ({domain_names[d]})."
        )
        prompts.append(text)
    return tuple(prompts)
