//! Store errors. No driver's error type appears here: a database failure is a [`DbError`],
//! which keeps the driver's message and its error as the source.

use std::error::Error;
use std::fmt;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No such conversation for this tenant (another tenant's is reported the same way).
    #[error("conversation '{0}' not found")]
    ConversationNotFound(String),
    /// No message with that seq.
    #[error("message {seq} of conversation '{conversation}' not found")]
    MessageNotFound { conversation: String, seq: i64 },
    /// The request cannot be carried out as asked (the caller's input).
    #[error("{0}")]
    Invalid(String),
    /// Message `index` of an append carries a client id that this conversation already holds
    /// (stored as `seq`, or earlier in the same batch) for a different message. Nothing of the
    /// batch was written.
    #[error(
        "messages[{index}]: client id '{client_id}' was already used for a different message \
         (seq {seq})"
    )]
    Conflict {
        /// The message's position in the batch given to [`crate::Store::append`].
        index: usize,
        client_id: String,
        /// The seq of the message stored under that client id (for an earlier message of the
        /// same batch: the seq it would have had).
        seq: i64,
    },
    /// Message `index` of an append carries a time the conversation cannot take: earlier
    /// than the message before it, or too far in the future. Nothing of the batch was
    /// written.
    #[error(transparent)]
    Time(recall_core::time::TimeRefusal),
    /// Stored data could not be read back (a bug or a foreign write).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The database failed or could not be reached.
    #[error("{0}")]
    Database(DbError),
    /// A failure inside the store, not caused by the request (no reader connection, the
    /// writer thread gone).
    #[error("internal store error: {0}")]
    Internal(String),
    /// No such task for this tenant.
    #[error("task '{0}' not found")]
    TaskNotFound(String),
    /// The write would change the history of forks that read this conversation (`what`: what
    /// was refused). Nothing was changed.
    #[error(
        "cannot {what} conversation '{conversation}': {forks} fork(s) read its history; \
         delete them first, or delete with cascade to delete them too"
    )]
    HasForks {
        conversation: String,
        forks: u64,
        what: String,
    },
    /// A fork was asked for at a message that is partial: a reply still being streamed (it
    /// will be updated when it ends) or one cut short. A fork reads its prefix unchanged, so
    /// it cannot start after a message that may still change. Nothing was changed.
    #[error(
        "cannot fork conversation '{conversation}' at {seq}: message {seq} is partial (a reply \
         still streaming or cut short); fork at {before} and retry the reply instead",
        before = seq - 1
    )]
    PartialForkPoint { conversation: String, seq: i64 },
    /// Another summariser holds conversation `conversation`'s compaction lease, or committed a
    /// summary since this one started. Nothing was changed.
    #[error(
        "conversation '{conversation}' is being compacted by another summariser; its summary \
         stays in force, try again when that one is done"
    )]
    CompactionBusy { conversation: String },
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

/// A database driver's failure: its message, with the driver's error as the source.
pub struct DbError {
    message: String,
    source: Box<dyn Error + Send + Sync + 'static>,
}

impl DbError {
    fn new(what: &str, e: impl Error + Send + Sync + 'static) -> DbError {
        DbError {
            message: format!("{what}: {e}"),
            source: Box::new(e),
        }
    }
}

impl DbError {
    fn with_message(message: String, e: impl Error + Send + Sync + 'static) -> DbError {
        DbError {
            message,
            source: Box::new(e),
        }
    }
}

/// A failed connection to PostgreSQL as `user` to `database`. When the server says the
/// database or the role is missing, or refuses the password, the message says what to run
/// (docs/DEPLOY.md, step 1); any other failure reads as [`StoreError::from`]'s.
pub(crate) fn pg_connect_error(e: sqlx::Error, user: &str, database: &str) -> StoreError {
    let sqlx::Error::Database(db) = &e else {
        return e.into();
    };
    let said = db.message().to_string();
    let hint = match db.code().as_deref() {
        // invalid_catalog_name
        Some("3D000") => format!(
            "create it with `sudo -u postgres createdb --owner {user} {database}` on the \
             database server"
        ),
        // invalid_authorization_specification: no such role (trust or peer authentication),
        // or no pg_hba.conf line lets this connection in.
        Some("28000") if said.contains("does not exist") => format!(
            "create it with `sudo -u postgres createuser --pwprompt {user}` on the database \
             server"
        ),
        Some("28000") => format!(
            "allow it with a line for user {user} and database {database} in the server's \
             pg_hba.conf"
        ),
        // invalid_password: with password authentication PostgreSQL answers this for a
        // missing role as well.
        Some("28P01") => format!(
            "the password is wrong or missing, or the role does not exist. recall reads the \
             password from the URL, PGPASSWORD or a pgpass file (PGPASSFILE, ~/.pgpass); set \
             it with `sudo -u postgres psql -c '\\password {user}'`, or create the role with \
             `sudo -u postgres createuser --pwprompt {user}`"
        ),
        _ => return e.into(),
    };
    StoreError::Database(DbError::with_message(
        format!("{said}: {hint} (docs/DEPLOY.md)"),
        e,
    ))
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbError")
            .field("message", &self.message)
            .finish()
    }
}

impl Error for DbError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self.source.as_ref())
    }
}

// Conversions for `?` inside the store; hidden because the drivers are not part of the API.
#[doc(hidden)]
impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        StoreError::Database(DbError::new("database error", e))
    }
}

#[doc(hidden)]
impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Database(DbError::new("database error", e))
    }
}

#[doc(hidden)]
impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(e: sqlx::migrate::MigrateError) -> StoreError {
        StoreError::Database(DbError::new("database migration failed", e))
    }
}
