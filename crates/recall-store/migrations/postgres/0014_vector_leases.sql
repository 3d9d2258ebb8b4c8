-- One vector catch-up per conversation and model at a time, across processes (issue 52): two
-- servers on one database that both find a conversation behind embed each message once. A
-- lease with an expiry that its holder renews before each batch; a holder killed mid-way
-- leaves a lease that expires, and the next catch-up takes over from the saved progress.
CREATE TABLE vector_leases (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    model           TEXT NOT NULL,
    holder          TEXT NOT NULL,
    expires_at      BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, model)
);
