#!/usr/bin/env python3
"""Recall's method study (issue 52): ranking and packing methods replayed on the raw material
the memory bench dumps, without rebuilding recall for each one.

    RECALL_LOCOMO=/path/to/locomo-files RECALL_BENCH_DUMP=/tmp/dump.jsonl \
      cargo bench -p recall-engine --bench memory
    python3 scripts/recall-study.py /tmp/dump.jsonl

The dump holds, per conversation, each message's seq, time, session and excerpt tokens, and
per question and budget (the default policy) the window's start, the recall budget, what the
engine chose, and the store's lexical and semantic rankings 400 deep. Each method here turns
the two rankings into an order and fills the recall budget greedily, as recall-core's
`choose` does (the section's frame once, each excerpt whole while it fits); a question
counts when every evidence seq is in the window or chosen. The first line checks the replay:
one of the methods (the engine's own: before issue 52's study, "RRF of each list's best 40";
since, "RRF, 60 hits, sessions") must choose exactly what the engine chose, context by context.
"""

import collections
import json
import sys

FRAME = 35  # the section's frame in cl100k and o200k (recall-core's known_frame_tokens)
BUDGETS = (2000, 4000, 8000)


def load(path):
    convs, questions = {}, []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "messages" in d:
                convs[d["conversation"]] = {m["seq"]: m for m in d["messages"]}
            else:
                questions.append(d)
    return convs, questions


def rrf(lists, k=20.0):
    """recall-core's reciprocal_rank_fusion: ties to the older message."""
    score = collections.defaultdict(float)
    for ranked in lists:
        for i, (seq, _) in enumerate(ranked):
            score[seq] += 1.0 / (k + i + 1)
    return sorted(score.items(), key=lambda x: (-x[1], x[0]))


def minmax(ranked):
    if not ranked:
        return {}
    hi, lo = ranked[0][1], ranked[-1][1]
    span = (hi - lo) or 1.0
    return {seq: (v - lo) / span for seq, v in ranked}


def weighted(lexical, semantic, w):
    """A weighted sum of the two lists' scores, each scaled to 0..1 over its own hits."""
    lex, sem = minmax(lexical), minmax(semantic)
    score = {s: w * lex.get(s, 0.0) + (1 - w) * sem.get(s, 0.0) for s in set(lex) | set(sem)}
    return sorted(score.items(), key=lambda x: (-x[1], x[0]))


def by_session(fused, msgs, alpha, top):
    """Each hit scored alpha x its own score + (1 - alpha) x its session's (the mean of the
    session's best `top` hit scores): a session scored by its best turns."""
    scores = collections.defaultdict(list)
    for seq, v in fused:
        scores[msgs[seq]["session"]].append(v)
    session = {k: sum(sorted(v, reverse=True)[:top]) / top for k, v in scores.items()}
    out = [(s, alpha * v + (1 - alpha) * session[msgs[s]["session"]]) for s, v in fused]
    return sorted(out, key=lambda x: (-x[1], x[0]))


def one_per_session_first(fused, msgs):
    """Each session's best hit first (in rank order), then the rest: coverage of sessions."""
    seen, first, rest = set(), [], []
    for seq, v in fused:
        k = msgs[seq]["session"]
        (rest if k in seen else first).append((seq, v))
        seen.add(k)
    return first + rest


def fill(order, msgs, q, header_saving=0, date_line=0):
    """Greedy: each hit whole while it fits what is left of the budget, the frame once.
    `header_saving`/`date_line` estimate a shorter excerpt header (its date once per date)."""
    used, taken, dates = 0, set(), set()
    for seq in order:
        if seq in taken or seq >= q["window_start"]:
            continue
        cost = msgs[seq]["tokens"] - header_saving
        day = msgs[seq]["session"]
        if date_line and day not in dates:
            cost += date_line
        frame = 0 if taken else FRAME
        if used + frame + cost <= q["recall_budget"]:
            used += frame + cost
            taken.add(seq)
            dates.add(day)
    return taken


def lists(q, n):
    return q["lexical"][:n], q["semantic"][:n]


METHODS = [
    ("today: RRF of each list's best 40, 40 hits",
     lambda q, m: fill([s for s, _ in rrf(lists(q, 40))[:40]], m, q)),
    ("RRF, 60 hits", lambda q, m: fill([s for s, _ in rrf(lists(q, 60))[:60]], m, q)),
    ("RRF, 100 hits", lambda q, m: fill([s for s, _ in rrf(lists(q, 100))[:100]], m, q)),
    ("RRF, 60 hits, sessions: 0.7 turn + 0.3 session (mean of its best 2)",
     lambda q, m: fill([s for s, _ in by_session(rrf(lists(q, 60))[:60], m, 0.7, 2)], m, q)),
    ("weighted fusion (0.5 / 0.5), 100 hits",
     lambda q, m: fill([s for s, _ in weighted(*lists(q, 100), 0.5)[:100]], m, q)),
    ("weighted fusion (0.3 lexical / 0.7 semantic), 100 hits",
     lambda q, m: fill([s for s, _ in weighted(*lists(q, 100), 0.3)[:100]], m, q)),
    ("sessions: RRF 100 hits, 0.7 turn + 0.3 session (mean of its best 2)",
     lambda q, m: fill([s for s, _ in by_session(rrf(lists(q, 100)), m, 0.7, 2)], m, q)),
    ("sessions: RRF 100 hits, 0.5 turn + 0.5 session (its best)",
     lambda q, m: fill([s for s, _ in by_session(rrf(lists(q, 100)), m, 0.5, 1)], m, q)),
    ("sessions: each session's best hit first, RRF 100 hits",
     lambda q, m: fill([s for s, _ in one_per_session_first(rrf(lists(q, 100)), m)], m, q)),
    ("estimate: RRF 60 hits, a header 6 tokens shorter, its date once per session",
     lambda q, m: fill([s for s, _ in rrf(lists(q, 60))[:60]], m, q, 6, 7)),
]


def evaluate(convs, questions, choose, budget):
    cells = collections.defaultdict(lambda: [0, 0])
    for q in questions:
        if q["budget"] != budget:
            continue
        msgs = convs[q["conversation"]]
        seen = choose(q, msgs) | {s for s in msgs if s >= q["window_start"]}
        ok = all(e in seen for e in q["evidence"])
        for key in ("all", q["category"]):
            cells[key][0] += ok
            cells[key][1] += 1
    return {k: 100.0 * a / b for k, (a, b) in cells.items()}


def ceiling(convs, questions, budget):
    """Tokens the fused ranking (RRF, 400 deep) needs to hold all of a question's evidence
    older than the window, in rank order: the share of questions within each section size."""
    need = []
    for q in questions:
        if q["budget"] != budget:
            continue
        msgs = convs[q["conversation"]]
        old = [e for e in q["evidence"] if e < q["window_start"]]
        order = [s for s, _ in rrf(lists(q, 400)) if s < q["window_start"]]
        pos = {s: i for i, s in enumerate(order)}
        if not old:
            need.append(0)
        elif any(e not in pos for e in old):
            need.append(float("inf"))
        else:
            last = max(pos[e] for e in old)
            need.append(FRAME + sum(msgs[s]["tokens"] for s in order[: last + 1]))
    return {t: 100.0 * sum(1 for x in need if x <= t) / len(need)
            for t in (1000, 2000, 4000, 6000, 8000)}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: recall-study.py DUMP.jsonl (RECALL_BENCH_DUMP of the memory bench)")
    convs, questions = load(sys.argv[1])
    engine = None
    for name, choose in METHODS:
        if all(choose(q, convs[q["conversation"]]) == set(q["chosen"]) for q in questions):
            engine = name
            break
    if engine is None:
        sys.exit("no method chose what the engine chose: fix the replay before reading any figure")
    print(f"replay: \"{engine}\" chose what the engine chose in all {len(questions)} contexts")
    cats = sorted({q["category"] for q in questions})
    print("\n| method | " + " | ".join(f"{b} tokens" for b in BUDGETS) + " | "
          + " | ".join(f"{c} at 4000" for c in cats) + " |")
    print("|---|" + "---:|" * (len(BUDGETS) + len(cats)))
    for name, choose in METHODS:
        r = {b: evaluate(convs, questions, choose, b) for b in BUDGETS}
        print(f"| {name} | " + " | ".join(f"{r[b]['all']:.1f}%" for b in BUDGETS) + " | "
              + " | ".join(f"{r[4000].get(c, 0):.1f}%" for c in cats) + " |")
    c = ceiling(convs, questions, 4000)
    print("\nCeiling at 4000 tokens (the window as the default leaves it): share of questions "
          "whose evidence the fused ranking holds within a section of")
    print(", ".join(f"{t} tokens: {v:.1f}%" for t, v in c.items()))


if __name__ == "__main__":
    main()
