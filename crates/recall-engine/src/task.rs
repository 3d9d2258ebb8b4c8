//! Sub-agent tasks and message search: the use cases behind the MCP `create_task`,
//! `get_task` and `search_history` tools.

use recall_core::task::{build_task, TaskInput};
use recall_store::{SearchHit, StoredTask};
use serde_json::Value;

use crate::{Engine, EngineError};

/// Most results one search returns.
pub const MAX_SEARCH_LIMIT: u32 = 100;

/// A created or stored task with its brief.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReport {
    pub stored: StoredTask,
    /// The sub-agent's brief (`recall_core::task::render_brief`).
    pub brief: String,
}

impl TaskReport {
    fn new(stored: StoredTask) -> TaskReport {
        let brief = stored.task.brief();
        TaskReport { stored, brief }
    }

    /// Valid history messages stored with the task (after validation, before nothing else).
    pub fn conversation_messages_count(&self) -> usize {
        self.stored.task.conversation_history.len()
    }
}

impl Engine {
    /// Validates a task (docs/FORMAT-DECISIONS.md, `create_task`: invalid history entries are
    /// skipped with a warning, content is capped), stores it and renders its brief. Sizes are bounded by the
    /// engine's limits: the description and each history message by `max_message_bytes`, the
    /// history's length by `max_messages_per_append`.
    pub async fn create_task(
        &self,
        tenant: &str,
        input: TaskInput,
    ) -> Result<TaskReport, EngineError> {
        let max = self.limits.max_message_bytes;
        if input.description.len() > max {
            return Err(EngineError::TooLarge {
                what: "description".into(),
                size: input.description.len(),
                limit: max,
            });
        }
        if let Some(bg) = &input.background_context {
            if bg.len() > max {
                return Err(EngineError::TooLarge {
                    what: "background_context".into(),
                    size: bg.len(),
                    limit: max,
                });
            }
        }
        if let Some(Value::Array(entries)) = &input.conversation_history {
            if entries.len() > self.limits.max_messages_per_append {
                return Err(EngineError::Invalid(format!(
                    "conversation_history has {} entries, over the limit of {}",
                    entries.len(),
                    self.limits.max_messages_per_append
                )));
            }
            for (i, e) in entries.iter().enumerate() {
                let size = e.get("content").map_or(0, crate::json_len);
                if size > max {
                    return Err(EngineError::TooLarge {
                        what: format!("conversation_history[{i}]"),
                        size,
                        limit: max,
                    });
                }
            }
        }
        let task = build_task(input).map_err(|e| EngineError::Invalid(e.to_string()))?;
        let stored = self.store.create_task(tenant, &task).await?;
        Ok(TaskReport::new(stored))
    }

    /// A stored task and its brief, rendered again from what was stored.
    pub async fn get_task(&self, tenant: &str, id: &str) -> Result<TaskReport, EngineError> {
        let stored = self.store.get_task(tenant, id).await?;
        Ok(TaskReport::new(stored))
    }

    /// Full-text search over a tenant's messages; at most `limit` hits (1 to
    /// [`MAX_SEARCH_LIMIT`]).
    pub async fn search_messages(
        &self,
        tenant: &str,
        query: &str,
        limit: u32,
    ) -> Result<Vec<SearchHit>, EngineError> {
        if limit == 0 || limit > MAX_SEARCH_LIMIT {
            return Err(EngineError::Invalid(format!(
                "limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}"
            )));
        }
        if query.len() > 4096 {
            return Err(EngineError::Invalid(format!(
                "search query is {} bytes, over the limit of 4096",
                query.len()
            )));
        }
        self.store
            .search_messages(tenant, query, limit)
            .await
            .map_err(|e| match e {
                // A query without words is the caller's mistake, not a database failure.
                recall_store::StoreError::Invalid(m) => EngineError::Invalid(m),
                other => other.into(),
            })
    }
}
