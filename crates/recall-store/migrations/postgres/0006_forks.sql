-- Forks (issue 18). A fork of conversation P at seq k is a conversation whose history is P's
-- messages 1..k followed by its own; nothing of the prefix is copied. `parent_id` and
-- `fork_seq` say where it reads from: its own rows all have seq > fork_seq, and every seq up to
-- fork_seq is read from the parent (recursively: the parent may be a fork too). A fork's own
-- rows carry running totals that continue from the parent's at fork_seq, so a context read
-- crosses from the fork's rows into the parent's without any arithmetic.
--
-- The foreign key keeps a parent from being deleted under its forks (the store refuses it
-- unless cascading, deleting the forks first).
ALTER TABLE conversations ADD COLUMN parent_id TEXT REFERENCES conversations (id);
ALTER TABLE conversations ADD COLUMN fork_seq BIGINT NOT NULL DEFAULT 0;
CREATE INDEX conversations_by_parent ON conversations (parent_id, fork_seq)
    WHERE parent_id IS NOT NULL;
