-- Recall's lexical index (issue 21): per message, the weight of each of its terms, so that a
-- ranking reads the best postings of each query term through an index ordered by weight and
-- never scores every message that holds a common word (recall_core::recall, "lexical").
-- Filled off the append path: a context that recalls first indexes its conversation's
-- messages above `recall_seq` that may be recalled (those older than its window), in order.
--
-- A conversation's own rows only: a fork reads its parent's postings for its prefix, segment
-- by segment, exactly as it reads the parent's messages.

-- One row per indexed message that is not a system message: `n` counts this conversation's
-- indexed messages up to this one (itself included), so the number of messages below any seq
-- is one probe; `terms` lists its terms (a JSON array) so its postings can be found again;
-- `tokens_o200k`, `tokens_cl100k` are the tokens of its recalled excerpt (escaped, as this
-- history shows it: recall_core::recall::excerpt_tokens), so that choosing what to recall
-- needs no vocabulary (NULL: not counted).
CREATE TABLE recall_docs (
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    n               INTEGER NOT NULL,
    terms           TEXT NOT NULL,
    tokens_o200k    INTEGER,
    tokens_cl100k   INTEGER,
    PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;

-- One row per (message, term): `weight` is recall_core::recall::term_weight (tf and length,
-- never recomputed); `df` counts this conversation's indexed messages up to this one that
-- hold the term (itself included), so a term's document frequency below any seq is one probe.
CREATE TABLE recall_postings (
    conversation_id TEXT NOT NULL,
    term            TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    weight          REAL NOT NULL,
    df              INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, term, seq)
) WITHOUT ROWID;
-- A term's best postings first: what a ranking reads.
CREATE INDEX recall_postings_best ON recall_postings (conversation_id, term, weight DESC, seq DESC);

-- How far each conversation is indexed: every message with seq <= recall_seq is (or is a
-- system message). No row: nothing yet. A table of its own rather than a column of
-- `conversations`, so that a catch-up never waits for (or holds) the conversation's row,
-- which appends lock.
CREATE TABLE recall_progress (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    recall_seq      INTEGER NOT NULL
);

-- A change to an indexed message (a redaction, a streamed reply saved again) or its deletion
-- (clear, delete) drops the index from that message on (the running counts after it would be
-- wrong) and moves `recall_seq` back: the next catch-up indexes them again as they are then.
CREATE TRIGGER recall_index_au AFTER UPDATE OF content ON messages
WHEN old.content IS NOT new.content
    AND old.seq <= (SELECT recall_seq FROM recall_progress WHERE conversation_id = old.conversation_id)
BEGIN
    DELETE FROM recall_postings WHERE conversation_id = old.conversation_id AND seq >= old.seq
        AND term IN (SELECT j.value FROM recall_docs d, json_each(d.terms) j
                     WHERE d.conversation_id = old.conversation_id AND d.seq >= old.seq);
    DELETE FROM recall_docs WHERE conversation_id = old.conversation_id AND seq >= old.seq;
    UPDATE recall_progress SET recall_seq = old.seq - 1 WHERE conversation_id = old.conversation_id;
END;
CREATE TRIGGER recall_index_ad AFTER DELETE ON messages
WHEN old.seq <= (SELECT recall_seq FROM recall_progress WHERE conversation_id = old.conversation_id)
BEGIN
    DELETE FROM recall_postings WHERE conversation_id = old.conversation_id AND seq >= old.seq
        AND term IN (SELECT j.value FROM recall_docs d, json_each(d.terms) j
                     WHERE d.conversation_id = old.conversation_id AND d.seq >= old.seq);
    DELETE FROM recall_docs WHERE conversation_id = old.conversation_id AND seq >= old.seq;
    UPDATE recall_progress SET recall_seq = old.seq - 1 WHERE conversation_id = old.conversation_id;
END;
