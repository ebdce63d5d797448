//! Hot conversations' context kept in memory: what the model's view of a conversation was built from at its last
//! turn here ([`Materials`]), with that turn's question and answer added, under the conversation's stamp right
//! after the turn ([`ThreadStamp`]). The next turn builds its context from it without reading the conversation,
//! once its start, which reads the stamp in its own statement, finds the stamp unchanged; any write to the
//! conversation since (here, on another instance, by hand) changed the stamp, and the context is read again.
//!
//! Bounded by the bytes it holds ([`CAPACITY`]); the conversation used longest ago goes first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use hashlink::LruCache;
use uuid::Uuid;
use wire::Message;

use super::context::Materials;
use store::ThreadStamp;

/// Bytes of conversations kept at most.
pub const CAPACITY: usize = 64 << 20;
/// A conversation larger than this share of [`CAPACITY`] is not kept.
const LARGEST: usize = CAPACITY / 16;

/// What is kept of one conversation.
struct Entry {
    user: Uuid,
    stamp: ThreadStamp,
    materials: Materials,
    weight: usize,
}

/// The conversations kept, and how contexts were built.
pub struct ContextMemory {
    kept: Mutex<Shelf>,
    /// Contexts built from memory, read from the store, and kept ones found stale by the start.
    counts: [AtomicU64; 3],
}

/// The conversations kept, used longest ago first, and the bytes they hold.
struct Shelf {
    map: LruCache<Uuid, Entry>,
    weight: usize,
}

/// Where a turn's context came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Kept from the conversation's last turn, and still current.
    Memory,
    /// Read from the store.
    Store,
    /// Kept, but the conversation changed since: read again.
    Stale,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::Memory, Source::Store, Source::Stale];

    pub fn as_str(self) -> &'static str {
        match self {
            Source::Memory => "memory",
            Source::Store => "store",
            Source::Stale => "stale",
        }
    }
}

impl Default for ContextMemory {
    fn default() -> Self {
        Self { kept: Mutex::new(Shelf { map: LruCache::new_unbounded(), weight: 0 }), counts: Default::default() }
    }
}

impl ContextMemory {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shelf> {
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes what is kept of `user`'s `thread`: the materials and the stamp they are the state of. A turn takes
    /// them for itself (one turn at a time holds a conversation) and keeps them again when it ends.
    pub fn take(&self, user: Uuid, thread: Uuid) -> Option<(Materials, ThreadStamp)> {
        let mut kept = self.lock();
        if kept.map.get(&thread)?.user != user {
            return None;
        }
        let entry = kept.map.remove(&thread)?;
        kept.weight -= entry.weight;
        Some((entry.materials, entry.stamp))
    }

    /// The author of `thread`, when something of it is kept (a conversation's author never changes).
    pub fn author_of(&self, thread: Uuid) -> Option<Uuid> {
        self.lock().map.peek(&thread).map(|entry| entry.user)
    }

    /// Lets go of what is kept of `thread`.
    pub fn forget(&self, thread: Uuid) {
        let mut kept = self.lock();
        if let Some(entry) = kept.map.remove(&thread) {
            kept.weight -= entry.weight;
        }
    }

    /// Keeps `materials`, the state of `user`'s `thread` at `stamp`; the conversations used longest ago go to
    /// make room. A conversation too large to keep is not kept.
    pub fn keep(&self, user: Uuid, thread: Uuid, stamp: ThreadStamp, materials: Materials) {
        let weight = materials.weight();
        let mut kept = self.lock();
        if let Some(old) = kept.map.remove(&thread) {
            kept.weight -= old.weight;
        }
        if weight > LARGEST {
            return;
        }
        while kept.weight + weight > CAPACITY {
            match kept.map.remove_lru() {
                Some((_, old)) => kept.weight -= old.weight,
                None => break,
            }
        }
        kept.weight += weight;
        kept.map.insert(thread, Entry { user, stamp, materials, weight });
    }

    /// Counts a context built.
    pub fn count(&self, source: Source) {
        self.counts[source as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How many contexts came from `source` so far.
    pub fn counted(&self, source: Source) -> u64 {
        self.counts[source as usize].load(Ordering::Relaxed)
    }
}

/// What a turn's context was built from.
#[derive(Debug)]
pub struct Basis {
    pub materials: Materials,
    /// The thread's stamp the materials are the state of (see [`super::context::Loaded`]).
    pub stamp: ThreadStamp,
    /// Whether they were kept in memory rather than read.
    pub from_memory: bool,
}

impl Basis {
    /// Whether the materials are the thread as its turn's start found it (`before`: its stamp right before
    /// the start wrote; `None` when unknown), `question` being the message the start saved: read before the
    /// start or right after it.
    pub fn current(&self, before: Option<ThreadStamp>, question: Option<&Message>) -> bool {
        let Some(before) = before else { return false };
        // The question follows what the start found (a start that found another thread saved it elsewhere).
        let followed = question.is_none_or(|q| q.seq == before.last_seq + 1 && q.parent_id == before.active);
        followed && (self.stamp == before || question.is_some_and(|q| self.stamp == after_saving(before, q)))
    }

    /// The materials to keep once the turn ended with `answer` saved after `question` and the thread's stamp
    /// at `ended`: `None` unless they were the thread's state at the start (`before`) and nothing but the
    /// question and the answer was written to it since (the end's stamp is what those two alone make it).
    pub fn after_turn(
        self,
        before: Option<ThreadStamp>,
        question: &Message,
        answer: &Message,
        ended: ThreadStamp,
    ) -> Option<(Materials, ThreadStamp)> {
        if !self.current(before, Some(question)) {
            return None;
        }
        let started = before.map(|before| after_saving(before, question))?;
        // The answer became the active message when first saved, and was finished by the end's save: two
        // changes counted.
        let expected = ThreadStamp { version: started.version + 2, last_seq: answer.seq, active: Some(answer.id) };
        let only_these = answer.seq == question.seq + 1 && answer.parent_id == Some(question.id) && ended == expected;
        only_these.then(|| (self.materials.with_turn(question, answer), ended))
    }
}

/// A thread's stamp once `question` was saved in it, `before` being its stamp right before (a new message
/// raises the last number and becomes the active one, which counts one change).
pub fn after_saving(before: ThreadStamp, question: &Message) -> ThreadStamp {
    ThreadStamp { version: before.version + 1, last_seq: question.seq, active: Some(question.id) }
}
