"""The relevance floor of the semantic channel: below it, a fragment is no
more similar to the query than unrelated text is, so its note may not enter
an answer on the semantic channel's word alone (it may still add to a note
another channel found: fusion.ranking).

Similarities are not comparable from one query to the next: with
multilingual-e5-small, unrelated everyday text scores 0.74 against one query
and 0.78 against another, and a nonsense word's best note in a vault scores
0.78-0.84, as high as many real answers (0.81-0.92). So the floor is set per
query: the mean similarity of the query to the reference passages
(semantic/reference.py: everyday text about nothing in particular), plus the
model's margin. Measured with bench/semantic_floor.py and bench/relevance_sweep.py
on piaf-fr and cranfield and their no-answer queries (docs/relevance.md).

The model's margin is the least a space gets: each space also measures what
made-up words score against its own fragments when its vectors are built,
and its floor rises to that where it is higher (semantic/probes.py).

A pack states its margin in model.json (`relevance_margin`), or the [model]
table of the configuration does; for the models documented in docs/models.md
the margins measured here apply, matched by model name (an organisation prefix
and a quantisation suffix aside). A pack of another model gets no floor
(every nearest fragment counts), and its status says so.
"""

from __future__ import annotations

import re

# multilingual-e5-small int8: the best note of a query nothing answers scores
# at most 0.048 (piaf-fr) and 0.077 (cranfield) above the query's mean
# similarity to the reference passages; the best note of a judged question at
# least 0.057 (piaf-fr, 1st percentile) and 0.109 (cranfield). At 0.07 (bench/
# relevance_sweep.py, bench/noanswer.py): no made-up word gets a semantic answer
# on piaf-fr, 3 % on cranfield (8 % at 0.06), everyday questions on cranfield
# get 0.3 notes only the semantic channel found per top 10 (0.6 at 0.06, 8.9
# without a floor), and the fused nDCG@10 stays (piaf-fr 0.8511, cranfield
# 0.4078; 0.8525 and 0.4080 at 0.06); 0.08 would cost the semantic channel alone
# 0.03 nDCG more on piaf-fr and lose the sample vault's Hamlet (0.071 above).
E5_SMALL_MARGIN = 0.07
# all-MiniLM-L6-v2 int8 (English) separates them widely on cranfield: at most
# 0.249 above for a query nothing answers, at least 0.462 for a judged question;
# the margin sits in the middle of that gap.
MINILM_L6_MARGIN = 0.35

# Fusion trusts the channel less on a query whose best hit barely clears the
# floor: its weight is (best − unrelated) / (CONFIDENT_MARGINS × margin),
# between LEAST_WEIGHT and 1. On the dumped rankings (bench/relevance_sweep.py,
# margin 0.06): piaf-fr nDCG@10 0.8496 → 0.8525, cranfield 0.4082 → 0.4080;
# 3 margins lost on both (0.8481, 0.4063).
CONFIDENT_MARGINS = 2.0
LEAST_WEIGHT = 0.5

KNOWN_MARGINS: dict[str, float] = {
    "multilingual-e5-small": E5_SMALL_MARGIN,
    "all-minilm-l6-v2": MINILM_L6_MARGIN,
}
_SUFFIX = re.compile(r"([-_](int8|uint8|q8|quantized|onnx|fp16|fp32))+$")


def model_family(name: str) -> str:
    """'Xenova/multilingual-e5-small' and 'multilingual-e5-small-int8' → 'multilingual-e5-small'."""
    return _SUFFIX.sub("", name.rsplit("/", 1)[-1].strip().lower())


def query_weight(best: float, unrelated: float, margin: float) -> float:
    """How much fusion trusts the channel on this query (1: fully)."""
    if margin <= 0:
        return 1.0  # no margin, no notion of "close to the floor"
    return min(1.0, max(LEAST_WEIGHT, (best - unrelated) / (CONFIDENT_MARGINS * margin)))


def known_margin(name: str) -> float | None:
    """The margin measured for this model, or None when it was never measured."""
    return KNOWN_MARGINS.get(model_family(name))
