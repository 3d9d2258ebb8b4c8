-- Compaction (issue 22): rolling summaries of what the window left behind.
--
-- Every committed summary is kept, one row per version: a new version never replaces the one
-- in force until it is committed, and a context may use an older version (the newest that
-- ends before its window). A summary covers messages `from_seq` through `to_seq`; its section's
-- tokens are stored per counter so a context needs no vocabulary to budget it.
CREATE TABLE summaries (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    version         INTEGER NOT NULL,
    from_seq        INTEGER NOT NULL,
    to_seq          INTEGER NOT NULL,
    text            TEXT NOT NULL,
    tokens_o200k    INTEGER NOT NULL,
    tokens_cl100k   INTEGER NOT NULL,
    tokens_chars4   INTEGER NOT NULL,
    backend         TEXT NOT NULL,
    model           TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, version)
) WITHOUT ROWID;
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
    expires_at      INTEGER NOT NULL,
    upto_seq        INTEGER NOT NULL
) WITHOUT ROWID;

-- A summary stands for its messages as they were: a change to one of them (a redaction) or
-- its deletion (clear) drops every version that covers it, and the lease of a summariser
-- reading it. (A streamed reply saved again is above any lease: nothing happens.)
CREATE TRIGGER summaries_au AFTER UPDATE OF content ON messages
WHEN OLD.content IS NOT NEW.content
BEGIN
    DELETE FROM compaction_leases WHERE conversation_id = OLD.conversation_id AND upto_seq >= OLD.seq;
    DELETE FROM summaries WHERE conversation_id = OLD.conversation_id AND to_seq >= OLD.seq;
END;
CREATE TRIGGER summaries_ad AFTER DELETE ON messages
BEGIN
    DELETE FROM compaction_leases WHERE conversation_id = OLD.conversation_id AND upto_seq >= OLD.seq;
    DELETE FROM summaries WHERE conversation_id = OLD.conversation_id AND to_seq >= OLD.seq;
END;
