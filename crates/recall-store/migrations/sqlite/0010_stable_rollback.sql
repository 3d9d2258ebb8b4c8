-- A stable window keeps the state it had before its last step (prev_*), so that rewriting
-- the message that step counted (a streamed reply saved as partial, then complete) steps the
-- window back to that state, to be caught up over the window's own messages on the next
-- read, instead of dropping it (which made the next read fold the whole history again).
-- NULL: no earlier state kept (a new or restored window).
ALTER TABLE stable_windows ADD COLUMN prev_start INTEGER;
ALTER TABLE stable_windows ADD COLUMN prev_cost INTEGER;
ALTER TABLE stable_windows ADD COLUMN prev_last INTEGER;
