-- Sub-agent tasks (MCP `create_task`) and full-text search over message text.

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY NOT NULL,
    tenant      TEXT NOT NULL,
    priority    TEXT NOT NULL,
    description TEXT NOT NULL,
    -- The validated task (recall_core::task::Task) as JSON: context, capped history, warnings.
    spec        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX tasks_by_tenant ON tasks (tenant, id);

-- The searchable text of a message's stored content: a string as-is, or its text blocks
-- joined with "\n". IMMUTABLE so that it can be indexed. It must never fail, or an append
-- would: jsonb cannot hold U+0000, which stored JSON may escape as \u0000, so those escapes
-- are dropped first. Each \\ is rewritten as \u005c (the same backslash) beforehand, so an
-- escaped backslash followed by "u0000" is never taken for a NUL escape.
CREATE FUNCTION recall_message_text(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(doc)
        WHEN 'string' THEN doc #>> '{}'
        WHEN 'array' THEN coalesce((
            SELECT string_agg(b.value ->> 'text', E'\n' ORDER BY b.ordinality)
            FROM jsonb_array_elements(doc) WITH ORDINALITY AS b(value, ordinality)
            WHERE b.value ->> 'type' = 'text'), '')
        ELSE ''
    END
    FROM (SELECT replace(replace(content, E'\\\\', E'\\u005c'), E'\\u0000', '')::jsonb AS doc) AS d
$$;

-- An expression index: no column is added to `messages`, every write keeps it current.
CREATE INDEX messages_fts ON messages
    USING gin (to_tsvector('simple'::regconfig, recall_message_text(content)));
