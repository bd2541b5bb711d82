//! In-process fan-out of history entries to the clients following them.
//!
//! Followers never receive pushed copies: each instance with followers has a [`Channel`]
//! holding its most recent entries and a change counter. A follower wakes on the counter,
//! takes the entries after the last one it sent from the channel, or, if the channel no
//! longer reaches back that far (or never did), reads them from the stored history. So the
//! engine only ever appends to a bounded ring and bumps a counter — it never waits for a
//! client — and a slow client simply catches up from the history at its own pace.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use tokio::sync::{broadcast, watch};
use trellis_model::trace::EventKind;
use uuid::Uuid;

/// Recent entries kept per followed instance.
const RING: usize = 512;
/// Dashboard-feed items buffered per subscriber before it counts as lagging (and resyncs).
const FEED_BUFFER: usize = 1_024;

/// One history entry, rendered once for every client that sends it.
#[derive(Debug)]
pub struct Published {
    pub seq: i64,
    pub kind: EventKind,
    /// The `data:` JSON.
    pub json: String,
    /// The whole server-sent event (`id:`, `event:`, `data:`), shared by every client.
    pub frame: bytes::Bytes,
    /// The instance reached a terminal status with this entry.
    pub terminal: bool,
}

/// An instance status change for the dashboard feed.
#[derive(Debug)]
pub struct FeedItem {
    pub workflow: Uuid,
    pub json: String,
}

pub struct Channel {
    /// Read by every follower on every change, written by one publisher: readers share it.
    ring: RwLock<VecDeque<Arc<Published>>>,
    changed: watch::Sender<u64>,
}

impl Channel {
    fn new() -> Channel {
        Channel { ring: RwLock::new(VecDeque::new()), changed: watch::Sender::new(0) }
    }

    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The entries after `seq`, if this channel holds every one of them; `None` when the
    /// caller must read the history instead.
    pub fn after(&self, seq: i64) -> Option<Vec<Arc<Published>>> {
        let ring = self.ring.read().expect("hub ring");
        let first = ring.front()?.seq;
        if first > seq + 1 {
            return None;
        }
        let skip = usize::try_from(seq + 1 - first).unwrap_or(0);
        Some(ring.iter().skip(skip).cloned().collect())
    }

    /// Appends entries in order; a gap (entries this process never heard of) empties the
    /// ring, so followers read the gap from the history.
    fn push(&self, entries: &[Arc<Published>]) {
        {
            let mut ring = self.ring.write().expect("hub ring");
            for entry in entries {
                match ring.back() {
                    Some(last) if entry.seq <= last.seq => continue,
                    Some(last) if entry.seq > last.seq + 1 => ring.clear(),
                    _ => {}
                }
                ring.push_back(entry.clone());
                if ring.len() > RING {
                    ring.pop_front();
                }
            }
        }
        self.changed.send_modify(|n| *n += 1);
    }

    fn forget(&self) {
        self.ring.write().expect("hub ring").clear();
        self.changed.send_modify(|n| *n += 1);
    }
}

pub struct Hub {
    channels: Mutex<HashMap<Uuid, Weak<Channel>>>,
    feed: broadcast::Sender<Arc<FeedItem>>,
    clients: AtomicI64,
}

impl Default for Hub {
    fn default() -> Self {
        Hub { channels: Mutex::default(), feed: broadcast::Sender::new(FEED_BUFFER), clients: AtomicI64::new(0) }
    }
}

impl Hub {
    /// The channel of `instance`, made if nobody follows it yet. Holding it keeps it alive.
    pub fn follow(&self, instance: Uuid) -> Arc<Channel> {
        let mut channels = self.channels.lock().expect("hub channels");
        if let Some(channel) = channels.get(&instance).and_then(Weak::upgrade) {
            return channel;
        }
        // Drop the entries of instances nobody follows any more while we hold the lock.
        if channels.len() >= 64 && channels.len().is_power_of_two() {
            channels.retain(|_, c| c.strong_count() > 0);
        }
        let channel = Arc::new(Channel::new());
        channels.insert(instance, Arc::downgrade(&channel));
        channel
    }

    pub fn is_followed(&self, instance: Uuid) -> bool {
        self.channels.lock().expect("hub channels").get(&instance).is_some_and(|c| c.strong_count() > 0)
    }

    pub fn publish(&self, instance: Uuid, entries: &[Arc<Published>]) {
        let channel = self.channels.lock().expect("hub channels").get(&instance).and_then(Weak::upgrade);
        if let Some(channel) = channel {
            channel.push(entries);
        }
    }

    pub fn publish_feed(&self, item: FeedItem) {
        if self.feed.receiver_count() > 0 {
            let _ = self.feed.send(Arc::new(item));
        }
    }

    pub fn subscribe_feed(&self) -> broadcast::Receiver<Arc<FeedItem>> {
        self.feed.subscribe()
    }

    pub fn has_feed_subscribers(&self) -> bool {
        self.feed.receiver_count() > 0
    }

    /// Announcements may have been missed: every follower rereads the history.
    pub fn forget_all(&self) {
        let channels: Vec<Arc<Channel>> =
            self.channels.lock().expect("hub channels").values().filter_map(Weak::upgrade).collect();
        for channel in channels {
            channel.forget();
        }
    }

    /// Counts a connected client while the guard lives.
    pub fn client(self: &Arc<Self>) -> ClientGuard {
        self.clients.fetch_add(1, Ordering::Relaxed);
        ClientGuard(self.clone())
    }

    pub fn clients(&self) -> i64 {
        self.clients.load(Ordering::Relaxed)
    }
}

pub struct ClientGuard(Arc<Hub>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: i64) -> Arc<Published> {
        Arc::new(Published {
            seq,
            kind: EventKind::Node,
            json: String::new(),
            frame: bytes::Bytes::new(),
            terminal: false,
        })
    }

    fn seqs(entries: Option<Vec<Arc<Published>>>) -> Option<Vec<i64>> {
        entries.map(|e| e.iter().map(|p| p.seq).collect())
    }

    #[test]
    fn a_channel_serves_what_it_holds_and_defers_the_rest_to_the_history() {
        let hub = Hub::default();
        let id = Uuid::now_v7();
        let channel = hub.follow(id);
        assert_eq!(seqs(channel.after(0)), None, "an empty channel knows nothing");
        hub.publish(id, &[entry(3), entry(4)]);
        assert_eq!(seqs(channel.after(2)), Some(vec![3, 4]));
        assert_eq!(seqs(channel.after(3)), Some(vec![4]));
        assert_eq!(seqs(channel.after(4)), Some(vec![]));
        assert_eq!(seqs(channel.after(1)), None, "2 was never published here");
    }

    #[test]
    fn repeats_are_ignored_and_gaps_reset_the_ring() {
        let hub = Hub::default();
        let id = Uuid::now_v7();
        let channel = hub.follow(id);
        hub.publish(id, &[entry(1), entry(2)]);
        hub.publish(id, &[entry(2), entry(3)]);
        assert_eq!(seqs(channel.after(0)), Some(vec![1, 2, 3]));
        hub.publish(id, &[entry(6)]);
        assert_eq!(seqs(channel.after(3)), None, "4 and 5 must come from the history");
        assert_eq!(seqs(channel.after(5)), Some(vec![6]));
    }

    #[test]
    fn the_ring_is_bounded() {
        let hub = Hub::default();
        let id = Uuid::now_v7();
        let channel = hub.follow(id);
        let entries: Vec<_> = (1..=(RING as i64 + 10)).map(entry).collect();
        hub.publish(id, &entries);
        assert_eq!(seqs(channel.after(0)), None);
        assert_eq!(channel.after(10).map(|e| e.len()), Some(RING));
    }

    #[test]
    fn channels_live_while_followed() {
        let hub = Hub::default();
        let id = Uuid::now_v7();
        let channel = hub.follow(id);
        assert!(hub.is_followed(id));
        drop(channel);
        assert!(!hub.is_followed(id));
    }
}
