//! The bounded queue for work whose cost a person controls: extracting an uploaded file's text, rendering an
//! export, parsing and writing an import. At most `workers` such jobs run at once, at most `queue` more wait,
//! and one person has at most [`PER_USER`] admitted at a time; anything beyond is refused at once ([`Busy`]),
//! so a flood of uploads or exports can neither pile up memory nor take every core from the chats.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Jobs one person may have admitted (running or waiting) at once.
pub const PER_USER: usize = 2;

/// The queue is full, or the person already has [`PER_USER`] jobs: try again after `retry_after_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too much heavy work under way; try again in {retry_after_secs} s")]
pub struct Busy {
    pub retry_after_secs: u64,
}

/// The queue of one process.
#[derive(Debug)]
pub struct HeavyQueue {
    running: Arc<Semaphore>,
    /// Places for admitted jobs, running or waiting.
    admitted: Arc<Semaphore>,
    per_user: Mutex<HashMap<Uuid, usize>>,
}

impl HeavyQueue {
    /// A queue running `workers` jobs at once with `queue` more waiting (each at least 1 and 0).
    pub fn new(workers: usize, queue: usize) -> Arc<Self> {
        let workers = workers.max(1);
        Arc::new(Self {
            running: Arc::new(Semaphore::new(workers)),
            admitted: Arc::new(Semaphore::new(workers + queue)),
            per_user: Mutex::new(HashMap::new()),
        })
    }

    /// Admits one job of `user`, or refuses it at once.
    pub fn admit(self: &Arc<Self>, user: Uuid) -> Result<Ticket, Busy> {
        {
            let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
            let count = per_user.entry(user).or_insert(0);
            if *count >= PER_USER {
                return Err(Busy { retry_after_secs: 2 });
            }
            *count += 1;
        }
        match self.admitted.clone().try_acquire_owned() {
            Ok(place) => Ok(Ticket { queue: self.clone(), user, _place: place }),
            Err(_) => {
                self.release(user);
                Err(Busy { retry_after_secs: 5 })
            }
        }
    }

    fn release(&self, user: Uuid) {
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = per_user.get_mut(&user) {
            *count -= 1;
            if *count == 0 {
                per_user.remove(&user);
            }
        }
    }

    /// Jobs admitted now, running or waiting (for tests and diagnostics).
    pub fn admitted(&self) -> usize {
        self.per_user.lock().unwrap_or_else(|e| e.into_inner()).values().sum()
    }
}

/// An admitted job; its place is given back when it is dropped.
#[derive(Debug)]
pub struct Ticket {
    queue: Arc<HeavyQueue>,
    user: Uuid,
    _place: OwnedSemaphorePermit,
}

impl Ticket {
    /// Waits for a worker's place; the job runs while the returned permit lives.
    pub async fn start(&self) -> OwnedSemaphorePermit {
        self.queue.running.clone().acquire_owned().await.expect("the queue's semaphore is never closed")
    }

    /// Runs `work` on a blocking thread once a worker's place is free. `None` when it panicked.
    pub async fn run_blocking<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let _running = self.start().await;
        match tokio::task::spawn_blocking(work).await {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::error!(error = %e, "heavy work panicked");
                None
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.queue.release(self.user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_person_gets_two_places_and_the_queue_has_a_bound() {
        let queue = HeavyQueue::new(1, 2);
        let (a, b, c, d) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let a1 = queue.admit(a).unwrap();
        let _a2 = queue.admit(a).unwrap();
        assert_eq!(queue.admit(a).unwrap_err(), Busy { retry_after_secs: 2 });
        let _b1 = queue.admit(b).unwrap();
        // One running and two waiting: full for everyone.
        assert_eq!(queue.admit(c).unwrap_err(), Busy { retry_after_secs: 5 });
        drop(a1);
        let _c1 = queue.admit(c).unwrap();
        assert!(queue.admit(d).is_err());
        assert_eq!(queue.admitted(), 3);
    }

    #[tokio::test]
    async fn jobs_run_one_at_a_time_per_worker_and_a_panic_is_contained() {
        let queue = HeavyQueue::new(1, 4);
        let user = Uuid::new_v4();
        let first = queue.admit(user).unwrap();
        let running = first.start().await;
        let second = queue.admit(Uuid::new_v4()).unwrap();
        let waiting = tokio::spawn(async move { second.run_blocking(|| 7).await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(running);
        assert_eq!(waiting.await.unwrap(), Some(7));
        assert_eq!(first.run_blocking(|| -> u8 { panic!("hostile input") }).await, None);
        drop(first);
        assert_eq!(queue.admitted(), 0);
    }
}
