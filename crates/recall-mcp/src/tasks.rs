//! Sub-agent tasks in their wire shape: what the `create_task` and `get_task` tools return,
//! and what the HTTP routes `POST /v1/tasks` and `GET /v1/tasks/{id}` return too (one shape
//! for both faces).

use recall_core::task::TaskInput;
use recall_engine::{Engine, EngineError, TaskReport};

use crate::tools::{CreateTaskArgs, HistoryRole, TaskCreated, TaskMessageView, TaskView};

/// Validates and stores a task for `tenant` and returns its brief
/// ([`Engine::create_task`]).
pub async fn create_task(
    engine: &Engine,
    tenant: &str,
    a: CreateTaskArgs,
) -> Result<TaskCreated, EngineError> {
    let input = TaskInput {
        description: a.description,
        priority: a.priority.into(),
        background_context: a.background_context,
        expected_deliverables: a.expected_deliverables,
        success_criteria: a.success_criteria,
        constraints: a.constraints,
        relevant_files: a.relevant_files,
        conversation_history: a.conversation_history,
    };
    let r = engine.create_task(tenant, input).await?;
    Ok(TaskCreated {
        task_id: r.stored.id.clone(),
        priority: r.stored.task.priority.into(),
        has_enhanced_context: r.stored.task.has_enhanced_context(),
        conversation_messages_count: r.conversation_messages_count(),
        validation_warnings: r.stored.task.validation_warnings.clone(),
        prompt: r.brief,
    })
}

/// A stored task of `tenant` and its brief ([`Engine::get_task`]); not found for another
/// tenant's.
pub async fn get_task(engine: &Engine, tenant: &str, id: &str) -> Result<TaskView, EngineError> {
    Ok(task_view(engine.get_task(tenant, id).await?))
}

fn history_role(r: recall_core::message::Role) -> HistoryRole {
    use recall_core::message::Role;
    match r {
        Role::User => HistoryRole::User,
        Role::Assistant => HistoryRole::Assistant,
        Role::System => HistoryRole::System,
    }
}

fn task_view(r: TaskReport) -> TaskView {
    let count = r.conversation_messages_count();
    let t = r.stored.task;
    TaskView {
        task_id: r.stored.id,
        created_at: recall_core::time::format_rfc3339(r.stored.created_at),
        has_enhanced_context: t.has_enhanced_context(),
        conversation_messages_count: count,
        description: t.description,
        priority: t.priority.into(),
        background_context: t.background_context,
        expected_deliverables: t.expected_deliverables,
        success_criteria: t.success_criteria,
        constraints: t.constraints,
        relevant_files: t.relevant_files,
        conversation_history: t
            .conversation_history
            .into_iter()
            .map(|m| TaskMessageView {
                role: history_role(m.role),
                content: m.content,
                truncated: m.truncated,
            })
            .collect(),
        validation_warnings: t.validation_warnings,
        prompt: r.brief,
    }
}
