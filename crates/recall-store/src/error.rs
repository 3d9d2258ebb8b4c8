//! Store errors.

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No such conversation for this tenant (another tenant's is reported the same way).
    #[error("conversation '{0}' not found")]
    ConversationNotFound(String),
    /// No message with that seq.
    #[error("message {seq} of conversation '{conversation}' not found")]
    MessageNotFound { conversation: String, seq: i64 },
    /// The request cannot be carried out as asked.
    #[error("{0}")]
    Invalid(String),
    /// Stored data could not be read back (a bug or a foreign write).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The database failed or could not be reached.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The database failed, on the SQLite store's direct connections (the hot paths).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// No such task for this tenant.
    #[error("task '{0}' not found")]
    TaskNotFound(String),
}

impl StoreError {
    /// True for "not found" errors (a 404, an exit status 2).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            StoreError::ConversationNotFound(_)
                | StoreError::MessageNotFound { .. }
                | StoreError::TaskNotFound(_)
        )
    }
}
