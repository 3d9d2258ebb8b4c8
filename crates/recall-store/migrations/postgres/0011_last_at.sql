-- The time of a conversation's newest message (issue 37, real times): an append may carry
-- the time each message was written (`created_at`, kept as given), and times must not go
-- backwards within a conversation. The append checks that under the conversation's lock
-- against this column, which comes with the running totals it reads or updates anyway (on
-- PostgreSQL a subquery in that statement could miss a message committed while it waited for
-- the lock). Milliseconds since the Unix epoch; NULL when the history holds no message (a new
-- or cleared conversation). A fork starts with the time of its parent's message at the fork
-- point.
ALTER TABLE conversations ADD COLUMN last_at BIGINT;

-- Backfill: the newest message of the conversation, else (a fork with no rows of its own)
-- its parent's newest at the fork point, which the parent holds (a fork is made on the
-- nearest conversation of its chain holding rows up to that point).
UPDATE conversations SET last_at = COALESCE(
    (SELECT m.created_at FROM messages m WHERE m.conversation_id = conversations.id
     ORDER BY m.seq DESC LIMIT 1),
    (SELECT m.created_at FROM messages m WHERE m.conversation_id = conversations.parent_id
     AND m.seq <= conversations.fork_seq ORDER BY m.seq DESC LIMIT 1));
