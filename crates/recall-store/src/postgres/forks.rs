//! PostgreSQL's answers to the fork plan (`fork_plan`): the chain of a history, forking,
//! deleting and clearing with forks, redaction, settings, and the reads that cross from a
//! fork's rows into its parent's. The context read's probes go along the chain segment by
//! segment, oldest first: running totals grow with seq within each conversation, so the
//! first row of a conversation reaching a total is at or before the fork point exactly when
//! the history holds such a row there (a conversation that is no fork keeps its
//! one-statement probes, `window.rs`).

use async_trait::async_trait;
use recall_core::policy::Policy;
use recall_core::select::HistoryMessage;
use sqlx::PgConnection;

use super::{stored_at, PgStore};
use crate::driver::Conv;
use crate::error::StoreError;
use crate::fork_plan::{
    segments, stored_segments, ChainRow, Segment, CHAIN_ROW_SQL, CHAIN_SQL, SYSTEM_UPTO,
};
use crate::ops::ForkOps;
use crate::statements::{stable_rows_sql, MESSAGE_COLUMNS, SYSTEM_MESSAGES};
use crate::window::StableKey;
use crate::window_plan::history_message;

impl PgStore {
    /// The segments of conversation `id`'s history, newest first, from its row (the chain a
    /// fork stores, migration 0008); not found when it is not the tenant's.
    pub(super) async fn chain(
        conn: &mut PgConnection,
        tenant: &str,
        id: &str,
    ) -> Result<Vec<Segment>, StoreError> {
        let row: Option<(Option<String>, i64, Option<String>)> = sqlx::query_as(CHAIN_ROW_SQL)
            .bind(id)
            .bind(tenant)
            .fetch_optional(&mut *conn)
            .await?;
        let Some((parent, fork_seq, stored)) = row else {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        };
        match stored_segments(id, parent.as_deref(), fork_seq, stored.as_deref())? {
            Some(segs) => Ok(segs),
            None => Self::chain_recursive(conn, tenant, id).await,
        }
    }

    /// [`PgStore::chain`] by the recursive query (a fork whose row holds no chain).
    pub(super) async fn chain_recursive(
        conn: &mut PgConnection,
        tenant: &str,
        id: &str,
    ) -> Result<Vec<Segment>, StoreError> {
        let rows: Vec<ChainRow> = sqlx::query_as(CHAIN_SQL)
            .bind(id)
            .bind(tenant)
            .fetch_all(&mut *conn)
            .await?;
        let segs = segments(&rows);
        if segs.is_empty() {
            return Err(StoreError::ConversationNotFound(id.to_string()));
        }
        Ok(segs)
    }

    /// The first row of a history (oldest first) whose running total in `column` reaches
    /// `x`: its seq and cut count.
    async fn first_reaching(
        conn: &mut PgConnection,
        segs: &[Segment],
        column: &str,
        x: i64,
    ) -> Result<Option<(i64, i64)>, StoreError> {
        let sql = format!(
            "SELECT seq, cum_cuts FROM messages WHERE conversation_id = $1 AND {column} >= $2 \
             ORDER BY {column}, seq LIMIT 1"
        );
        for seg in segs.iter().rev() {
            let found: Option<(i64, i64)> = sqlx::query_as(&sql)
                .bind(&seg.id)
                .bind(x)
                .fetch_optional(&mut *conn)
                .await?;
            if let Some((seq, cuts)) = found {
                if seq <= seg.upto {
                    return Ok(Some((seq, cuts)));
                }
            }
        }
        Ok(None)
    }

    /// `PgStore::cut_start` along a chain.
    pub(super) async fn cut_start_in(
        conn: &mut PgConnection,
        segs: &[Segment],
        cut: i64,
    ) -> Result<i64, StoreError> {
        if let [seg] = segs {
            return Self::cut_start(conn, &seg.id, cut).await;
        }
        if cut <= 0 {
            return Ok(0);
        }
        Ok(Self::first_reaching(conn, segs, "cum_cuts", cut)
            .await?
            .map_or(0, |(seq, _)| seq))
    }

    /// `PgStore::budget_start` along a chain.
    pub(super) async fn budget_start_in(
        conn: &mut PgConnection,
        segs: &[Segment],
        column: &str,
        threshold: i64,
    ) -> Result<i64, StoreError> {
        if let [seg] = segs {
            return Self::budget_start(conn, &seg.id, column, threshold).await;
        }
        if threshold <= 0 {
            return Ok(0);
        }
        match Self::first_reaching(conn, segs, column, threshold).await? {
            Some((_, cuts)) if cuts > 0 => Self::cut_start_in(conn, segs, cuts).await,
            _ => Ok(0),
        }
    }

    /// `PgStore::total_before` along a chain.
    pub(super) async fn total_before_in(
        conn: &mut PgConnection,
        segs: &[Segment],
        column: &str,
        seq: i64,
    ) -> Result<i64, StoreError> {
        if let [seg] = segs {
            return Self::total_before(conn, &seg.id, column, seq).await;
        }
        let sql = format!(
            "SELECT {column} FROM messages WHERE conversation_id = $1 AND seq < $2 \
             ORDER BY seq DESC LIMIT 1"
        );
        for seg in segs.iter().filter(|s| s.after < seq) {
            let v: Option<i64> = sqlx::query_scalar(&sql)
                .bind(&seg.id)
                .bind(seq.min(seg.upto.saturating_add(1)))
                .fetch_optional(&mut *conn)
                .await?;
            if let Some(v) = v {
                return Ok(v);
            }
        }
        Ok(0)
    }

    /// Non-system messages of a history with `from <= seq < before`, oldest first.
    pub(super) async fn history_in(
        conn: &mut PgConnection,
        segs: &[Segment],
        from: i64,
        before: i64,
        policy: &Policy,
    ) -> Result<Vec<HistoryMessage>, StoreError> {
        if let [seg] = segs {
            return Self::history(conn, &seg.id, from, before, policy).await;
        }
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 AND seq >= $2 \
             AND seq < $3 AND role <> 'system' ORDER BY seq"
        );
        let mut out = Vec::new();
        for seg in segs.iter().rev() {
            let end = before.min(seg.upto.saturating_add(1));
            if end <= from {
                continue;
            }
            let rows = sqlx::query(&sql)
                .bind(&seg.id)
                .bind(from)
                .bind(end)
                .fetch_all(&mut *conn)
                .await?;
            for row in &rows {
                out.push(history_message(stored_at(row, 0)?, policy));
            }
        }
        Ok(out)
    }

    /// The system messages of a history, oldest first: (seq, content).
    pub(super) async fn system_in(
        conn: &mut PgConnection,
        segs: &[Segment],
    ) -> Result<Vec<(i64, String)>, StoreError> {
        let mut out = Vec::new();
        for seg in segs.iter().rev() {
            let rows: Vec<(i64, String)> = if seg.upto == i64::MAX {
                sqlx::query_as(SYSTEM_MESSAGES)
                    .bind(&seg.id)
                    .fetch_all(&mut *conn)
                    .await?
            } else {
                sqlx::query_as(SYSTEM_UPTO)
                    .bind(&seg.id)
                    .bind(seg.upto)
                    .fetch_all(&mut *conn)
                    .await?
            };
            out.extend(rows);
        }
        Ok(out)
    }

    /// The `(seq, cost, flags)` rows of a history a stable window's catch-up folds, for
    /// `from <= seq <= to`.
    pub(super) async fn stable_rows_in(
        conn: &mut PgConnection,
        segs: &[Segment],
        key: &StableKey,
        from: i64,
        to: i64,
    ) -> Result<Vec<(i64, i64, i64)>, StoreError> {
        let sql = stable_rows_sql(key);
        let mut out = Vec::new();
        for seg in segs.iter().rev() {
            let upto = seg.upto.min(to);
            if upto < from {
                continue;
            }
            let rows: Vec<(i64, i64, i64)> = sqlx::query_as(&sql)
                .bind(&seg.id)
                .bind(from)
                .bind(upto)
                .fetch_all(&mut *conn)
                .await?;
            out.extend(rows);
        }
        Ok(out)
    }
}

#[async_trait]
impl ForkOps for PgStore {
    async fn chain_of(&self, c: Conv<'_>) -> Result<Vec<Segment>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Self::chain(&mut conn, c.tenant, c.id).await
    }

    /// Vacuums the messages table (dead row versions, a redacted message's old text among
    /// them, become free space; PostgreSQL does not overwrite it until it is reused).
    async fn vacuum(&self) -> Result<(), StoreError> {
        sqlx::query("VACUUM messages").execute(&self.pool).await?;
        Ok(())
    }
}
