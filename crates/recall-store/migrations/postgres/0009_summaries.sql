-- Compaction (issue 22): rolling summaries of what the window left behind.
--
-- Every committed summary is kept, one row per version: a new version never replaces the one
-- in force until it is committed, and a context may use an older version (the newest that
-- ends before its window). A summary covers messages `from_seq` through `to_seq`; its section's
-- tokens are stored per counter so a context needs no vocabulary to budget it.
CREATE TABLE summaries (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    version         BIGINT NOT NULL,
    from_seq        BIGINT NOT NULL,
    to_seq          BIGINT NOT NULL,
    text            TEXT NOT NULL,
    tokens_o200k    BIGINT NOT NULL,
    tokens_cl100k   BIGINT NOT NULL,
    tokens_chars4   BIGINT NOT NULL,
    backend         TEXT NOT NULL,
    model           TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, version)
);
-- The summary a context uses: the newest ending before its window.
CREATE INDEX summaries_by_end ON summaries (conversation_id, to_seq);

-- One summariser per conversation at a time, across processes: a lease with an expiry that
-- the holder renews while it works. A holder killed mid-way leaves a lease that expires, so a
-- later compaction takes over; its summary was never committed, so the previous one stays in
-- force. `upto_seq` is the last message the holder summarises: a change to a message at or
-- below it deletes the lease (below), so a summary written from the old text cannot be
-- committed.
CREATE TABLE compaction_leases (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    holder          TEXT NOT NULL,
    expires_at      BIGINT NOT NULL,
    upto_seq        BIGINT NOT NULL
);

-- A summary stands for its messages as they were: a change to one of them (a redaction) or
-- its deletion (clear) drops every version that covers it, and the lease of a summariser
-- reading it. The lease goes first: a commit holds its row lock, so this waits for that
-- commit to end, and the summaries are then deleted from a snapshot that holds its version.
CREATE FUNCTION summaries_invalidate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM compaction_leases WHERE conversation_id = OLD.conversation_id AND upto_seq >= OLD.seq;
    DELETE FROM summaries WHERE conversation_id = OLD.conversation_id AND to_seq >= OLD.seq;
    RETURN NULL;
END;
$$;
CREATE TRIGGER summaries_au AFTER UPDATE OF content ON messages
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION summaries_invalidate();
CREATE TRIGGER summaries_ad AFTER DELETE ON messages
FOR EACH ROW EXECUTE FUNCTION summaries_invalidate();
