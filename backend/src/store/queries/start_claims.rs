//! The Idempotency-Keys of starts written together (`start_batch.rs`): each keyed start claims
//! its key before anything of it is written, in one statement for the batch; a key already
//! claimed (by an earlier start, or earlier in the same batch) makes that start a repeat,
//! answered with the first one's instance and not written. Once the batch's starts are
//! decided, a claim whose start was refused (a full limit under `reject`, a rate limit) is
//! given up, as the start alone would have rolled it back, and the admitted ones' claims say
//! `running`.

use super::Store;
use crate::store::admission::FIRST_START_REQUEST;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::{NewInstance, Result, StartOutcome, StoredStart};
use std::collections::HashSet;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

const CLAIM_KEYS: &str =
    "INSERT INTO start_requests (workflow_id, idempotency_key, request_hash, instance_id, status, version, \
     created_at) ";
const MARK_RUNNING: &str = "UPDATE start_requests SET status = 'running' WHERE workflow_id = ";
const GIVE_UP_CLAIM: &str = "DELETE FROM start_requests WHERE workflow_id = $1 AND idempotency_key = $2";

impl Store {
    /// Claims the keys of `news`' keyed starts; a start whose key was already claimed gets
    /// `Repeated` in `outcomes` and `true` in the answer (it is not to be written).
    pub(super) async fn claim_start_keys(
        tx: &mut Tx<'_>,
        news: &[&NewInstance],
        outcomes: &mut [StartOutcome],
    ) -> Result<Vec<bool>> {
        let mut keyed: Vec<usize> = (0..news.len()).filter(|&i| news[i].idempotency.is_some()).collect();
        // In one order everywhere, so two batches claiming overlapping keys cannot deadlock.
        keyed.sort_by(|&a, &b| {
            let key = |i: usize| (news[i].row.workflow_id, news[i].idempotency.as_ref().map(|(k, _)| k.as_str()));
            key(a).cmp(&key(b))
        });
        let mut repeated = vec![false; news.len()];
        if keyed.is_empty() {
            return Ok(repeated);
        }
        let mut claim = sqlx::QueryBuilder::<Db>::new(CLAIM_KEYS);
        claim.push_values(&keyed, |mut v, &i| {
            let (row, (key, hash)) = (&news[i].row, news[i].idempotency.as_ref().expect("keyed"));
            v.push_bind(row.workflow_id)
                .push_bind(key)
                .push_bind(hash)
                .push_bind(row.id)
                .push_bind("queued")
                .push_bind(row.version)
                .push_bind(row.created_at);
        });
        claim.push(" ON CONFLICT (workflow_id, idempotency_key) DO NOTHING RETURNING instance_id");
        let claimed: Vec<(uuid::Uuid,)> = claim.build_query_as().fetch_all(&mut **tx).await?;
        PHASES.statement();
        let claimed: HashSet<uuid::Uuid> = claimed.into_iter().map(|(id,)| id).collect();
        for i in keyed {
            if claimed.contains(&news[i].row.id) {
                continue;
            }
            let (workflow, (key, _)) = (news[i].row.workflow_id, news[i].idempotency.as_ref().expect("keyed"));
            let first: StoredStart =
                sqlx::query_as(FIRST_START_REQUEST).bind(workflow).bind(key).fetch_one(&mut **tx).await?;
            PHASES.statement();
            outcomes[i] = StartOutcome::Repeated(first);
            repeated[i] = true;
        }
        Ok(repeated)
    }

    /// Settles the claims of the decided keyed starts (not the repeats): refused ones given
    /// up one by one (rare), admitted ones marked `running` in one statement per workflow.
    pub(super) async fn settle_start_keys(
        tx: &mut Tx<'_>,
        news: &[&NewInstance],
        outcomes: &mut [StartOutcome],
        repeated: &[bool],
    ) -> Result<()> {
        // A repeat of a start earlier in this batch that was refused is refused with it (alone,
        // it would have found the claim rolled back and been decided itself; the same limits
        // would refuse it now).
        for i in (0..news.len()).filter(|&i| repeated[i]) {
            let StartOutcome::Repeated(first) = &outcomes[i] else { continue };
            let refused = news.iter().position(|n| n.row.id == first.instance_id).map(|j| outcomes[j].clone());
            if let Some(refused @ (StartOutcome::Rejected(_) | StartOutcome::RateLimited { .. })) = refused {
                outcomes[i] = refused;
            }
        }
        let mut running: Vec<(uuid::Uuid, &str)> = Vec::new();
        for (i, new) in news.iter().enumerate() {
            let Some((key, _)) = new.idempotency.as_ref().filter(|_| !repeated[i]) else { continue };
            match outcomes[i] {
                StartOutcome::Rejected(_) | StartOutcome::RateLimited { .. } => {
                    sqlx::query(GIVE_UP_CLAIM).bind(new.row.workflow_id).bind(key).execute(&mut **tx).await?;
                    PHASES.statement();
                }
                StartOutcome::Running { .. } => running.push((new.row.workflow_id, key)),
                _ => {}
            }
        }
        running.sort_unstable();
        for group in running.chunk_by(|a, b| a.0 == b.0) {
            let mut mark = sqlx::QueryBuilder::<Db>::new(MARK_RUNNING);
            mark.push_bind(group[0].0).push(" AND idempotency_key IN (");
            let mut keys = mark.separated(", ");
            for (_, key) in group {
                keys.push_bind(*key);
            }
            mark.push(")");
            mark.build().execute(&mut **tx).await?;
            PHASES.statement();
        }
        Ok(())
    }
}
