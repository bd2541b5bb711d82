//! The hold every background loop honours: while the database is held (a restored copy until
//! an admin resumes it), no schedule fires, no work is claimed, nothing is swept or alerted.
//! The stored flag (`cluster_state`) is read at start and at every heartbeat; a resume through
//! this process's API releases it here at once, other processes at their next heartbeat.

use std::sync::Arc;
use tokio::sync::watch;

#[derive(Debug, Clone)]
pub struct Hold {
    held: Arc<watch::Sender<bool>>,
}

impl Default for Hold {
    /// Released: tests and embedders that never hold run as before.
    fn default() -> Hold {
        Hold { held: Arc::new(watch::Sender::new(false)) }
    }
}

impl Hold {
    pub fn is_held(&self) -> bool {
        *self.held.borrow()
    }

    pub fn set(&self, held: bool) {
        self.held.send_if_modified(|now| std::mem::replace(now, held) != held);
    }

    /// Returns once released, or once `shutdown` turns true.
    pub async fn wait_released(&self, shutdown: &mut watch::Receiver<bool>) {
        let mut held = self.held.subscribe();
        tokio::select! {
            _ = held.wait_for(|held| !held) => {}
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
    }

    /// Waits out a hold at the top of a loop's round: true when the loop should go on to
    /// its round, false when it was held (and has been released or told to stop since), so
    /// the loop checks its shutdown flag first.
    pub async fn pass(&self, shutdown: &mut watch::Receiver<bool>) -> bool {
        if !self.is_held() {
            return true;
        }
        self.wait_released(shutdown).await;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_held_loop_waits_until_released_or_stopped() {
        let hold = Hold::default();
        let (stop, mut stopped) = watch::channel(false);
        assert!(hold.pass(&mut stopped).await, "released: a round goes on at once");
        hold.set(true);
        let waiting = {
            let hold = hold.clone();
            let mut stopped = stopped.clone();
            tokio::spawn(async move { hold.pass(&mut stopped).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "held: the round waits");
        hold.set(false);
        assert!(!waiting.await.unwrap(), "released: the loop looks at its shutdown flag again");
        hold.set(true);
        let waiting = tokio::spawn(async move { hold.pass(&mut stopped).await });
        stop.send(true).unwrap();
        assert!(!waiting.await.unwrap());
    }
}
