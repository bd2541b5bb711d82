//! Which items a map attempt runs and what its output is — pure, over the list `items`
//! evaluated to and the rows an earlier attempt of the node left.

use super::super::results::make_storable;
use crate::secrets::Redactor;
use crate::store::MapItemRow;
use serde_json::{json, Value};
use trellis_model::map::OnItemFailure;
use trellis_model::NodeStatus;

/// One item's place on the board.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Slot {
    /// An earlier attempt ran this same item to success: its output stands.
    Reused(Value),
    /// To run; `attempts` made earlier (attempt numbers go on from there).
    Todo {
        attempts: i32,
    },
    Done(ItemEnd),
}

/// How an item ended in this attempt.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ItemEnd {
    pub status: NodeStatus,
    pub output: Option<Value>,
    pub error: Option<String>,
}

/// The map's items, as this attempt works through them.
#[derive(Debug)]
pub(super) struct Board {
    pub slots: Vec<Slot>,
    pub digests: Vec<String>,
    /// Each item as a failure names it: its JSON, redacted and cut short (`{"sku":"bad-037"}`).
    pub labels: Vec<String>,
}

/// The most of an item a failure quotes: enough to find it, not the whole of a big item.
const LABEL_CHARS: usize = 80;

/// A digest of an item: whether an earlier attempt ran the same item. Of the item as it may
/// be stored (`redactor`: the map attempt's secrets), so the digest cannot confirm a guess of
/// a secret's value the item held.
#[cfg(test)]
pub(super) fn digest(item: &Value, redactor: &Redactor) -> String {
    digest_of(&storable_text(item, redactor))
}

/// `item`'s JSON as it may be stored: what its digest and its label are both made from, so an
/// item is cloned and redacted once.
fn storable_text(item: &Value, redactor: &Redactor) -> String {
    let mut storable = item.clone();
    make_storable(&mut storable, redactor);
    storable.to_string()
}

fn digest_of(text: &str) -> String {
    crate::digest::sha256_hex(text.as_bytes())
}

/// An item's storable JSON as a failure quotes it: at most [`LABEL_CHARS`] characters.
fn label(text: &str) -> String {
    match text.char_indices().nth(LABEL_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

impl Board {
    /// The board for `items`, reusing what `stored` (rows of earlier attempts) succeeded with.
    pub fn new(items: &[Value], stored: &[MapItemRow], redactor: &Redactor) -> Board {
        let texts: Vec<String> = items.iter().map(|item| storable_text(item, redactor)).collect();
        let digests: Vec<String> = texts.iter().map(|text| digest_of(text)).collect();
        let labels = texts.iter().map(|text| label(text)).collect();
        let by_index = by_index(stored);
        let slots = digests
            .iter()
            .enumerate()
            .map(|(i, d)| match by_index.get(&(i as i32)) {
                Some(row) if row.status == NodeStatus::Succeeded && &row.item_digest == d => {
                    Slot::Reused(row.output.as_ref().map(|o| o.0.clone()).unwrap_or(Value::Null))
                }
                // Attempt numbers go on even for a changed item: each names one execution.
                Some(row) => Slot::Todo { attempts: row.attempts },
                None => Slot::Todo { attempts: 0 },
            })
            .collect();
        Board { slots, digests, labels }
    }

    /// The rows to write before any item runs: every item to run as pending (unless already
    /// so), and where the stored rows of a longer earlier list start to be dropped.
    pub fn opening_rows(&self, stored: &[MapItemRow]) -> (Vec<MapItemRow>, Option<i32>) {
        let by_index = by_index(stored);
        let rows = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| {
                let Slot::Todo { attempts } = slot else { return None };
                let row = pending(i, &self.digests[i], *attempts);
                (by_index.get(&row.idx) != Some(&&row)).then_some(row)
            })
            .collect();
        let longer = stored.iter().any(|row| row.idx as usize >= self.slots.len());
        let drop_from = longer.then_some(self.slots.len() as i32);
        (rows, drop_from)
    }

    pub fn todo(&self) -> impl Iterator<Item = (usize, i32)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Todo { attempts } => Some((i, *attempts)),
            _ => None,
        })
    }

    pub fn reused(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Reused(_))).count()
    }

    /// The outputs an earlier attempt's items succeeded with, which this attempt keeps.
    pub fn reused_outputs(&self) -> impl Iterator<Item = &Value> + '_ {
        self.slots.iter().filter_map(|s| match s {
            Slot::Reused(output) => Some(output),
            _ => None,
        })
    }

    /// The map's outcome once every item has ended (or the map stopped at a failure):
    /// `Ok(output)`, or `Err(error)` naming the first failed index under `fail`.
    pub fn outcome(&self, policy: OnItemFailure) -> Result<Value, String> {
        let mut results = Vec::with_capacity(self.slots.len());
        let mut errors = Vec::new();
        for (index, slot) in self.slots.iter().enumerate() {
            match slot {
                Slot::Reused(output) => results.push(output.clone()),
                Slot::Done(ItemEnd { status: NodeStatus::Succeeded, output, .. }) => {
                    results.push(output.clone().unwrap_or(Value::Null))
                }
                Slot::Done(ItemEnd { status, error, .. }) if *status != NodeStatus::Canceled => {
                    let error = error.clone().unwrap_or_else(|| format!("the item ended {status}"));
                    let item = &self.labels[index];
                    if policy == OnItemFailure::Fail {
                        return Err(format!("item {index} ({item}) failed: {error}"));
                    }
                    errors.push(json!({"index": index, "item": item, "error": error}));
                    results.push(Value::Null);
                }
                Slot::Done(_) | Slot::Todo { .. } => results.push(Value::Null),
            }
        }
        Ok(json!({"results": results, "errors": errors}))
    }
}

fn by_index(stored: &[MapItemRow]) -> std::collections::HashMap<i32, &MapItemRow> {
    stored.iter().map(|row| (row.idx, row)).collect()
}

/// A pending row: the item is yet to run.
pub(super) fn pending(idx: usize, digest: &str, attempts: i32) -> MapItemRow {
    MapItemRow {
        idx: idx as i32,
        item_digest: digest.to_owned(),
        status: NodeStatus::Pending,
        attempts,
        output: None,
        error: None,
        child_id: None,
        started_at: None,
        ended_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::types::Json;

    fn row(idx: i32, item: &Value, status: NodeStatus, output: Option<Value>) -> MapItemRow {
        MapItemRow {
            status,
            attempts: 2,
            output: output.map(Json),
            ..pending(idx as usize, &digest(item, &Redactor::default()), 2)
        }
    }

    #[test]
    fn an_earlier_success_is_reused_only_for_the_same_item_at_the_same_index() {
        let items = [json!(1), json!(2), json!(3)];
        let stored = [
            row(0, &json!(1), NodeStatus::Succeeded, Some(json!("one"))),
            row(1, &json!(20), NodeStatus::Succeeded, Some(json!("old"))),
            row(2, &json!(3), NodeStatus::Failed, None),
            row(3, &json!(4), NodeStatus::Succeeded, Some(json!("gone"))),
        ];
        let board = Board::new(&items, &stored, &Redactor::default());
        assert_eq!(board.slots[0], Slot::Reused(json!("one")));
        assert_eq!(board.slots[1], Slot::Todo { attempts: 2 });
        assert_eq!(board.slots[2], Slot::Todo { attempts: 2 });
        let (rows, drop_from) = board.opening_rows(&stored);
        assert_eq!(rows.iter().map(|r| r.idx).collect::<Vec<_>>(), vec![1, 2]);
        assert!(rows.iter().all(|r| r.status == NodeStatus::Pending));
        assert_eq!(drop_from, Some(3));
    }

    #[test]
    fn an_items_digest_is_of_its_redacted_form() {
        let redactor = Redactor::new([("TOK", "s3cr3t-value")]);
        let redacted = digest(&json!({"tok": "[secret:TOK]"}), &Redactor::default());
        assert_eq!(digest(&json!({"tok": "s3cr3t-value"}), &redactor), redacted);
    }

    #[test]
    fn results_keep_item_order_and_failures_follow_the_policy() {
        let mut board = Board::new(&[json!("a"), json!("b"), json!("c")], &[], &Redactor::default());
        let end = |status, output: Option<Value>, error: Option<&str>| {
            Slot::Done(ItemEnd { status, output, error: error.map(str::to_owned) })
        };
        board.slots[2] = end(NodeStatus::Succeeded, Some(json!("C")), None);
        board.slots[1] = end(NodeStatus::Failed, None, Some("boom"));
        board.slots[0] = end(NodeStatus::Succeeded, Some(json!("A")), None);
        let output = board.outcome(OnItemFailure::Continue).unwrap();
        let errors = json!([{"index": 1, "item": "\"b\"", "error": "boom"}]);
        assert_eq!(output, json!({"results": ["A", null, "C"], "errors": errors}));
        assert_eq!(board.outcome(OnItemFailure::Fail).unwrap_err(), "item 1 (\"b\") failed: boom");
    }

    #[test]
    fn a_failure_quotes_its_item_redacted_and_cut_short() {
        let redactor = Redactor::new([("TOK", "s3cr3t-value")]);
        assert_eq!(
            label(&storable_text(&json!({"sku": "bad-037", "tok": "s3cr3t-value"}), &redactor)),
            r#"{"sku":"bad-037","tok":"[secret:TOK]"}"#
        );
        let long = label(&storable_text(&json!("x".repeat(500)), &Redactor::default()));
        assert_eq!(long.chars().count(), LABEL_CHARS + 1);
        assert!(long.ends_with('…'));
    }
}
