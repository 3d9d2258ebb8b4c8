-- A fork's chain, stored (issue 18: a context on a fork is no slower than on its parent).
-- Every read of a fork used to find its chain with a recursive query and, not knowing whether
-- its prefix holds a system message, read the system messages of every segment. Both are
-- fixed while the fork exists (rows a fork reads never change; a parent with forks is neither
-- cleared nor deleted without them; a cleared fork detaches and resets both), so the fork's
-- row keeps them from its creation:
--
-- - `chain`: the ancestors' segments, nearest first, as a JSON array of objects
--   {"id", "depth", "after", "upto"} (fork_plan::encode_chain; `depth` 1 is the parent, whose
--   rows are read up to the fork's `fork_seq`, `after` is each ancestor's own fork seq, 0 for
--   the root); NULL for a conversation that is no fork.
-- - `prefix_system`: whether those segments hold a system message (1) or not (0).
ALTER TABLE conversations ADD COLUMN chain TEXT;
ALTER TABLE conversations ADD COLUMN prefix_system INTEGER NOT NULL DEFAULT 0;

-- Backfill: the forks made before this migration (tests/forks.rs runs these statements again).
UPDATE conversations SET chain = (
    WITH RECURSIVE ch (id, parent_id, fork_seq, depth, upto) AS (
        SELECT p.id, p.parent_id, p.fork_seq, 1, conversations.fork_seq
        FROM conversations p WHERE p.id = conversations.parent_id
        UNION ALL
        SELECT a.id, a.parent_id, a.fork_seq, ch.depth + 1, ch.fork_seq
        FROM conversations a JOIN ch ON a.id = ch.parent_id)
    SELECT json_group_array(json_object('id', id, 'depth', depth,
        'after', CASE WHEN parent_id IS NULL THEN 0 ELSE fork_seq END, 'upto', upto))
    FROM ch)
WHERE parent_id IS NOT NULL;
UPDATE conversations SET prefix_system = EXISTS (
    SELECT 1 FROM json_each(conversations.chain) j JOIN messages m
    ON m.conversation_id = json_extract(j.value, '$.id') AND m.role = 'system'
    AND m.seq <= json_extract(j.value, '$.upto'))
WHERE chain IS NOT NULL;
