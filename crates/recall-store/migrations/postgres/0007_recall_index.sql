-- Recall's lexical index (issue 21): per message, the weight of each of its terms, so that a
-- ranking reads the best postings of each query term through an index ordered by weight and
-- never scores every message that holds a common word (recall_core::recall, "lexical").
-- Filled off the append path: a context that recalls first indexes its conversation's
-- messages above `recall_seq` that may be recalled (those older than its window), in order.
-- The same tables as SQLite's, so that both databases (and a conversation held in memory)
-- rank alike.
--
-- A conversation's own rows only: a fork reads its parent's postings for its prefix, segment
-- by segment, exactly as it reads the parent's messages.

-- One row per indexed message that is not a system message: `n` counts this conversation's
-- indexed messages up to this one (itself included); `terms` lists its terms so its postings
-- can be found again.
CREATE TABLE recall_docs (
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    n               BIGINT NOT NULL,
    terms           TEXT[] NOT NULL,
    -- The tokens of its recalled excerpt, as SQLite keeps them; not filled on PostgreSQL yet
    -- (a server process holds the vocabularies anyway).
    tokens_o200k    BIGINT,
    tokens_cl100k   BIGINT,
    PRIMARY KEY (conversation_id, seq)
);

-- One row per (message, term): `weight` is recall_core::recall::term_weight; `df` counts this
-- conversation's indexed messages up to this one that hold the term (itself included).
CREATE TABLE recall_postings (
    conversation_id TEXT NOT NULL,
    term            TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    weight          DOUBLE PRECISION NOT NULL,
    df              BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, term, seq)
);
-- A term's best postings first: what a ranking reads.
CREATE INDEX recall_postings_best ON recall_postings (conversation_id, term, weight DESC, seq DESC);

-- How far each conversation is indexed: every message with seq <= recall_seq is (or is a
-- system message). No row: nothing yet. A table of its own, with no foreign key, so that a
-- catch-up never waits for the conversation's row, which appends and reply saves lock (a
-- foreign key check would take a share lock on it): the only lock a catch-up takes is the
-- advisory lock below. A deleted conversation's row goes with it by trigger.
CREATE TABLE recall_progress (
    conversation_id TEXT PRIMARY KEY,
    recall_seq      BIGINT NOT NULL
);
CREATE FUNCTION recall_progress_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM recall_progress WHERE conversation_id = OLD.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER conversations_recall_ad AFTER DELETE ON conversations
FOR EACH ROW EXECUTE FUNCTION recall_progress_on_delete();

-- A change to an indexed message (a redaction, a streamed reply saved again) or its deletion
-- (clear, delete) drops the index from that message on and moves `recall_seq` back: the next
-- catch-up indexes them again as they are then. The catch-up and this trigger take the same
-- advisory lock per conversation (the catch-up first, then nothing the trigger's transaction
-- may hold), so neither works on what the other is changing and they cannot deadlock.
CREATE FUNCTION recall_index_invalidate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('recall_index:' || OLD.conversation_id, 0));
    IF OLD.seq <= (SELECT recall_seq FROM recall_progress WHERE conversation_id = OLD.conversation_id) THEN
        DELETE FROM recall_postings p
        USING (SELECT DISTINCT unnest(d.terms) AS term FROM recall_docs d
               WHERE d.conversation_id = OLD.conversation_id AND d.seq >= OLD.seq) t
        WHERE p.conversation_id = OLD.conversation_id AND p.term = t.term AND p.seq >= OLD.seq;
        DELETE FROM recall_docs WHERE conversation_id = OLD.conversation_id AND seq >= OLD.seq;
        UPDATE recall_progress SET recall_seq = OLD.seq - 1 WHERE conversation_id = OLD.conversation_id;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER recall_index_au AFTER UPDATE OF content ON messages
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION recall_index_invalidate();
CREATE TRIGGER recall_index_ad AFTER DELETE ON messages
FOR EACH ROW EXECUTE FUNCTION recall_index_invalidate();
