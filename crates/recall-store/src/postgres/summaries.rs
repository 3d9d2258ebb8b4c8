//! Compaction on PostgreSQL (SQL and checks in `crate::summaries`). The commit runs in one
//! transaction that locks the lease row, so two summarisers cannot both commit.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::PgStore;
use crate::codec::{check_key, now_ms};
use crate::error::StoreError;
use crate::summaries::{
    check_commit, list_summaries_sql, stored, summary_before_sql, NewSummary, StoredSummary,
    INSERT_SUMMARY, LEASE_HOLDER, NEWEST_VERSION, RELEASE_LEASE, TAKE_LEASE,
};
use crate::Store;

/// Reads a [`StoredSummary`] from a row of `crate::summaries` columns.
fn row_summary(r: &PgRow) -> Result<StoredSummary, StoreError> {
    Ok(stored(
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
        r.try_get(5)?,
        r.try_get(6)?,
        r.try_get(7)?,
        r.try_get(8)?,
        r.try_get(9)?,
    ))
}

impl PgStore {
    pub(super) async fn read_summary_before(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<Option<StoredSummary>, StoreError> {
        check_key(tenant, id)?;
        let row = sqlx::query(&summary_before_sql())
            .bind(id)
            .bind(tenant)
            .bind(before)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(row_summary).transpose()
    }

    pub(super) async fn read_summaries(
        &self,
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, StoreError> {
        check_key(tenant, id)?;
        let rows = sqlx::query(&list_summaries_sql())
            .bind(id)
            .bind(tenant)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(row_summary).collect()
    }

    pub(super) async fn write_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        expires_at: i64,
        upto_seq: i64,
    ) -> Result<bool, StoreError> {
        check_key(tenant, id)?;
        let taken = sqlx::query(TAKE_LEASE)
            .bind(id)
            .bind(tenant)
            .bind(holder)
            .bind(expires_at)
            .bind(now_ms())
            .bind(upto_seq)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if taken == 0 {
            // Not taken: held by another, or no such conversation for this tenant.
            self.get_conversation(tenant, id).await?;
        }
        Ok(taken > 0)
    }

    pub(super) async fn write_release(&self, id: &str, holder: &str) -> Result<(), StoreError> {
        if id.contains('\0') || holder.contains('\0') {
            return Ok(());
        }
        sqlx::query(RELEASE_LEASE)
            .bind(id)
            .bind(holder)
            .execute(&self.pool)
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
        let mut tx = self.pool.begin().await?;
        let lease: Option<String> = sqlx::query_scalar(&format!("{LEASE_HOLDER} FOR UPDATE"))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let newest: Option<i64> = sqlx::query_scalar(NEWEST_VERSION)
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        let version = check_commit(id, holder, lease.as_deref(), newest, &new)?;
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let created_at = now_ms();
        sqlx::query(INSERT_SUMMARY)
            .bind(id)
            .bind(version)
            .bind(new.from_seq)
            .bind(new.to_seq)
            .bind(&new.text)
            .bind(n(new.tokens.o200k))
            .bind(n(new.tokens.cl100k))
            .bind(n(new.tokens.chars4))
            .bind(&new.backend)
            .bind(&new.model)
            .bind(created_at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
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
    }
}
