-- The mirror sum (issue 33): the gateway checks a client's mirrored history against the whole
-- stored one, not only its newest messages, at a cost that does not grow with the
-- conversation. Each message keeps the running sum of its history's terms up to and including
-- it (`cum_mirror`), the conversation the sum of its whole history (`total_mirror`), both
-- modulo 2^61 - 1 (recall_core::gateway::mirror). A redaction shifts them by the difference
-- its placeholder makes.
--
-- The terms are computed by recall, not SQL: histories stored before this migration have no
-- sum (NULL, "unknown"; the gateway then compares messages one by one) until they are
-- cleared. An empty history's sum is 0, and new conversations start there.
ALTER TABLE conversations ADD COLUMN total_mirror BIGINT DEFAULT 0;
UPDATE conversations SET total_mirror = NULL WHERE message_count > 0;
ALTER TABLE messages ADD COLUMN cum_mirror BIGINT;

-- The redacted messages of a history, found without reading the others: a mirrored history
-- may still hold their old text, which matches them by position.
CREATE INDEX messages_redacted ON messages (conversation_id, seq) WHERE status = 'redacted';
