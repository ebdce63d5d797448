//! The cap on answer streams one person keeps open at once on this instance: each `text/event-stream`
//! response holds a place until its body is dropped (finished, or the client went away).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::error::ApiError;

/// Answer streams open per person here.
#[derive(Debug)]
pub struct OpenStreams {
    /// Most streams one person may keep open; 0 for no cap.
    cap: u32,
    open: Mutex<HashMap<Uuid, u32>>,
}

impl OpenStreams {
    pub fn new(cap: u32) -> Arc<Self> {
        Arc::new(Self { cap, open: Mutex::new(HashMap::new()) })
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, u32>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more stream of `user`, given back when dropped; `TooManyStreams` at the cap.
    pub fn take(self: &Arc<Self>, user: Uuid) -> Result<StreamPlace, ApiError> {
        let mut open = self.open();
        let count = open.entry(user).or_insert(0);
        if self.cap > 0 && *count >= self.cap {
            return Err(ApiError::TooManyStreams);
        }
        *count += 1;
        Ok(StreamPlace { streams: self.clone(), user })
    }

    /// The streams `user` has open here.
    pub fn count(&self, user: Uuid) -> u32 {
        self.open().get(&user).copied().unwrap_or(0)
    }
}

/// One open stream's place, given back when dropped.
#[derive(Debug)]
pub struct StreamPlace {
    streams: Arc<OpenStreams>,
    user: Uuid,
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        let mut open = self.streams.open();
        if let Some(count) = open.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_per_person_and_given_back_when_dropped() {
        let streams = OpenStreams::new(2);
        let (alice, bob) = (Uuid::now_v7(), Uuid::now_v7());
        let first = streams.take(alice).unwrap();
        let _second = streams.take(alice).unwrap();
        assert!(matches!(streams.take(alice), Err(ApiError::TooManyStreams)));
        let _bobs = streams.take(bob).expect("another person's streams are counted apart");
        drop(first);
        assert_eq!(streams.count(alice), 1);
        let _third = streams.take(alice).expect("a closed stream's place is free again");
        let unlimited = OpenStreams::new(0);
        let places: Vec<_> = (0..100).map(|_| unlimited.take(alice).unwrap()).collect();
        assert_eq!(unlimited.count(alice), 100);
        drop(places);
        assert_eq!(unlimited.count(alice), 0);
    }
}
