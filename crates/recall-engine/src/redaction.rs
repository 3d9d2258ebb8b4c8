//! Taking things back: redacting a message (its content and metadata removed, the row kept),
//! overwriting what was removed in the database files (`vacuum`), and changing a
//! conversation's settings.

use crate::ConversationRef;
use recall_store::{Conversation, ConversationUpdate};

use crate::{Engine, EngineError};

impl Engine {
    /// Redacts message `seq` (see `Store::redact_message`).
    pub async fn redact_message(
        &self,
        c: ConversationRef<'_>,
        seq: i64,
    ) -> Result<(), EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        Ok(self.store.redact_message(tenant, id, seq).await?)
    }

    /// Overwrites removed data in the database files (see `Store::compact`): after a
    /// redaction or a delete, the file's bytes no longer hold the text.
    pub async fn vacuum(&self) -> Result<(), EngineError> {
        Ok(self.store.compact().await?)
    }

    /// Changes a conversation's settings; a new default policy must be valid.
    pub async fn update_conversation(
        &self,
        c: ConversationRef<'_>,
        update: ConversationUpdate,
    ) -> Result<Conversation, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        if let Some(Some(p)) = &update.policy {
            p.validate()
                .map_err(|e| EngineError::Invalid(format!("invalid context policy: {e}")))?;
        }
        Ok(self.store.update_conversation(tenant, id, update).await?)
    }
}
