//! Compaction on SQLite: summary reads on a reader, the lease and the commit on the writer
//! (SQL and checks in `crate::summaries`).

use rusqlite::OptionalExtension;

use super::conn::named;
use super::writes;
use super::SqliteStore;
use crate::codec::now_ms;
use crate::error::StoreError;
use crate::summaries::{
    check_commit, list_summaries_sql, stored, summary_before_sql, NewSummary, StoredSummary,
    INSERT_SUMMARY, LEASE_HOLDER, NEWEST_VERSION, RELEASE_LEASE, TAKE_LEASE,
};
use crate::Store;

/// Reads a [`StoredSummary`] from a row of `crate::summaries` columns.
fn row_summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredSummary> {
    Ok(stored(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
    ))
}

impl SqliteStore {
    pub(super) fn read_summary_before(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<Option<StoredSummary>, StoreError> {
        self.read(|c| {
            Ok(c.prepare_cached(&summary_before_sql())?
                .query_row(named(&[&id, &tenant, &before]).as_slice(), row_summary)
                .optional()?)
        })
    }

    pub(super) fn read_summaries(
        &self,
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&list_summaries_sql())?;
            let rows = stmt
                .query_map(named(&[&id, &tenant, &limit]).as_slice(), row_summary)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    pub(super) async fn write_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        expires_at: i64,
        upto_seq: i64,
    ) -> Result<bool, StoreError> {
        let (t, i, h) = (tenant.to_string(), id.to_string(), holder.to_string());
        let taken = self
            .writer
            .write(move |tx| {
                let values: [&dyn rusqlite::ToSql; 6] =
                    [&i, &t, &h, &expires_at, &now_ms(), &upto_seq];
                writes::execute(tx, TAKE_LEASE, &values)
            })
            .await?;
        if taken == 0 {
            // Not taken: held by another, or no such conversation for this tenant.
            self.get_conversation(tenant, id).await?;
        }
        Ok(taken > 0)
    }

    pub(super) async fn write_release(&self, id: &str, holder: &str) -> Result<(), StoreError> {
        let (i, h) = (id.to_string(), holder.to_string());
        self.writer
            .write(move |tx| writes::execute(tx, RELEASE_LEASE, &[&i, &h]))
            .await?;
        Ok(())
    }

    pub(super) async fn write_summary(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        new: NewSummary,
    ) -> Result<StoredSummary, StoreError> {
        self.get_conversation(tenant, id).await?;
        let (i, h) = (id.to_string(), holder.to_string());
        self.writer
            .write(move |tx| {
                let lease: Option<String> = tx
                    .prepare_cached(LEASE_HOLDER)?
                    .query_row(named(&[&i]).as_slice(), |r| r.get(0))
                    .optional()?;
                let newest: Option<i64> = tx
                    .prepare_cached(NEWEST_VERSION)?
                    .query_row(named(&[&i]).as_slice(), |r| r.get(0))?;
                let version = check_commit(&i, &h, lease.as_deref(), newest, &new)?;
                let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                let created_at = now_ms();
                writes::execute(
                    tx,
                    INSERT_SUMMARY,
                    &[
                        &i,
                        &version,
                        &new.from_seq,
                        &new.to_seq,
                        &new.text,
                        &n(new.tokens.o200k),
                        &n(new.tokens.cl100k),
                        &n(new.tokens.chars4),
                        &new.backend,
                        &new.model,
                        &created_at,
                    ],
                )?;
                Ok(StoredSummary {
                    version,
                    from_seq: new.from_seq,
                    to_seq: new.to_seq,
                    text: new.text,
                    tokens: new.tokens,
                    backend: new.backend,
                    model: new.model,
                    created_at,
                })
            })
            .await
    }
}
