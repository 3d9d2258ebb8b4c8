-- A conversation a client names (issue 53): a key of the client's own, unique per tenant, so
-- `RecallSession("user_123")` opens the same conversation from every process and creates it
-- on first use. Ids stay generated and global; a key is only ever looked up with its tenant,
-- so one tenant's key never tells another that it exists.
CREATE TABLE conversation_keys (
    tenant          TEXT NOT NULL,
    conv_key        TEXT NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    PRIMARY KEY (tenant, conv_key)
);
CREATE INDEX conversation_keys_conversation ON conversation_keys (conversation_id);
