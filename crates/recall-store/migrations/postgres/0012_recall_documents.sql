-- Recall's lexical index holds documents now (recall_core::recall::document): the stems of a
-- message's words, those of the two messages before it at lower weights, and its month and
-- year. Terms and weights written by 0007's definition mean something else, so the index is
-- dropped and every conversation is indexed again by its next catch-up (the first context
-- with recall after the upgrade, below its window).
DELETE FROM recall_postings;
DELETE FROM recall_docs;
DELETE FROM recall_progress;
