-- API keys of the HTTP server. Only a SHA-256 of each key is stored: keys are long random
-- strings, so a plain hash is enough and a lookup is one index probe.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY NOT NULL,
    tenant      TEXT NOT NULL,
    key_sha256  TEXT NOT NULL UNIQUE,
    label       TEXT,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant, id);
